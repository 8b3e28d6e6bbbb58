#include "caffe/util/upgrade_proto.hpp"

#include <regex>
#include <sstream>
#include <vector>

#include "caffe/util/error.hpp"
#include "caffe/util/io.hpp"

namespace caffe {

bool UpgradeNetAsNeeded(const std::string& source, NetParameter* param) {
  if (param->input_size() == 0) {
    CAFFE_REQUIRE(param->input_dim_size() == 0 && param->input_shape_size() == 0)
        << source << ": input_dim/input_shape given without any `input:` name";
    return false;
  }
  const int num_inputs = param->input_size();
  CAFFE_REQUIRE(param->input_dim_size() == 0 || param->input_shape_size() == 0)
      << source << ": give either input_dim or input_shape, not both";
  if (param->input_dim_size() > 0) {
    CAFFE_REQUIRE(param->input_dim_size() == 4 * num_inputs)
        << source << ": " << num_inputs << " input(s) need " << 4 * num_inputs
        << " input_dim values, found " << param->input_dim_size();
  } else {
    CAFFE_REQUIRE(param->input_shape_size() == num_inputs)
        << source << ": " << num_inputs << " input(s) need as many input_shape entries, found "
        << param->input_shape_size();
  }
  LayerParameter input_layer;
  input_layer.set_name("input");
  input_layer.set_type("Input");
  InputParameter* input_param = input_layer.mutable_input_param();
  for (int i = 0; i < num_inputs; ++i) {
    input_layer.add_top(param->input(i));
    BlobShape* shape = input_param->add_shape();
    if (param->input_dim_size() > 0) {
      for (int d = 0; d < 4; ++d) shape->add_dim(param->input_dim(4 * i + d));
    } else {
      shape->CopyFrom(param->input_shape(i));
    }
  }
  // Prepend: the Input layer must come before every consumer.
  param->add_layer()->CopyFrom(input_layer);
  for (int i = param->layer_size() - 1; i > 0; --i) {
    param->mutable_layer()->SwapElements(i, i - 1);
  }
  param->clear_input();
  param->clear_input_dim();
  param->clear_input_shape();
  return true;
}

bool UpgradeSolverAsNeeded(const std::string& source, SolverParameter* param) {
  if (!param->has_solver_type()) return false;
  const char* name = "SGD";
  switch (param->solver_type()) {
    case SolverParameter::SGD: name = "SGD"; break;
    case SolverParameter::NESTEROV: name = "Nesterov"; break;
    case SolverParameter::ADAGRAD: name = "AdaGrad"; break;
    case SolverParameter::RMSPROP: name = "RMSProp"; break;
    case SolverParameter::ADADELTA: name = "AdaDelta"; break;
    case SolverParameter::ADAM: name = "Adam"; break;
  }
  CAFFE_REQUIRE(!param->has_type() || param->type() == name)
      << source << ": solver_type and type disagree ('" << name << "' vs '" << param->type()
      << "')";
  param->set_type(name);
  param->clear_solver_type();
  return true;
}

void ReadNetParamsFromTextFile(const std::string& filename, NetParameter* param) {
  ReadProtoFromTextFile(filename, param);
  UpgradeNetAsNeeded(filename, param);
}

void ReadNetParamsFromBinaryFile(const std::string& filename, NetParameter* param) {
  ReadProtoFromBinaryFile(filename, param);
  UpgradeNetAsNeeded(filename, param);
}

namespace {

// The sync_param options (and score values) that measured no gain and were deleted
// rather than left off by default. Each record stays in the notebook.
struct RemovedOption {
  const char* field;   // the option as a solver file writes it
  const char* value;   // for a removed enum value: the value; else null
  const char* reason;  // why it went
  const char* record;  // the notebook section that holds its measurement
};
constexpr const char* kNoGain = "it measured no gain";
const RemovedOption kRemovedOptions[] = {
    {"weight_floor", nullptr, kNoGain, "The weight floor"},
    {"rescale_residuals", nullptr, kNoGain, "Residuals across rate changes"},
    {"residual_leak", nullptr, kNoGain, "Leaky residuals"},
    {"flush_at_rate_drop", nullptr, kNoGain, "Flush at rate drops"},
    {"flush_at_end", nullptr, kNoGain, "Flush at the end"},
    {"consensus_prior", nullptr, kNoGain, "The consensus prior"},
    {"measure_capture", nullptr, "it was the diagnostic of one finished experiment",
     "Measuring the choice: the capture probe"},
    {"score", "BATCHNORM_AWARE", kNoGain, "Our rule from it: the BatchNorm-aware score"},
    {"score", "BATCHNORM_AWARE_CHANNELS", kNoGain, "Per channel"},
};

// The line's field names and values: its `#` comment dropped and its quoted strings
// emptied (a path may hold any text).
std::string CodeOf(const std::string& line) {
  std::string code;
  char quote = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == '\\') {
        ++i;
      } else if (c == quote) {
        quote = 0;
        code += c;
      }
    } else if (c == '"' || c == '\'') {
      quote = c;
      code += c;
    } else if (c == '#') {
      break;
    } else {
      code += c;
    }
  }
  return code;
}

}  // namespace

void RejectRemovedSolverOptions(const std::string& text, const std::string& source) {
  // Each option's pattern, compiled once: the name as a whole word followed by `:`
  // (and, for an enum value, that value).
  static const std::vector<std::regex> patterns = [] {
    std::vector<std::regex> compiled;
    for (const RemovedOption& option : kRemovedOptions) {
      std::string pattern = std::string("(^|[^A-Za-z0-9_])") + option.field + "\\s*:";
      if (option.value) pattern += std::string("\\s*") + option.value + "($|[^A-Za-z0-9_])";
      compiled.emplace_back(pattern);
    }
    return compiled;
  }();
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string code = CodeOf(line);
    for (size_t i = 0; i < patterns.size(); ++i) {
      if (!std::regex_search(code, patterns[i])) continue;
      const RemovedOption& option = kRemovedOptions[i];
      ErrorBuilder() << source << ":" << number << ": sync_param." << option.field
                     << (option.value ? std::string(": ") + option.value : std::string())
                     << " was removed: " << option.reason << " (the record: "
                     << "results/iwp_explore/NOTEBOOK.md, \"" << option.record
                     << "\"); remove it from the file";
    }
  }
}

void ReadSolverParamsFromTextFile(const std::string& filename, SolverParameter* param) {
  const std::string text = ReadFileToString(filename);
  RejectRemovedSolverOptions(text, filename);
  ParseProtoFromText(text, filename, param);
  UpgradeSolverAsNeeded(filename, param);
}

}  // namespace caffe
