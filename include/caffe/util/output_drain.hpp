#ifndef CAFFE_UTIL_OUTPUT_DRAIN_HPP_
#define CAFFE_UTIL_OUTPUT_DRAIN_HPP_

#include <chrono>

namespace caffe {

// Waits until whatever reads file descriptor `fd` has taken every byte written to it,
// or until `limit` has passed. Returns true when nothing is left unread (at once when
// `fd` is not a pipe or socket: a file or terminal keeps what was written).
//
// Why: under mpirun a rank's output reaches the user through a pipe that mpirun reads
// on its own schedule. A rank that is about to abort the job waits here so that the
// error line explaining the abort is not lost with the killed process.
bool WaitUntilOutputIsRead(int fd, std::chrono::milliseconds limit);

}  // namespace caffe

#endif  // CAFFE_UTIL_OUTPUT_DRAIN_HPP_
