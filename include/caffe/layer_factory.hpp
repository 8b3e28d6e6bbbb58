// Layers register a creator under their `type` string; nets create them by name.
// The layer library is linked whole-archive so every registration survives static
// linking (see CMakeLists.txt).
//
// Creation is told the Mode the layer will run in, because the best engine depends on
// it: DEFAULT means cuDNN for a GPU net and the measured CPU choice for a CPU net (see
// layer_engines.cpp). The mode is passed as a value rather than read from the layer's
// Context because the context is attached only after the layer exists.
#ifndef CAFFE_LAYER_FACTORY_HPP_
#define CAFFE_LAYER_FACTORY_HPP_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "caffe/common.hpp"
#include "caffe/proto/caffe.pb.h"

namespace caffe {

class Layer;

class LayerRegistry {
 public:
  using Creator = std::function<shared_ptr<Layer>(const LayerParameter&, Mode)>;
  // Most layer types have one class for every mode.
  using ModelessCreator = std::function<shared_ptr<Layer>(const LayerParameter&)>;

  static void AddCreator(const string& type, Creator creator);
  static void AddCreator(const string& type, ModelessCreator creator);
  // Throws caffe::Error listing the known types when `param.type()` is unknown.
  // `mode` is the mode of the context the layer will be given (Net passes its own).
  static shared_ptr<Layer> CreateLayer(const LayerParameter& param, Mode mode);
  // A layer for a CPU context: what layers built outside a net have always been.
  static shared_ptr<Layer> CreateLayer(const LayerParameter& param) {
    return CreateLayer(param, Mode::CPU);
  }
  static vector<string> LayerTypeList();
  static bool IsRegistered(const string& type);

 private:
  static std::map<string, Creator>& Registry();
};

struct LayerRegisterer {
  LayerRegisterer(const string& type, LayerRegistry::Creator creator) {
    LayerRegistry::AddCreator(type, std::move(creator));
  }
  LayerRegisterer(const string& type, LayerRegistry::ModelessCreator creator) {
    LayerRegistry::AddCreator(type, std::move(creator));
  }
};

// REGISTER_LAYER_CLASS(Convolution) registers ConvolutionLayer as "Convolution".
#define REGISTER_LAYER_CLASS(type)                                                    \
  static ::caffe::LayerRegisterer g_layer_registerer_##type(                          \
      #type, [](const ::caffe::LayerParameter& param) -> std::shared_ptr<::caffe::Layer> { \
        return std::make_shared<type##Layer>(param);                                  \
      })

// For layers whose creator picks among engines: `creator` takes (const LayerParameter&,
// Mode), or only the parameter when the mode does not matter.
#define REGISTER_LAYER_CREATOR(type, creator) \
  static ::caffe::LayerRegisterer g_layer_registerer_##type(#type, creator)

}  // namespace caffe

#endif  // CAFFE_LAYER_FACTORY_HPP_
