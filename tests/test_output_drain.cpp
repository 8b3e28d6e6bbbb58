// WaitUntilOutputIsRead: what lets a rank's last error line reach mpirun's output
// before the rank aborts the job.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "caffe/util/output_drain.hpp"

namespace caffe {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// Both ends of a pipe, or of a connected Unix socket pair; closed when it goes.
struct Pair {
  enum Kind { kPipe, kSocket };
  int read_end = -1;
  int write_end = -1;
  explicit Pair(Kind kind) {
    int fds[2];
    const int status = kind == kPipe ? pipe(fds) : socketpair(AF_UNIX, SOCK_STREAM, 0, fds);
    if (status == 0) {
      read_end = fds[0];
      write_end = fds[1];
    }
  }
  bool opened() const { return read_end >= 0 && write_end >= 0; }
  ~Pair() {
    if (read_end >= 0) close(read_end);
    if (write_end >= 0) close(write_end);
  }
};

void WriteAll(int fd, const char* text, size_t size) {
  ASSERT_EQ(write(fd, text, size), static_cast<ssize_t>(size));
}

void ReadAll(int fd, size_t size) {
  char buffer[64];
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    ASSERT_GT(n, 0);
    got += static_cast<size_t>(n);
  }
}

TEST(OutputDrainTest, AnEmptyPipeIsReadAtOnce) {
  Pair p(Pair::kPipe);
  ASSERT_TRUE(p.opened());
  EXPECT_TRUE(WaitUntilOutputIsRead(p.write_end, milliseconds(0)));
}

TEST(OutputDrainTest, UnreadBytesInAPipeWaitForTheLimit) {
  Pair p(Pair::kPipe);
  ASSERT_TRUE(p.opened());
  WriteAll(p.write_end, "rank 1 gives up\n", 16);
  const auto start = steady_clock::now();
  EXPECT_FALSE(WaitUntilOutputIsRead(p.write_end, milliseconds(100)));
  EXPECT_GE(steady_clock::now() - start, milliseconds(100));
}

TEST(OutputDrainTest, ReturnsOnceTheReaderHasTakenEverything) {
  for (int kind = 0; kind < 2; ++kind) {
    SCOPED_TRACE(kind == 0 ? "pipe" : "socket");
    Pair p(kind == 0 ? Pair::kPipe : Pair::kSocket);
    ASSERT_TRUE(p.opened());
    WriteAll(p.write_end, "rank 1 gives up\n", 16);
    bool reader_done = false;
    std::thread reader([&] {
      std::this_thread::sleep_for(milliseconds(200));
      ReadAll(p.read_end, 16);
      reader_done = true;
    });
    // The wait must outlast the reader's delay and end soon after it reads.
    const auto start = steady_clock::now();
    const bool drained = WaitUntilOutputIsRead(p.write_end, milliseconds(20000));
    const auto waited = steady_clock::now() - start;
    reader.join();
    EXPECT_TRUE(drained);
    EXPECT_TRUE(reader_done);
    EXPECT_GE(waited, milliseconds(150));
  }
}

TEST(OutputDrainTest, AFileNeverWaits) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  std::fputs("kept in the file\n", file);
  std::fflush(file);
  EXPECT_TRUE(WaitUntilOutputIsRead(fileno(file), milliseconds(0)));
  std::fclose(file);
}

}  // namespace
}  // namespace caffe
