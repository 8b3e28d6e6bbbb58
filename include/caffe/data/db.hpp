// A small key/value database abstraction for Datum records: a DB opens a source,
// a Cursor walks its records in key order, a Transaction batches writes. LMDB is the
// one backend (db_lmdb.hpp); the interface keeps layers and tools independent of it.
#ifndef CAFFE_DATA_DB_HPP_
#define CAFFE_DATA_DB_HPP_

#include <memory>
#include <string>

#include "caffe/common.hpp"
#include "caffe/proto/caffe.pb.h"

namespace caffe {
namespace db {

// READ: existing database, read-only. WRITE: existing database, read-write.
// NEW: create a database; the path must not exist yet.
enum class OpenMode { READ, WRITE, NEW };

class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual void SeekToFirst() = 0;
  virtual void Next() = 0;
  // Valid only while valid() is true; the strings are copies.
  virtual std::string key() const = 0;
  virtual std::string value() const = 0;
  virtual bool valid() const = 0;
};

class Transaction {
 public:
  virtual ~Transaction() = default;
  // Buffered until Commit; a transaction is not usable after Commit.
  virtual void Put(const std::string& key, const std::string& value) = 0;
  virtual void Commit() = 0;
};

class DB {
 public:
  virtual ~DB() = default;
  // Throws caffe::Error naming `source` when it cannot be opened.
  virtual void Open(const std::string& source, OpenMode mode) = 0;
  // Cursors and transactions must be destroyed before Close (or the DB's destruction).
  virtual void Close() = 0;
  virtual std::unique_ptr<Cursor> NewCursor() = 0;
  virtual std::unique_ptr<Transaction> NewTransaction() = 0;
};

// LMDB only; LEVELDB (the proto's default) is a caffe::Error asking for LMDB.
std::unique_ptr<DB> GetDB(DataParameter::DB backend);
// By name, as the tools' -backend flag spells it: "lmdb" (or "leveldb", rejected).
std::unique_ptr<DB> GetDB(const std::string& backend);

}  // namespace db
}  // namespace caffe

#endif  // CAFFE_DATA_DB_HPP_
