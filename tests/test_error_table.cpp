// End-to-end table of bad input (issue 10): every row writes a few files, runs one of
// the real tools (caffe, convert_idx, convert_imageset, compute_image_mean) and checks
// that it ends with exit status 1 and exactly one `error:` line naming the file, line,
// layer or blob, and what was expected and found, with no abort trace. docs/errors.md
// lists the same rows.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "caffe/data/db.hpp"
#include "caffe/net.hpp"
#include "caffe/util/io.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

const string kTools = string(CAFFE_BINARY_DIR) + "/tools";

// "$D" stands for the row's own temporary folder, "$T" for the tools folder.
string Expand(string text, const string& dir) {
  for (size_t pos; (pos = text.find("$D")) != string::npos;) text.replace(pos, 2, dir);
  for (size_t pos; (pos = text.find("$T")) != string::npos;) text.replace(pos, 2, kTools);
  return text;
}

struct Row {
  string name;
  vector<std::pair<string, string>> files;  // relative path, contents ($D expanded)
  string command;                           // $D and $T expanded
  vector<string> expected;                  // substrings of the error line ($D expanded)
  std::function<void(const string& dir)> prepare;  // binary files, databases, snapshots
};

// Line 1-3: a data layer (x: 4x3, y: 4x2); further layers start on line 4.
const string kData =
    "layer { name: 'data' type: 'DummyData' top: 'x' top: 'y'\n"
    "  dummy_data_param { shape { dim: 4 dim: 3 } shape { dim: 4 dim: 2 }\n"
    "                     data_filler { type: 'gaussian' std: 1 } } }\n";

const string kRegression =
    kData +
    "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p'\n"
    "  inner_product_param { num_output: 2 weight_filler { type: 'xavier' } } }\n"
    "layer { name: 'loss' type: 'EuclideanLoss' bottom: 'p' bottom: 'y' top: 'loss' }\n";

// The same net fed 4x5 inputs: its weights have shape 2x5 instead of 2x3.
string WideRegression() {
  string net = kRegression;
  net.replace(net.find("dim: 4 dim: 3"), 13, "dim: 4 dim: 5");
  return net;
}

// Lines 1-7 of a solver for net.prototxt; sync_param on line 8 when appended.
string Solver(const string& net = "net.prototxt", const string& extra = "") {
  return "net: '$D/" + net + "'\nbase_lr: 0.01\nlr_policy: 'fixed'\nmax_iter: 1\n"
         "snapshot_prefix: '$D/snap/" + net.substr(0, net.find('.')) + "'\nrandom_seed: 1\n"
         "solver_mode: CPU\n" + extra;
}

