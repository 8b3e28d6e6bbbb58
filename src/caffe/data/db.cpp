#include "caffe/data/db.hpp"

#include "caffe/data/db_lmdb.hpp"

namespace caffe {
namespace db {

namespace {
[[noreturn]] void RejectLevelDB() { ErrorBuilder() << "LevelDB is not supported; convert to LMDB"; }
}  // namespace

std::unique_ptr<DB> GetDB(DataParameter::DB backend) {
  switch (backend) {
    case DataParameter::LMDB:
      return std::make_unique<LMDB>();
    case DataParameter::LEVELDB:
      RejectLevelDB();
  }
  ErrorBuilder() << "unknown database backend " << static_cast<int>(backend);
}

std::unique_ptr<DB> GetDB(const std::string& backend) {
  if (backend == "lmdb") return std::make_unique<LMDB>();
  if (backend == "leveldb") RejectLevelDB();
  ErrorBuilder() << "unknown database backend '" << backend << "' (expected lmdb)";
}

}  // namespace db
}  // namespace caffe
