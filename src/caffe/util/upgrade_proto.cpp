#include "caffe/util/upgrade_proto.hpp"

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

void ReadSolverParamsFromTextFile(const std::string& filename, SolverParameter* param) {
  ReadProtoFromTextFile(filename, param);
  UpgradeSolverAsNeeded(filename, param);
}

}  // namespace caffe
