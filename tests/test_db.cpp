#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "caffe/data/db.hpp"
#include "caffe/data/db_lmdb.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

std::string Key(int i) {
  char key[16];
  std::snprintf(key, sizeof(key), "%08d", i);
  return key;
}

TEST(DBTest, WriteThenReadInKeyOrder) {
  const std::string path = MakeTempDir("db") + "/lmdb";
  auto db = db::GetDB(DataParameter::LMDB);
  db->Open(path, db::OpenMode::NEW);
  auto txn = db->NewTransaction();
  // Inserted out of order: the cursor must still return key order.
  for (int i : {3, 0, 2, 1}) txn->Put(Key(i), "value" + std::to_string(i));
  txn->Commit();
  db->Close();

  db->Open(path, db::OpenMode::READ);
  auto cursor = db->NewCursor();
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(cursor->valid());
    EXPECT_EQ(cursor->key(), Key(i));
    EXPECT_EQ(cursor->value(), "value" + std::to_string(i));
    cursor->Next();
  }
  EXPECT_FALSE(cursor->valid());
  cursor->SeekToFirst();
  ASSERT_TRUE(cursor->valid());
  EXPECT_EQ(cursor->key(), Key(0));
}

TEST(DBTest, BinaryValuesSurviveExactly) {
  const std::string path = MakeTempDir("db") + "/lmdb";
  std::string value;
  for (int i = 0; i < 256; ++i) value.push_back(static_cast<char>(i));
  db::LMDB db;
  db.Open(path, db::OpenMode::NEW);
  auto txn = db.NewTransaction();
  txn->Put("k", value);
  txn->Commit();
  auto cursor = db.NewCursor();
  ASSERT_TRUE(cursor->valid());
  EXPECT_EQ(cursor->value(), value);
}

TEST(DBTest, MapGrowsWhenFull) {
  const std::string path = MakeTempDir("db") + "/lmdb";
  db::LMDB db(size_t{1} << 20);  // 1 MiB, far too small for what follows
  db.Open(path, db::OpenMode::NEW);
  const std::string value(64 * 1024, 'x');
  for (int batch = 0; batch < 2; ++batch) {
    auto txn = db.NewTransaction();
    for (int i = 0; i < 32; ++i) txn->Put(Key(batch * 32 + i), value);
    txn->Commit();
  }
  EXPECT_GE(db.map_size(), size_t{4} << 20);
  db.Close();
  db.Open(path, db::OpenMode::READ);
  int count = 0;
  for (auto cursor = db.NewCursor(); cursor->valid(); cursor->Next()) {
    EXPECT_EQ(cursor->key(), Key(count));
    EXPECT_EQ(cursor->value(), value);
    ++count;
  }
  EXPECT_EQ(count, 64);
}

TEST(DBTest, WriteModeAppendsToExisting) {
  const std::string path = MakeTempDir("db") + "/lmdb";
  {
    db::LMDB db;
    db.Open(path, db::OpenMode::NEW);
    auto txn = db.NewTransaction();
    txn->Put(Key(0), "a");
    txn->Commit();
  }
  db::LMDB db;
  db.Open(path, db::OpenMode::WRITE);
  auto txn = db.NewTransaction();
  txn->Put(Key(1), "b");
  txn->Commit();
  int count = 0;
  for (auto cursor = db.NewCursor(); cursor->valid(); cursor->Next()) ++count;
  EXPECT_EQ(count, 2);
}

TEST(DBTest, EmptyDatabaseHasNoValidCursor) {
  const std::string path = MakeTempDir("db") + "/lmdb";
  db::LMDB db;
  db.Open(path, db::OpenMode::NEW);
  db.Close();
  db.Open(path, db::OpenMode::READ);
  EXPECT_FALSE(db.NewCursor()->valid());
}

TEST(DBTest, MissingSourceNamesThePath) {
  const std::string path = MakeTempDir("db") + "/does_not_exist";
  auto db = db::GetDB(DataParameter::LMDB);
  EXPECT_EQ(ErrorOf([&] { db->Open(path, db::OpenMode::READ); }),
            "data source '" + path + "': cannot open LMDB (No such file or directory)");
}

TEST(DBTest, NonLMDBSourceIsAnError) {
  const std::string dir = MakeTempDir("db");
  // A folder with a data.mdb that is not an LMDB file.
  std::ofstream(dir + "/data.mdb") << std::string(8192, 'z');
  const std::string message = ErrorOf([&] {
    db::LMDB db;
    db.Open(dir, db::OpenMode::READ);
  });
  EXPECT_NE(message.find("data source '" + dir + "': cannot open LMDB ("), std::string::npos)
      << message;
  // A plain file where a folder is expected.
  const std::string file = dir + "/plain.txt";
  std::ofstream(file) << "not a database";
  const std::string file_message = ErrorOf([&] {
    db::LMDB db;
    db.Open(file, db::OpenMode::READ);
  });
  EXPECT_NE(file_message.find("data source '" + file + "': cannot open LMDB ("),
            std::string::npos)
      << file_message;
}

TEST(DBTest, NewRefusesAnExistingPath) {
  const std::string path = MakeTempDir("db");
  db::LMDB db;
  EXPECT_EQ(ErrorOf([&] { db.Open(path, db::OpenMode::NEW); }),
            "data source '" + path + "': cannot create LMDB (File exists)");
}

TEST(DBTest, ReadOnlyRefusesWrites) {
  const std::string path = MakeTempDir("db") + "/lmdb";
  db::LMDB db;
  db.Open(path, db::OpenMode::NEW);
  db.Close();
  db.Open(path, db::OpenMode::READ);
  EXPECT_THROW(db.NewTransaction(), Error);
}

TEST(DBTest, LevelDBIsRejected) {
  EXPECT_EQ(ErrorOf([] { db::GetDB(DataParameter::LEVELDB); }),
            "LevelDB is not supported; convert to LMDB");
  EXPECT_EQ(ErrorOf([] { db::GetDB("leveldb"); }), "LevelDB is not supported; convert to LMDB");
  EXPECT_NE(ErrorOf([] { db::GetDB("rocksdb"); }).find("unknown database backend 'rocksdb'"),
            std::string::npos);
  EXPECT_NE(db::GetDB("lmdb"), nullptr);
}

}  // namespace
}  // namespace caffe
