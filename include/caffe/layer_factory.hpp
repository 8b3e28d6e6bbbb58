// Layers register a creator under their `type` string; nets create them by name.
// The layer library is linked whole-archive so every registration survives static
// linking (see CMakeLists.txt).
//
// Creation is given the Context the layer will run in, because the engine depends on
// its mode and its default_engine: DEFAULT means cuDNN for a GPU net and the measured
// CPU choice for a CPU net (see layer_engines.cpp). It is passed to the creator because
// a layer is attached to its context only after it exists.
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
  using Creator = std::function<shared_ptr<Layer>(const LayerParameter&, const Context&)>;
  // Most layer types have one class for every mode.
  using ModelessCreator = std::function<shared_ptr<Layer>(const LayerParameter&)>;

  static void AddCreator(const string& type, Creator creator);
  static void AddCreator(const string& type, ModelessCreator creator);
  // Throws caffe::Error listing the known types when `param.type()` is unknown.
  // `context` is the one the layer will be given (Net passes its own); only its mode and
  // default_engine are read here.
  static shared_ptr<Layer> CreateLayer(const LayerParameter& param, const Context& context);
  // A layer for a context in `mode` with the measured default engines.
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
// const Context&), or only the parameter when the context does not matter.
#define REGISTER_LAYER_CREATOR(type, creator) \
  static ::caffe::LayerRegisterer g_layer_registerer_##type(#type, creator)

}  // namespace caffe

#endif  // CAFFE_LAYER_FACTORY_HPP_
