#include "caffe/util/upgrade_proto.hpp"

#include <glog/logging.h>

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

namespace {

// A per-method setting that sync_param once held flat, and where it lives now.
struct MovedSyncField {
  const char* flat;     // its name directly in sync_param
  const char* message;  // the sub-message that holds it now
  const char* name;     // its name there
};
const MovedSyncField kMovedSyncFields[] = {
    {"layer_wise", "iwp_param", "layer_wise"},
    {"vmr_exponent", "iwp_param", "vmr_exponent"},
    {"epsilon", "iwp_param", "epsilon"},
    {"score", "iwp_param", "score"},
    {"stochastic_fraction", "iwp_param", "stochastic_fraction"},
    {"leader", "iwp_param", "leader"},
    {"threshold_mode", "iwp_param", "threshold_mode"},
    {"sample_fraction", "iwp_param", "sample_fraction"},
    {"fixed_threshold", "iwp_param", "fixed_threshold"},
    {"powersgd_rank", "powersgd_param", "rank"},
    {"scalecom_beta", "scalecom_param", "beta"},
};

const google::protobuf::FieldDescriptor* SyncField(const char* name) {
  const google::protobuf::FieldDescriptor* field =
      SyncParameter::descriptor()->FindFieldByName(name);
  CHECK(field) << "sync_param has no field " << name;
  return field;
}

}  // namespace

std::string FlatMethodFieldsSet(const SyncParameter& sync) {
  std::string names;
  for (const MovedSyncField& moved : kMovedSyncFields) {
    if (!sync.GetReflection()->HasField(sync, SyncField(moved.flat))) continue;
    names += (names.empty() ? "" : ", ") + std::string(moved.flat);
  }
  return names;
}

bool UpgradeSyncParameter(const std::string& source, SyncParameter* sync) {
  using google::protobuf::FieldDescriptor;
  const std::string file = source.empty() ? std::string("solver") : source;
  const google::protobuf::Reflection* reflection = sync->GetReflection();
  std::ostringstream moved_names;
  for (const MovedSyncField& moved : kMovedSyncFields) {
    const FieldDescriptor* from = SyncField(moved.flat);
    if (!reflection->HasField(*sync, from)) continue;
    google::protobuf::Message* message = reflection->MutableMessage(sync, SyncField(moved.message));
    const google::protobuf::Reflection* into = message->GetReflection();
    const FieldDescriptor* to = message->GetDescriptor()->FindFieldByName(moved.name);
    CHECK(to && to->cpp_type() == from->cpp_type())
        << moved.flat << " cannot move to " << moved.name;
    CAFFE_REQUIRE(!into->HasField(*message, to))
        << file << ": sync_param sets both " << moved.flat << " and " << moved.message << "."
        << moved.name << "; keep the second";
    switch (from->cpp_type()) {
      case FieldDescriptor::CPPTYPE_BOOL:
        into->SetBool(message, to, reflection->GetBool(*sync, from));
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        into->SetFloat(message, to, reflection->GetFloat(*sync, from));
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        into->SetInt32(message, to, reflection->GetInt32(*sync, from));
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        into->SetEnumValue(message, to, reflection->GetEnumValue(*sync, from));
        break;
      default:
        LOG(FATAL) << moved.flat << ": a type the upgrade does not move";
    }
    reflection->ClearField(sync, from);
    moved_names << (moved_names.tellp() > 0 ? ", " : "") << moved.flat << " -> " << moved.message
                << "." << moved.name;
  }
  if (moved_names.tellp() == 0) return false;
  LOG(WARNING) << file
               << ": sync_param's per-method settings moved into sub-messages; upgraded on load ("
               << moved_names.str() << "). Write them there: docs/iwp.md, \"Settings\"";
  return true;
}

bool UpgradeSolverAsNeeded(const std::string& source, SolverParameter* param) {
  const bool sync_upgraded =
      param->has_sync_param() && UpgradeSyncParameter(source, param->mutable_sync_param());
  if (!param->has_solver_type()) return sync_upgraded;
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
