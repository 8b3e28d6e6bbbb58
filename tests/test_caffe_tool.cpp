// The `caffe` binary as users run it: usage errors and bad input end in one `error:`
// line and exit status 1; a tiny net trains, snapshots, resumes and is scored.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <sstream>
#include <vector>

#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const string kCaffe = string(CAFFE_BINARY_DIR) + "/tools/caffe";

int RunCaffe(const string& args, string* out) { return RunCommand(kCaffe + " " + args, out); }

// The last non-empty line of the output.
string LastLine(const string& out) {
  size_t end = out.find_last_not_of('\n');
  if (end == string::npos) return "";
  size_t start = out.rfind('\n', end);
  return out.substr(start == string::npos ? 0 : start + 1, end - (start == string::npos ? 0 : start + 1) + 1);
}

const char* kNet = R"(
name: 'tiny'
layer { name: 'data' type: 'DummyData' top: 'x' top: 'y'
        dummy_data_param { shape { dim: 8 dim: 4 } shape { dim: 8 dim: 2 }
                           data_filler { type: 'gaussian' std: 1 } } }
layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p'
        inner_product_param { num_output: 2 weight_filler { type: 'xavier' } } }
layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' }
)";

class CaffeToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("tool");
    WriteFileAtomically(dir_ + "/net.prototxt", kNet);
    WriteFileAtomically(dir_ + "/solver.prototxt",
                        "net: '" + dir_ + "/net.prototxt'\nbase_lr: 0.01\nlr_policy: 'fixed'\n"
                        "max_iter: 20\ndisplay: 10\nsnapshot: 10\nsnapshot_prefix: '" + dir_ +
                        "/snap/tiny'\nrandom_seed: 1\nsolver_mode: CPU\n");
  }
  string dir_;
};

TEST_F(CaffeToolTest, TrainWithoutSolverPrintsUsageAndOneErrorLine) {
  string out;
  EXPECT_EQ(RunCaffe("train", &out), 1);
  EXPECT_NE(out.find("usage: caffe <command> <args>"), string::npos) << out;
  EXPECT_EQ(LastLine(out), "error: train needs -solver=FILE (see caffe -help)") << out;
}

TEST_F(CaffeToolTest, UnknownCommandAndBadFlagsAreErrors) {
  string out;
  EXPECT_EQ(RunCaffe("fly", &out), 1);
  EXPECT_EQ(LastLine(out), "error: unknown command 'fly' (expected train, test, time or device_query)");
  EXPECT_EQ(RunCaffe("train -solver " + dir_ + "/solver.prototxt -weights a -snapshot b", &out), 1);
  EXPECT_NE(LastLine(out).find("error: give -weights or -snapshot, not both"), string::npos) << out;
  EXPECT_EQ(RunCaffe("train -solver " + dir_ + "/solver.prototxt -gpu 3", &out), 1);
  EXPECT_NE(LastLine(out).find("error: -gpu 3: unknown GPU id"), string::npos) << out;
  EXPECT_EQ(RunCaffe("train -solver " + dir_ + "/solver.prototxt -sigint_effect maybe", &out), 1);
  EXPECT_EQ(LastLine(out), "error: -sigint_effect: expected stop, snapshot or none, found 'maybe'");
  EXPECT_EQ(RunCaffe("time -model " + dir_ + "/net.prototxt -iterations 1 -engine FAST", &out), 1);
  EXPECT_EQ(LastLine(out), "error: -engine: expected DEFAULT, CAFFE, DNNL or CUDNN, found 'FAST'");
  EXPECT_EQ(RunCaffe("time -model " + dir_ + "/net.prototxt -iterations 1 -engine CAFFE", &out), 0)
      << out;
  // `caffe time` ends with the process's peak resident memory, a positive figure.
  const size_t peak = out.find("Peak resident memory: ");
  ASSERT_NE(peak, string::npos) << out;
  EXPECT_GT(std::stod(out.substr(peak + 22)), 0.0) << out;
  EXPECT_EQ(RunCaffe("train -solver " + dir_ + "/missing.prototxt", &out), 1);
  EXPECT_NE(LastLine(out).find("missing.prototxt: cannot open file"), string::npos) << out;
  EXPECT_EQ(out.find("Check failure"), string::npos) << "no abort trace expected: " << out;
}

