#include <gtest/gtest.h>
#include <glog/logging.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = false;
  FLAGS_minloglevel = 2;  // keep test output to gtest's own
  return RUN_ALL_TESTS();
}