string Replace(string text, const string& from, const string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

const string kCaffe = "$T/caffe";
const string kTime = kCaffe + " time -iterations 1 -model $D/net.prototxt";
const string kTrain = kCaffe + " train -solver $D/solver.prototxt";

void Run(const string& command) {
  string out;
  ASSERT_EQ(RunCommand(command, &out), 0) << command << "\n" << out;
}

// Trains `solver` for one iteration, leaving snap/<net>_iter_1.{caffemodel,solverstate}.
void TrainOnce(const string& dir, const string& solver) {
  Run(Expand(kCaffe, dir) + " train -solver " + dir + "/" + solver);
}

string Key(int i) {
  char key[16];
  std::snprintf(key, sizeof(key), "%08d", i);
  return key;
}

void WriteLmdb(const string& path, const vector<string>& values) {
  auto db = db::GetDB(DataParameter::LMDB);
  db->Open(path, db::OpenMode::NEW);
  auto txn = db->NewTransaction();
  for (size_t i = 0; i < values.size(); ++i) txn->Put(Key(static_cast<int>(i)), values[i]);
  txn->Commit();
}

// A 1 x 2 x 3 uint8 record, or one whose data is `bytes` long whatever its shape says.
string DatumBytes(size_t bytes = 6) {
  Datum datum;
  datum.set_channels(1);
  datum.set_height(2);
  datum.set_width(3);
  datum.set_data(string(bytes, '\x07'));
  datum.set_label(1);
  return datum.SerializeAsString();
}

const string kDataLayerNet =
    "layer { name: 'data' type: 'Data' top: 'x' top: 'y'\n"
    "  data_param { source: '$D/db' batch_size: 2 backend: LMDB } }\n";

// Weights of the 4x5-input net, written by the library itself.
void WriteWideWeights(const string& dir, const string& file) {
  Net net(ParseNet(WideRegression()), std::make_shared<Context>(), "wide");
  NetParameter weights;
  net.ToProto(&weights);
  WriteProtoToBinaryFile(weights, dir + "/" + file);
}

// gtest prints a failing row by its name rather than its bytes.
void PrintTo(const Row& row, std::ostream* os) { *os << row.name; }

vector<Row> Rows() {
  const string kConvInput =
      "layer { name: 'in' type: 'DummyData' top: 'x'\n"
      "  dummy_data_param { shape { dim: 2 dim: 4 dim: 5 dim: 5 } } }\n";
  vector<Row> rows = {
      // ---------------------------------------------------------------- prototxt text
      {"PrototxtSyntaxError",
       {{"net.prototxt", kData + "layer { name: 'ip' type 'InnerProduct' bottom: 'x' }\n"}},
       kTime,
       {"$D/net.prototxt:4:25: ", "Expected \":\", found \"'InnerProduct'\""}},
      {"UnknownField",
       {{"net.prototxt", kData + "layer { name: 'ip' type: 'InnerProduct' typo_field: 1 }\n"}},
       kTime,
       {"$D/net.prototxt:4:", "\"caffe.LayerParameter\" has no field named \"typo_field\""}},
      {"WrongValueTypeInNet",
       {{"net.prototxt", kData + "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p'\n"
                                 "  inner_product_param { num_output: \"ten\" } }\n"}},
       kTime,
       {"$D/net.prototxt:5:", "Expected integer, got: \"ten\""}},
      {"WrongValueTypeInSolver",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Replace(Solver(), "0.01", "abc")}},
       kTrain,
       {"$D/solver.prototxt:2:10: ", "Expected double, got: abc"}},
      {"MissingNetFile",
       {{"solver.prototxt", Solver("absent.prototxt")}},
       kTrain,
       {"$D/absent.prototxt: cannot open file", "No such file"}},
      // ------------------------------------------------------------- net structure
      {"UnknownLayerType",
       {{"net.prototxt", kData + "layer { name: 'odd' type: 'Convolutional' bottom: 'x' top: 'c' }\n"}},
       kTime,
       {"$D/net.prototxt:4: layer 'odd'", "unknown layer type 'Convolutional'",
        "known types: AbsVal"}},
      {"MissingBottom",
       {{"net.prototxt", kData + "layer { name: 'ip' type: 'InnerProduct' bottom: 'nothere' top: 'p'\n"
                                 "  inner_product_param { num_output: 2 } }\n"}},
       kTime,
       {"$D/net.prototxt:4: layer 'ip' (InnerProduct)", "bottom blob 'nothere'",
        "not produced by any earlier layer"}},
      {"DuplicateTop",
       {{"net.prototxt", kData + "layer { name: 'a' type: 'InnerProduct' bottom: 'x' top: 'p'\n"
                                 "  inner_product_param { num_output: 2 } }\n"
                                 "layer { name: 'b' type: 'InnerProduct' bottom: 'x' top: 'p'\n"
                                 "  inner_product_param { num_output: 2 } }\n"}},
       kTime,
       {"$D/net.prototxt:6: layer 'b'", "top blob 'p' is produced by more than one layer"}},
      {"BottomProducedOnlyByALaterLayer",
       {{"net.prototxt", kData + "layer { name: 'a' type: 'InnerProduct' bottom: 'q' top: 'p'\n"
                                 "  inner_product_param { num_output: 2 } }\n"
                                 "layer { name: 'b' type: 'InnerProduct' bottom: 'x' top: 'q'\n"
                                 "  inner_product_param { num_output: 2 } }\n"}},
       kTime,
       {"$D/net.prototxt:4: layer 'a' (InnerProduct)", "bottom blob 'q'",
        "expected a producer above it, found only the later layer 'b'"}},
      // ---------------------------------------------------------------- shapes
      {"ZeroDimension",
       {{"net.prototxt", "layer { name: 'in' type: 'Input' top: 'x'\n"
                         "  input_param { shape { dim: 2 dim: 0 dim: 4 } } }\n"}},
       kTime,
       {"$D/net.prototxt:1: layer 'in' (Input)", "top 'x'", "dimension 1 must be positive, found 0"}},
      {"NegativeDimension",
       {{"net.prototxt", "\nlayer { name: 'in' type: 'DummyData' top: 'x'\n"
                         "  dummy_data_param { shape { dim: 2 dim: -3 } } }\n"}},
       kTime,
       {"$D/net.prototxt:2: layer 'in' (DummyData)", "top 'x'",
        "dimension 1 must be positive, found -3"}},
      {"ZeroNumOutput",
       {{"net.prototxt", kConvInput + "layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c'\n"
                                      "  convolution_param { num_output: 0 kernel_size: 3 } }\n"}},
       kTime,
       {"$D/net.prototxt:3: layer 'conv' (Convolution)", "num_output must be positive, found 0"}},
      {"KernelLargerThanPaddedInput",
       {{"net.prototxt", kConvInput + "layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c'\n"
                                      "  convolution_param { num_output: 4 kernel_size: 9 pad: 1 } }\n"}},
       kTime,
       {"$D/net.prototxt:3: layer 'conv' (Convolution)", "kernel 9 exceeds padded input 7",
        "bottom 'x'"}},
      {"GroupNotDividingChannels",
       {{"net.prototxt", kConvInput + "layer { name: 'conv' type: 'Convolution' bottom: 'x' top: 'c'\n"
                                      "  convolution_param { num_output: 6 kernel_size: 3 group: 3 } }\n"}},
       kTime,
       {"$D/net.prototxt:3: layer 'conv' (Convolution)", "group 3 does not divide 4 input channels"}},
      {"InlineWeightsWithoutValues",
       {{"net.prototxt", kData + "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p'\n"
                                 "  inner_product_param { num_output: 2 }\n"
                                 "  blobs { shape { dim: 2 dim: 7 } } }\n"}},
       kTime,
       {"$D/net.prototxt:4: layer 'ip' (InnerProduct)", "blobs[0]",
        "holds 0 values, its shape 2x7 needs 14"}},
      {"InputSizeMismatchWithInlineWeights",
       {{"net.prototxt", kData + "layer { name: 'ip' type: 'InnerProduct' bottom: 'x' top: 'p'\n"
                                 "  inner_product_param { num_output: 2 bias_term: false }\n"
                                 "  blobs { shape { dim: 2 dim: 7 }\n"
                                 "          data: [1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 5, 6, 7] } }\n"}},
       kTime,
       {"$D/net.prototxt:4: layer 'ip' (InnerProduct)", "weight shape 2x7, expected 2x3"}},
      // ------------------------------------------------------------- weights and snapshots
      {"WeightShapeMismatchOnLoad",
       {{"net.prototxt", kRegression}},
       kCaffe + " test -iterations 1 -model $D/net.prototxt -weights $D/wide.caffemodel",
       {"$D/wide.caffemodel: layer 'ip' blob 0", "the weights have shape 2x5, the net expects 2x3"},
       [](const string& dir) { WriteWideWeights(dir, "wide.caffemodel"); }},
      {"TruncatedCaffemodel",
       {{"net.prototxt", kRegression}},
       kCaffe + " test -iterations 1 -model $D/net.prototxt -weights $D/cut.caffemodel",
       {"$D/cut.caffemodel: not a valid caffe.NetParameter", "truncated or corrupt", "30 bytes"},
       [](const string& dir) {
         WriteWideWeights(dir, "whole.caffemodel");
         WriteFileAtomically(dir + "/cut.caffemodel",
                             ReadFileToString(dir + "/whole.caffemodel").substr(0, 30));
       }},
      {"CorruptSolverstate",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Solver()}},
       kTrain + " -snapshot $D/junk.solverstate",
       {"$D/junk.solverstate: not a valid caffe.SolverState", "truncated or corrupt", "64 bytes"},
       [](const string& dir) { WriteFileAtomically(dir + "/junk.solverstate", string(64, '\xff')); }},
      {"TruncatedSolverstate",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Solver()}},
       kTrain + " -snapshot $D/cut.solverstate",
       {"$D/cut.solverstate: not a valid caffe.SolverState", "truncated or corrupt"},
       [](const string& dir) {
         TrainOnce(dir, "solver.prototxt");
         const string state = ReadFileToString(dir + "/snap/net_iter_1.solverstate");
         WriteFileAtomically(dir + "/cut.solverstate", state.substr(0, state.size() - 3));
       }},
      {"SnapshotOfADifferentNet",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Solver()},
        {"wide.prototxt", WideRegression()}, {"wide_solver.prototxt", Solver("wide.prototxt")}},
       kTrain + " -snapshot $D/snap/wide_iter_1.solverstate",
       {"$D/snap/wide_iter_1.solverstate: restoring its weights",
        "wide_iter_1.caffemodel: layer 'ip' blob 0",
        "the weights have shape 2x5, the net expects 2x3"},
       [](const string& dir) { TrainOnce(dir, "wide_solver.prototxt"); }},
      {"SnapshotOfADifferentSolverType",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Solver()},
        {"adam.prototxt", Solver("net.prototxt", "type: 'Adam'\n")}},
       kTrain + " -snapshot $D/snap/net_iter_1.solverstate",
       {"$D/snap/net_iter_1.solverstate", "holds 4 history blob(s)", "SGD", "needs 2"},
       [](const string& dir) { TrainOnce(dir, "adam.prototxt"); }},
      // ---------------------------------------------------------------- data
      {"MissingLmdb",
       {{"net.prototxt", kDataLayerNet}},
       kTime,
       {"$D/net.prototxt:1: layer 'data' (Data)", "data source '$D/db'",
        "cannot open LMDB (No such file or directory)"}},
      {"RecordIsNotADatum",
       {{"net.prototxt", kDataLayerNet}},
       kTime,
       {"$D/net.prototxt:1: layer 'data' (Data)", "data source '$D/db'",
        "record '00000000' is not a Datum"},
       [](const string& dir) { WriteLmdb(dir + "/db", {"not a datum"}); }},
      {"DatumLengthDisagreesWithShape",
       {{"net.prototxt", kDataLayerNet}},
       kTime,
       {"$D/net.prototxt:1: layer 'data' (Data)", "data source '$D/db'", "record '00000001'",
        "1x2x3", "holds 5 bytes; expected 6"},
       [](const string& dir) { WriteLmdb(dir + "/db", {DatumBytes(), DatumBytes(5)}); }},
      {"MeanFileOfTheWrongShape",
       {{"net.prototxt", "layer { name: 'data' type: 'Data' top: 'x' top: 'y'\n"
                         "  transform_param { mean_file: '$D/mean.binaryproto' }\n"
                         "  data_param { source: '$D/db' batch_size: 2 backend: LMDB } }\n"}},
       kTime,
       {"$D/net.prototxt:1: layer 'data' (Data)", "mean_file '$D/mean.binaryproto'",
        "1x1x3x3", "1x2x3"},
       [](const string& dir) {
         WriteLmdb(dir + "/db", {DatumBytes(), DatumBytes()});
         BlobProto mean;
         for (int d : {1, 1, 3, 3}) mean.mutable_shape()->add_dim(d);
         for (int i = 0; i < 9; ++i) mean.add_data(0.5f);
         WriteProtoToBinaryFile(mean, dir + "/mean.binaryproto");
       }},
      {"LabelOutOfRange",
       {{"net.prototxt",
         "layer { name: 'data' type: 'DummyData' top: 'x' top: 'y'\n"
         "  dummy_data_param { shape { dim: 2 dim: 3 } shape { dim: 2 }\n"
         "    data_filler { type: 'gaussian' std: 1 } data_filler { type: 'constant' value: 7 } } }\n"
         "layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'x' bottom: 'y' top: 'loss' }\n"},
        {"solver.prototxt", Solver()}},
       kTrain,
       {"$D/net.prototxt:4: layer 'loss' (SoftmaxWithLoss)", "label 7", "bottom 'y'",
        "valid range [0, 3)"}},
      {"WrongIdxMagic",
       {{"images.idx", string("\0\0\x08\x04\0\0\0\x01", 8)},
        {"labels.idx", string("\0\0\x08\x01\0\0\0\x01\x05", 9)}},
       "$T/convert_idx $D/images.idx $D/labels.idx $D/out_db",
       {"$D/images.idx: bad IDX magic number 2052, expected 2051"}},
      {"TruncatedIdx",
       {{"images.idx", string("\0\0\x08\x03\0\0\0\x02\0\0\0\x02\0\0\0\x02\x01\x02", 18)},
        {"labels.idx", string("\0\0\x08\x01\0\0\0\x02\x05\x06", 10)}},
       "$T/convert_idx $D/images.idx $D/labels.idx $D/out_db",
       {"$D/images.idx: truncated: 2 items need 24 bytes, found 18"}},
      {"ComputeImageMeanOfMissingLmdb",
       {},
       "$T/compute_image_mean $D/nodb $D/mean.binaryproto",
       {"'$D/nodb'", "cannot open LMDB"}},
      // ---------------------------------------------------------------- flags
      {"UnknownGpuId",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Solver()}},
       kTrain + " -gpu 99",
       {"-gpu 99: unknown GPU id", "GPU(s) available"}},
      {"WeightsAndSnapshotTogether",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Solver()}},
       kTrain + " -weights $D/a.caffemodel -snapshot $D/a.solverstate",
       {"give -weights or -snapshot, not both"}},
      {"BadSigintEffect",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Solver()}},
       kTrain + " -sigint_effect maybe",
       {"-sigint_effect: expected stop, snapshot or none, found 'maybe'"}},
      {"BadPhase",
       {{"net.prototxt", kRegression}},
       kTime + " -phase VALIDATE",
       {"-phase: expected TRAIN or TEST, found 'VALIDATE'"}},
      // ---------------------------------------------------------------- solver settings
      {"MaxIterZero",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Replace(Solver(), "max_iter: 1", "max_iter: 0")}},
       kTrain,
       {"$D/solver.prototxt: max_iter must be positive, found 0"}},
      {"NegativeBaseLr",
       {{"net.prototxt", kRegression}, {"solver.prototxt", Replace(Solver(), "0.01", "-0.1")}},
       kTrain,
       {"$D/solver.prototxt: base_lr must not be negative, found -0.1"}},
      {"UnknownSyncMethod",
       {{"net.prototxt", kRegression},
        {"solver.prototxt", Solver("net.prototxt", "sync_param { method: SPARSEST }\n")}},
       kTrain,
       {"$D/solver.prototxt:8:31: ", "Unknown enumeration value of \"SPARSEST\" for field \"method\""}},
      {"DensityZero",
       {{"net.prototxt", kRegression},
        {"solver.prototxt", Solver("net.prototxt", "sync_param { method: IWP density: 0 }\n")}},
       kTrain,
       {"$D/solver.prototxt: sync_param.density must lie in (0, 1], found 0"}},
      {"DensityAboveOne",
       {{"net.prototxt", kRegression},
        {"solver.prototxt", Solver("net.prototxt", "sync_param { method: IWP density: 1.5 }\n")}},
       kTrain,
       {"$D/solver.prototxt: sync_param.density must lie in (0, 1], found 1.5"}},
  };
