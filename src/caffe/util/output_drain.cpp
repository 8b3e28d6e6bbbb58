#include "caffe/util/output_drain.hpp"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <thread>

namespace caffe {

bool WaitUntilOutputIsRead(int fd, std::chrono::milliseconds limit) {
  struct stat info;
  if (fstat(fd, &info) != 0) return true;
  // A pipe answers FIONREAD with the bytes still in it, from either end; a socket
  // answers SIOCOUTQ with what it sent that the peer has not yet taken.
  unsigned long request;
  if (S_ISFIFO(info.st_mode)) {
    request = FIONREAD;
  } else if (S_ISSOCK(info.st_mode)) {
    request = SIOCOUTQ;
  } else {
    return true;
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int unread = 0;
    if (ioctl(fd, request, &unread) != 0) return false;
    if (unread == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace caffe
