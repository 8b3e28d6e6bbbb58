// All-reduce bandwidth of MpiCommunicator's two algorithms (our ring on MPI
// point-to-point, MPI's own MPI_Allreduce) on float buffers of 4 KB .. 256 MB.
// Rank 0 prints one markdown table per algorithm: median time over repetitions (each
// repetition timed by its slowest rank), algbw = bytes / time, busbw = algbw x
// 2 (N-1)/N, the per-link rate a ring needs (comparable across rank counts).
//
//   mpirun -np 4 build/bench/allreduce_bench [--algo ring|native|both] [--label TEXT]
//          [--min-bytes 4096] [--max-bytes 268435456]
// bench/run_allreduce_bench.sh runs the configurations of bench/README.md.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#ifdef USE_MPI
#include <mpi.h>

#include <algorithm>
#include <vector>

#include "caffe/sync/mpi_communicator.hpp"

namespace {

std::string FormatBytes(int64_t bytes) {
  if (bytes >= (1 << 20)) return std::to_string(bytes >> 20) + " MB";
  return std::to_string(bytes >> 10) + " KB";
}

std::string FormatSeconds(double seconds) {
  char text[32];
  if (seconds < 1e-3) {
    std::snprintf(text, sizeof(text), "%.1f us", seconds * 1e6);
  } else {
    std::snprintf(text, sizeof(text), "%.2f ms", seconds * 1e3);
  }
  return text;
}

// Enough repetitions for a stable median on small buffers, few on large ones.
int Repetitions(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>((int64_t{512} << 20) / bytes, 3, 50));
}

void RunTable(caffe::MpiCommunicator* comm, caffe::MpiCommunicator::AllReduceAlgorithm algorithm,
              const std::string& label, int64_t min_bytes, int64_t max_bytes) {
  comm->set_allreduce_algorithm(algorithm);
  const int n = comm->size();
  const char* name = algorithm == caffe::MpiCommunicator::RING_P2P ? "RING_P2P" : "MPI_NATIVE";
  if (comm->rank() == 0) {
    std::printf("\n### %s%s, %d ranks\n\n", name, label.empty() ? "" : (" " + label).c_str(), n);
    std::printf("| size | time (median) | algbw (GB/s) | busbw (GB/s) | reps |\n");
    std::printf("|---:|---:|---:|---:|---:|\n");
    std::fflush(stdout);
  }
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    // Zeros stay zeros: no denormals or overflow, whatever the repetition count.
    std::vector<float> data(count, 0.f);
    comm->AllReduceSum(data.data(), count);  // warm-up: connections, page faults
    const int reps = Repetitions(bytes);
    std::vector<double> times;
    for (int rep = 0; rep < reps; ++rep) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      comm->AllReduceSum(data.data(), count);
      double elapsed = MPI_Wtime() - start;
      MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      times.push_back(elapsed);
    }
    std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
    const double median = times[reps / 2];
    const double algbw = bytes / median / 1e9;
    const double busbw = algbw * 2.0 * (n - 1) / n;
    if (comm->rank() == 0) {
      std::printf("| %s | %s | %.2f | %.2f | %d |\n", FormatBytes(bytes).c_str(),
                  FormatSeconds(median).c_str(), algbw, busbw, reps);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string algo = "both", label;
  int64_t min_bytes = 4 << 10, max_bytes = int64_t{256} << 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--algo" && has_value) {
      algo = argv[++i];
    } else if (arg == "--label" && has_value) {
      label = argv[++i];
    } else if (arg == "--min-bytes" && has_value) {
      min_bytes = std::atoll(argv[++i]);
    } else if (arg == "--max-bytes" && has_value) {
      max_bytes = std::atoll(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--algo ring|native|both] [--label TEXT] [--min-bytes B] "
                   "[--max-bytes B]\n",
                   argv[0]);
      return 2;
    }
  }
  if ((algo != "ring" && algo != "native" && algo != "both") || min_bytes < 4 ||
      max_bytes < min_bytes) {
    std::fprintf(stderr, "bad arguments: --algo %s, bytes %lld..%lld\n", algo.c_str(),
                 static_cast<long long>(min_bytes), static_cast<long long>(max_bytes));
    return 2;
  }
  caffe::MpiCommunicator comm;
  if (comm.size() < 2 && comm.rank() == 0) {
    std::fprintf(stderr, "warning: one rank only; run under mpirun -np 2 or more\n");
  }
  if (algo != "native") RunTable(&comm, caffe::MpiCommunicator::RING_P2P, label, min_bytes, max_bytes);
  if (algo != "ring") RunTable(&comm, caffe::MpiCommunicator::MPI_NATIVE, label, min_bytes, max_bytes);
  return 0;
}

#else  // !USE_MPI

int main() {
  std::fprintf(stderr, "allreduce_bench: built without MPI (USE_MPI=OFF)\n");
  return 1;
}

#endif  // USE_MPI
