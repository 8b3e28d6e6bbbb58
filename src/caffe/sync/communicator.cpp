// Backend-independent parts of the communicator: stats totals, launcher detection and
// the factory that picks MPI or the single-rank communicator.
#include "caffe/sync/communicator.hpp"

#include <cstdlib>

#include <glog/logging.h>

#include "caffe/sync/local_communicator.hpp"
#include "caffe/util/error.hpp"
#ifdef USE_MPI
#include "caffe/sync/mpi_communicator.hpp"
#endif

namespace caffe {

int64_t CommStats::total_bytes_sent() const {
  int64_t total = 0;
  for (const auto& [op, entry] : by_op) total += entry.bytes_sent;
  return total;
}

double CommStats::total_seconds() const {
  double total = 0;
  for (const auto& [op, entry] : by_op) total += entry.seconds;
  return total;
}

bool Communicator::AnyTrueAfterRootWork(bool flag, const std::function<bool()>& work) {
  if (rank() == 0) flag = work() || flag;
  return AnyTrue(flag);
}

void Communicator::AllReduceSumHalf(float*, int64_t, float*) {
  ErrorBuilder() << "sync_param.value_encoding: FP16 is not available over the " << backend()
                 << " communicator (it needs the MPI path: host buffers)";
}

void Communicator::AllReduceSumInt8(float*, int64_t, float*) {
  ErrorBuilder() << "sync_param.value_encoding: INT8 is not available over the " << backend()
                 << " communicator (it needs the MPI path: host buffers)";
}

namespace {

// The integer value of an environment variable, or 0 when unset or not a number.
long EnvInt(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return 0;
  char* end = nullptr;
  long parsed = std::strtol(value, &end, 10);
  return *end == '\0' ? parsed : 0;
}

}  // namespace

bool LaunchedAsMultipleRanks() {
  // World-size variables of the common launchers: Open MPI's mpirun, MPICH/Intel MPI
  // (Hydra, PMI-1/2), MVAPICH, and Slurm's srun.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE",
                           "SLURM_STEP_NUM_TASKS"}) {
    if (EnvInt(name) > 1) return true;
  }
  // A PMIx launch (srun --mpi=pmix, prterun) gives ranks but no size variable; a
  // non-zero rank proves there are several.
  if (EnvInt("PMIX_RANK") > 0) return true;
  // SLURM_NTASKS alone is also set in an sbatch script that runs one process, so it
  // counts only inside a job step (srun).
  if (std::getenv("SLURM_STEP_ID") != nullptr && EnvInt("SLURM_NTASKS") > 1) return true;
  return false;
}

std::shared_ptr<Communicator> CreateCommunicator() {
#ifdef USE_MPI
  if (LaunchedAsMultipleRanks()) {
    auto mpi = std::make_shared<MpiCommunicator>();
    if (mpi->size() > 1) return mpi;
    // Typically a binary linked against one MPI started by another MPI's launcher:
    // every process would train alone, so say so loudly.
    LOG(WARNING) << "Launched as one of several ranks, but MPI reports a world of 1: "
                    "is mpirun from the MPI this binary was built with? Training alone.";
  }
#else
  if (LaunchedAsMultipleRanks()) {
    LOG(WARNING) << "Launched as one of several ranks, but built without MPI "
                    "(USE_MPI=OFF): this process trains alone.";
  }
#endif
  return std::make_shared<LocalCommunicator>();
}

}  // namespace caffe