#ifdef USE_OPENCV
  rows.push_back(
      {"UnreadableImageInImageDataList",
       {{"list.txt", "garbage.png 0\n"}, {"garbage.png", "this is not an image"},
        {"net.prototxt", "layer { name: 'data' type: 'ImageData' top: 'x' top: 'y'\n"
                         "  image_data_param { source: '$D/list.txt' root_folder: '$D/'\n"
                         "                     batch_size: 1 } }\n"}},
       kTime,
       {"$D/net.prototxt:1: layer 'data' (ImageData)", "'$D/list.txt' line 1",
        "'$D/garbage.png' cannot be decoded"}});
  rows.push_back(
      {"MissingImageInConvertImagesetList",
       {{"list.txt", "absent.png 0\n"}},
       "$T/convert_imageset $D/ $D/list.txt $D/out_db",
       {"$D/list.txt:1:", "'$D/absent.png'", "does not exist"}});
#endif
  return rows;
}

class ErrorTableTest : public ::testing::TestWithParam<Row> {};

// Count of lines that start with "error:".
int ErrorLines(const string& out, string* line) {
  int count = 0;
  size_t start = 0;
  while (start < out.size()) {
    size_t end = out.find('\n', start);
    if (end == string::npos) end = out.size();
    if (out.compare(start, 6, "error:") == 0) {
      ++count;
      *line = out.substr(start, end - start);
    }
    start = end + 1;
  }
  return count;
}

