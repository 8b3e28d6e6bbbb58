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
  return static_cast<int>(std::clamp<int64_t>((int64_t{2} << 30) / bytes, 5, 100));
}

const char* Name(caffe::MpiCommunicator::AllReduceAlgorithm algorithm) {
  return algorithm == caffe::MpiCommunicator::RING_P2P ? "RING_P2P" : "MPI_NATIVE";
}

struct Row {
  int64_t bytes;
  double median_seconds;
  int reps;
};

// Times every size with every algorithm. Repetitions of the algorithms alternate, so
// that load from other processes on a shared machine hits them alike.
std::vector<std::vector<Row>> Measure(
    caffe::MpiCommunicator* comm,
    const std::vector<caffe::MpiCommunicator::AllReduceAlgorithm>& algorithms,
    int64_t min_bytes, int64_t max_bytes) {
  std::vector<std::vector<Row>> rows(algorithms.size());
  for (int64_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
    // Zeros stay zeros: no denormals or overflow, whatever the repetition count.
    std::vector<float> data(count, 0.f);
    const int reps = Repetitions(bytes);
    std::vector<std::vector<double>> times(algorithms.size());
    for (size_t a = 0; a < algorithms.size(); ++a) {
      comm->set_allreduce_algorithm(algorithms[a]);
      comm->AllReduceSum(data.data(), count);  // warm-up: connections, page faults
    }
    for (int rep = 0; rep < reps; ++rep) {
      for (size_t a = 0; a < algorithms.size(); ++a) {
        comm->set_allreduce_algorithm(algorithms[a]);
        MPI_Barrier(MPI_COMM_WORLD);
        const double start = MPI_Wtime();
        comm->AllReduceSum(data.data(), count);
        double elapsed = MPI_Wtime() - start;
        MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        times[a].push_back(elapsed);
      }
    }
    for (size_t a = 0; a < algorithms.size(); ++a) {
      std::nth_element(times[a].begin(), times[a].begin() + reps / 2, times[a].end());
      rows[a].push_back({bytes, times[a][reps / 2], reps});
    }
  }
  return rows;
}

void PrintTable(const char* name, const std::string& label, int ranks,
                const std::vector<Row>& rows) {
  std::printf("\n### %s%s, %d ranks\n\n", name, label.empty() ? "" : (" " + label).c_str(),
              ranks);
  std::printf("| size | time (median) | algbw (GB/s) | busbw (GB/s) | reps |\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  for (const Row& row : rows) {
    const double algbw = row.bytes / row.median_seconds / 1e9;
    const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
    std::printf("| %s | %s | %.2f | %.2f | %d |\n", FormatBytes(row.bytes).c_str(),
                FormatSeconds(row.median_seconds).c_str(), algbw, busbw, row.reps);
  }
  std::fflush(stdout);
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
  std::vector<caffe::MpiCommunicator::AllReduceAlgorithm> algorithms;
  if (algo != "native") algorithms.push_back(caffe::MpiCommunicator::RING_P2P);
  if (algo != "ring") algorithms.push_back(caffe::MpiCommunicator::MPI_NATIVE);
  const auto rows = Measure(&comm, algorithms, min_bytes, max_bytes);
  if (comm.rank() == 0) {
    for (size_t a = 0; a < algorithms.size(); ++a) {
      PrintTable(Name(algorithms[a]), label, comm.size(), rows[a]);
    }
  }
  return 0;
}

#else  // !USE_MPI

int main() {
  std::fprintf(stderr, "allreduce_bench: built without MPI (USE_MPI=OFF)\n");
  return 1;
}

#endif  // USE_MPI