TEST_F(CaffeToolTest, PeakMemoryIsTheToolsOwnNotItsParents) {
  // This process holds 512 MB when it starts the tool itself (fork and exec, no shell
  // between). ru_maxrss survives that on Linux, so a tool reporting it would print at
  // least 512 MB for a tiny net.
  std::vector<char> ballast(size_t{512} << 20);
  for (size_t i = 0; i < ballast.size(); i += 4096) ballast[i] = 1;
  const string log = dir_ + "/time.log", model = dir_ + "/net.prototxt";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(kCaffe.c_str(), kCaffe.c_str(), "time", "-model", model.c_str(), "-iterations", "1",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const string out = ReadFileToString(log);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  const size_t peak = out.find("Peak resident memory: ");
  ASSERT_NE(peak, string::npos) << out;
  const double megabytes = std::stod(out.substr(peak + 22));
  EXPECT_GT(megabytes, 0.0) << out;
  EXPECT_LT(megabytes, 400.0) << out;
  EXPECT_EQ(ballast[4096], 1);
}

TEST_F(CaffeToolTest, BadSyncSettingsAreOneLineErrors) {
  string out;
  const string solver = ReadFileToString(dir_ + "/solver.prototxt");
  WriteFileAtomically(dir_ + "/dense2.prototxt", solver + "sync_param { method: IWP density: 2 }\n");
  EXPECT_EQ(RunCaffe("train -solver " + dir_ + "/dense2.prototxt", &out), 1);
  EXPECT_EQ(LastLine(out), "error: " + dir_ + "/dense2.prototxt: sync_param.density must lie in (0, 1], found 2");
  WriteFileAtomically(dir_ + "/method.prototxt", solver + "sync_param { method: SPARSEST }\n");
  EXPECT_EQ(RunCaffe("train -solver " + dir_ + "/method.prototxt", &out), 1);
  EXPECT_NE(LastLine(out).find("error: " + dir_ + "/method.prototxt:10:31: Unknown enumeration value of \"SPARSEST\""), string::npos) << out;
  EXPECT_NE(LastLine(out).find("SPARSEST"), string::npos) << out;
}

TEST_F(CaffeToolTest, TrainSnapshotsResumesAndTests) {
  string out;
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/solver.prototxt", &out), 0) << out;
  EXPECT_NE(out.find("Iteration 10"), string::npos) << out;
  EXPECT_NE(out.find(", loss = "), string::npos) << out;
  EXPECT_NE(out.find("Peak resident memory: "), string::npos) << out;
  EXPECT_TRUE(FileExists(dir_ + "/snap/tiny_iter_10.solverstate"));
  EXPECT_TRUE(FileExists(dir_ + "/snap/tiny_iter_20.caffemodel"));
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/solver.prototxt -snapshot " + dir_ +
                    "/snap/tiny_iter_10.solverstate",
                &out),
            0)
      << out;
  EXPECT_NE(out.find("Restoring previous solver status"), string::npos) << out;
  ASSERT_EQ(RunCaffe("test -model " + dir_ + "/net.prototxt -weights " + dir_ +
                    "/snap/tiny_iter_20.caffemodel -iterations 3",
                &out),
            0)
      << out;
  EXPECT_NE(out.find("loss = "), string::npos) << out;
  ASSERT_EQ(RunCaffe("time -model " + dir_ + "/net.prototxt -iterations 2", &out), 0) << out;
  EXPECT_NE(out.find("Average Forward-Backward"), string::npos) << out;
  ASSERT_EQ(RunCaffe("device_query", &out), 0) << out;
}

// snapshot_format HDF5 writes BVLC's <prefix>_iter_N.caffemodel.h5; -snapshot resumes
// from the .solverstate that names it, and -weights takes it for testing and
// fine-tuning.
TEST_F(CaffeToolTest, Hdf5SnapshotsResumeTestAndFineTune) {
  WriteFileAtomically(dir_ + "/solver_h5.prototxt",
                      "net: '" + dir_ +
                          "/net.prototxt'\nbase_lr: 0.01\nlr_policy: 'fixed'\n"
                          "max_iter: 20\ndisplay: 10\nsnapshot: 10\nsnapshot_format: HDF5\n"
                          "snapshot_prefix: '" +
                          dir_ +
                          "/h5/tiny'\nrandom_seed: 1\n"
                          "solver_mode: CPU\n");
  string out;
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/solver_h5.prototxt", &out), 0) << out;
  EXPECT_TRUE(FileExists(dir_ + "/h5/tiny_iter_10.caffemodel.h5"));
  EXPECT_TRUE(FileExists(dir_ + "/h5/tiny_iter_20.caffemodel.h5"));
  EXPECT_FALSE(FileExists(dir_ + "/h5/tiny_iter_20.caffemodel"));
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/solver_h5.prototxt -snapshot " + dir_ +
                         "/h5/tiny_iter_10.solverstate",
                     &out),
            0)
      << out;
  EXPECT_NE(out.find("Restoring previous solver status"), string::npos) << out;
  const string weights = dir_ + "/h5/tiny_iter_20.caffemodel.h5";
  ASSERT_EQ(RunCaffe("test -model " + dir_ + "/net.prototxt -weights " + weights + " -iterations 3",
                     &out),
            0)
      << out;
  EXPECT_NE(out.find("loss = "), string::npos) << out;
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/solver.prototxt -weights " + weights, &out), 0)
      << out;
  EXPECT_NE(out.find("Finetuning from " + weights), string::npos) << out;
}