TEST_P(ErrorTableTest, OneCleanErrorLine) {
  const Row& row = GetParam();
  const string dir = MakeTempDir("error_table");
  for (const auto& file : row.files) {
    WriteFileAtomically(dir + "/" + file.first, Expand(file.second, dir));
  }
  if (row.prepare) {
    ASSERT_NO_FATAL_FAILURE(row.prepare(dir));
  }
  const string command = Expand(row.command, dir);
  string out;
  const int status = RunCommand(command, &out);
  EXPECT_EQ(status, 1) << command << "\n" << out;
  string line;
  EXPECT_EQ(ErrorLines(out, &line), 1) << out;
  RecordProperty("error_line", line);  // docs/errors.md quotes these
  for (const string& expected : row.expected) {
    EXPECT_NE(line.find(Expand(expected, dir)), string::npos)
        << "expected '" << Expand(expected, dir) << "' in: " << line;
  }
  for (const char* trace : {"Check failed", "terminate called", "Aborted", "*** ", "Segmentation"}) {
    EXPECT_EQ(out.find(trace), string::npos) << "abort trace '" << trace << "' in: " << out;
  }
  // The one-line form: no "error: error:" nesting, no message spread over lines.
  EXPECT_EQ(line.find("error: error:"), string::npos) << line;
}

INSTANTIATE_TEST_SUITE_P(Issue10, ErrorTableTest, ::testing::ValuesIn(Rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

TEST(ErrorTableSize, CoversTheIssueList) { EXPECT_GE(Rows().size(), 25u); }

}  // namespace
}  // namespace caffe
