#include "caffe/data/db_lmdb.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace caffe {
namespace db {

namespace {

// Every LMDB failure becomes a one-line caffe::Error naming the source.
void Require(int rc, const std::string& source, const char* what) {
  if (rc == MDB_SUCCESS) return;
  ErrorBuilder() << "data source '" << source << "': " << what << " (" << mdb_strerror(rc)
                 << ")";
}

}  // namespace

// ---------------------------------------------------------------- LMDB

void LMDB::Open(const std::string& source, OpenMode mode) {
  Close();
  source_ = source;
  read_only_ = mode == OpenMode::READ;
  if (mode == OpenMode::NEW) {
    if (::mkdir(source.c_str(), 0755) != 0) {
      ErrorBuilder() << "data source '" << source << "': cannot create LMDB ("
                     << std::strerror(errno) << ")";
    }
  }
  Require(mdb_env_create(&env_), source, "cannot create LMDB environment");
  unsigned int flags = 0;
  if (read_only_) {
    // NOTLS: a prefetch thread reads through a transaction begun on another thread.
    flags = MDB_RDONLY | MDB_NOTLS;
  } else {
    Require(mdb_env_set_mapsize(env_, initial_map_size_), source, "cannot set LMDB map size");
  }
  const int rc = mdb_env_open(env_, source.c_str(), flags, 0664);
  if (rc != MDB_SUCCESS) {
    mdb_env_close(env_);
    env_ = nullptr;
    Require(rc, source, "cannot open LMDB");
  }
  // The unnamed database is opened once in a short transaction; the handle then
  // stays valid for the environment's lifetime.
  MDB_txn* txn = nullptr;
  Require(mdb_txn_begin(env_, nullptr, read_only_ ? MDB_RDONLY : 0, &txn), source,
          "cannot begin LMDB transaction");
  int open_rc = mdb_dbi_open(txn, nullptr, 0, &dbi_);
  if (open_rc != MDB_SUCCESS) {
    mdb_txn_abort(txn);
    Close();
    Require(open_rc, source, "cannot open LMDB database");
  }
  Require(mdb_txn_commit(txn), source, "cannot commit LMDB transaction");
  LOG(INFO) << "Opened LMDB " << source << (read_only_ ? " (read-only)" : "");
}

void LMDB::Close() {
  if (env_ == nullptr) return;
  mdb_dbi_close(env_, dbi_);
  mdb_env_close(env_);
  env_ = nullptr;
}

size_t LMDB::map_size() const {
  CHECK(env_ != nullptr) << "LMDB is not open";
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  return info.me_mapsize;
}

std::unique_ptr<Cursor> LMDB::NewCursor() {
  CHECK(env_ != nullptr) << "LMDB is not open";
  MDB_txn* txn = nullptr;
  Require(mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn), source_,
          "cannot begin LMDB read transaction");
  MDB_cursor* cursor = nullptr;
  const int rc = mdb_cursor_open(txn, dbi_, &cursor);
  if (rc != MDB_SUCCESS) mdb_txn_abort(txn);
  Require(rc, source_, "cannot open LMDB cursor");
  return std::make_unique<LMDBCursor>(txn, cursor, source_);
}

std::unique_ptr<Transaction> LMDB::NewTransaction() {
  CHECK(env_ != nullptr) << "LMDB is not open";
  CAFFE_REQUIRE(!read_only_) << "data source '" << source_
                             << "': cannot write to an LMDB opened for reading";
  return std::make_unique<LMDBTransaction>(this);
}

void LMDB::DoubleMapSize() {
  const size_t new_size = map_size() * 2;
  Require(mdb_env_set_mapsize(env_, new_size), source_, "cannot grow LMDB map");
  LOG(INFO) << "LMDB " << source_ << ": map grown to " << (new_size >> 20) << " MiB";
}

void LMDB::WriteAll(const std::vector<std::pair<std::string, std::string>>& pairs) {
  while (true) {
    MDB_txn* txn = nullptr;
    Require(mdb_txn_begin(env_, nullptr, 0, &txn), source_, "cannot begin LMDB write transaction");
    int rc = MDB_SUCCESS;
    for (const auto& [key, value] : pairs) {
      MDB_val k{key.size(), const_cast<char*>(key.data())};
      MDB_val v{value.size(), const_cast<char*>(value.data())};
      rc = mdb_put(txn, dbi_, &k, &v, 0);
      if (rc != MDB_SUCCESS) break;
    }
    if (rc == MDB_SUCCESS) {
      rc = mdb_txn_commit(txn);  // the commit itself may also find the map full
    } else {
      mdb_txn_abort(txn);
    }
    if (rc != MDB_MAP_FULL) {
      Require(rc, source_, "cannot write to LMDB");
      return;
    }
    // Nothing of this transaction was kept; retry the whole batch in a larger map.
    DoubleMapSize();
  }
}

// ---------------------------------------------------------------- transaction

void LMDBTransaction::Put(const std::string& key, const std::string& value) {
  pending_.emplace_back(key, value);
}

void LMDBTransaction::Commit() {
  db_->WriteAll(pending_);
  pending_.clear();
}

// ---------------------------------------------------------------- cursor

LMDBCursor::LMDBCursor(MDB_txn* txn, MDB_cursor* cursor, std::string source)
    : txn_(txn), cursor_(cursor), source_(std::move(source)) {
  SeekToFirst();
}

LMDBCursor::~LMDBCursor() {
  mdb_cursor_close(cursor_);
  mdb_txn_abort(txn_);
}

void LMDBCursor::Seek(MDB_cursor_op op) {
  const int rc = mdb_cursor_get(cursor_, &key_, &value_, op);
  if (rc == MDB_NOTFOUND) {
    valid_ = false;
    return;
  }
  Require(rc, source_, "cannot read LMDB record");
  valid_ = true;
}

}  // namespace db
}  // namespace caffe
