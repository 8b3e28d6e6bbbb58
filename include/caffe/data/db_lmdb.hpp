// LMDB backend of the DB interface. Writes are buffered per transaction and the map
// grows (doubling) whenever a commit finds it full, so callers never size it.
#ifndef CAFFE_DATA_DB_LMDB_HPP_
#define CAFFE_DATA_DB_LMDB_HPP_

#include <lmdb.h>

#include <string>
#include <utility>
#include <vector>

#include "caffe/data/db.hpp"

namespace caffe {
namespace db {

class LMDBCursor : public Cursor {
 public:
  // Takes ownership of a read-only transaction and a cursor inside it.
  LMDBCursor(MDB_txn* txn, MDB_cursor* cursor, std::string source);
  ~LMDBCursor() override;
  void SeekToFirst() override { Seek(MDB_FIRST); }
  void Next() override { Seek(MDB_NEXT); }
  std::string key() const override {
    return std::string(static_cast<const char*>(key_.mv_data), key_.mv_size);
  }
  std::string value() const override {
    return std::string(static_cast<const char*>(value_.mv_data), value_.mv_size);
  }
  bool valid() const override { return valid_; }

 private:
  void Seek(MDB_cursor_op op);

  MDB_txn* txn_;
  MDB_cursor* cursor_;
  std::string source_;
  MDB_val key_{0, nullptr};
  MDB_val value_{0, nullptr};
  bool valid_ = false;
};

class LMDB;

class LMDBTransaction : public Transaction {
 public:
  explicit LMDBTransaction(LMDB* db) : db_(db) {}
  void Put(const std::string& key, const std::string& value) override;
  void Commit() override;

 private:
  LMDB* db_;
  std::vector<std::pair<std::string, std::string>> pending_;
};

class LMDB : public DB {
 public:
  // The map starts at `initial_map_size` bytes and doubles on MDB_MAP_FULL.
  explicit LMDB(size_t initial_map_size = size_t{1} << 26)
      : initial_map_size_(initial_map_size) {}
  ~LMDB() override { Close(); }
  void Open(const std::string& source, OpenMode mode) override;
  void Close() override;
  std::unique_ptr<Cursor> NewCursor() override;
  std::unique_ptr<Transaction> NewTransaction() override;

  const std::string& source() const { return source_; }
  size_t map_size() const;

 private:
  friend class LMDBTransaction;
  // Writes all pairs in one LMDB transaction, growing the map until they fit.
  void WriteAll(const std::vector<std::pair<std::string, std::string>>& pairs);
  void DoubleMapSize();

  size_t initial_map_size_;
  MDB_env* env_ = nullptr;
  MDB_dbi dbi_ = 0;
  std::string source_;
  bool read_only_ = true;
};

}  // namespace db
}  // namespace caffe

#endif  // CAFFE_DATA_DB_LMDB_HPP_