// The Final line's test scores come from the last test pass; when that pass was not
// at the last iteration, the line says which iteration it was.
TEST_F(CaffeToolTest, FinalLineNamesTheIterationOfAnEarlierTest) {
  const string base = "net: '" + dir_ + "/net.prototxt'\nbase_lr: 0.01\nlr_policy: 'fixed'\n"
                      "max_iter: 20\ntest_iter: 2\nrandom_seed: 1\nsolver_mode: CPU\n"
                      "snapshot_after_train: false\n";
  WriteFileAtomically(dir_ + "/tested_at_15.prototxt", base + "test_interval: 15\n");
  WriteFileAtomically(dir_ + "/tested_at_20.prototxt", base + "test_interval: 10\n");
  string out;
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/tested_at_15.prototxt", &out), 0) << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(Final: iteration 20, train loss [0-9.e+-]+, last test at iteration 15, )"
                      R"(test 0/loss = [0-9.e+-]+)")))
      << out;
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/tested_at_20.prototxt", &out), 0) << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(Final: iteration 20, train loss [0-9.e+-]+, test 0/loss = [0-9.e+-]+)")))
      << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(Final: .*; training time [0-9.e+-]+ s \(test passes excluded\))")))
      << out;
}

// -stop_at_test_score ends training at the first test pass that reaches the target,
// and says so; a malformed target or an unknown output is one error line.
TEST_F(CaffeToolTest, StopAtTestScoreEndsAtTheFirstTestThatReachesIt) {
  const string base = "net: '" + dir_ + "/net.prototxt'\nbase_lr: 0.01\nlr_policy: 'fixed'\n"
                      "max_iter: 40\ntest_iter: 2\nrandom_seed: 1\nsolver_mode: CPU\n"
                      "snapshot_after_train: false\ntest_interval: 10\n";
  WriteFileAtomically(dir_ + "/stop.prototxt", base);
  string out;
  // The loss is positive: "loss >= 0" holds at the first test pass after iteration 0
  // (test_initialization tests at 0 too, and stops there).
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/stop.prototxt -stop_at_test_score loss=0", &out), 0)
      << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(Iteration 0, test output loss = [0-9.e+-]+ reached 0 )")))
      << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(Final: iteration 0, )"))) << out;
  // Never reached: training runs to max_iter.
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/stop.prototxt -stop_at_test_score loss=1e30", &out), 0)
      << out;
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(Final: iteration 40, )"))) << out;
  EXPECT_NE(RunCaffe("train -solver " + dir_ + "/stop.prototxt -stop_at_test_score loss", &out), 0);
  EXPECT_NE(out.find("error: -stop_at_test_score loss: expected OUTPUT=VALUE"), string::npos) << out;
  EXPECT_NE(RunCaffe("train -solver " + dir_ + "/stop.prototxt -stop_at_test_score loss=x", &out), 0);
  EXPECT_NE(out.find("'x' is not a number"), string::npos) << out;
  EXPECT_NE(RunCaffe("train -solver " + dir_ + "/stop.prototxt -stop_at_test_score top5=0.5", &out), 0);
  EXPECT_NE(out.find("has no output 'top5'"), string::npos) << out;
}

// BVLC's log tools (tools/extra/parse_log.py, extract_seconds.py) read Caffe's glog
// prefix as month-day without a year, then the time to microseconds, the thread, the
// source file and line; and they look for the Solving, Iteration, lr and Train net
// output lines. Every log line of a training run must keep that shape.
TEST_F(CaffeToolTest, TrainLogKeepsBvlcCaffesLineShape) {
  string out;
  ASSERT_EQ(RunCaffe("train -solver " + dir_ + "/solver.prototxt", &out), 0) << out;
  const std::regex glog_line(R"(^[IWEF]\d)");
  const std::regex bvlc_prefix(R"(^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ [\w.]+:\d+\] )");
  std::istringstream lines(out);
  string line;
  int checked = 0;
  while (std::getline(lines, line)) {
    if (!std::regex_search(line, glog_line)) continue;
    EXPECT_TRUE(std::regex_search(line, bvlc_prefix)) << "not Caffe's line prefix: " << line;
    ++checked;
  }
  EXPECT_GT(checked, 10) << out;
  for (const char* pattern : {R"(\] Solving )", R"(\] Iteration 10, lr = [0-9.e-]+)",
                              R"(Train net output #0: loss = [0-9.e+-]+)"}) {
    EXPECT_TRUE(std::regex_search(out, std::regex(pattern))) << pattern << "\n" << out;
  }
}

}  // namespace
}  // namespace caffe
