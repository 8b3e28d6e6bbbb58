#include "caffe/layer_factory.hpp"

#include "caffe/layer.hpp"

namespace caffe {

std::map<string, LayerRegistry::Creator>& LayerRegistry::Registry() {
  static std::map<string, Creator> registry;
  return registry;
}

void LayerRegistry::AddCreator(const string& type, Creator creator) {
  CHECK_EQ(Registry().count(type), 0u) << "layer type " << type << " registered twice";
  Registry()[type] = std::move(creator);
}

void LayerRegistry::AddCreator(const string& type, ModelessCreator creator) {
  AddCreator(type,
             [creator = std::move(creator)](const LayerParameter& param, const Context&) {
               return creator(param);
             });
}

bool LayerRegistry::IsRegistered(const string& type) { return Registry().count(type) > 0; }

vector<string> LayerRegistry::LayerTypeList() {
  vector<string> types;
  for (const auto& entry : Registry()) types.push_back(entry.first);
  return types;
}

shared_ptr<Layer> LayerRegistry::CreateLayer(const LayerParameter& param, Mode mode) {
  Context context;
  context.set_mode(mode);
  return CreateLayer(param, context);
}

shared_ptr<Layer> LayerRegistry::CreateLayer(const LayerParameter& param,
                                             const Context& context) {
  auto it = Registry().find(param.type());
  if (it == Registry().end()) {
    std::ostringstream known;
    bool first = true;
    for (const auto& entry : Registry()) {
      known << (first ? "" : ", ") << entry.first;
      first = false;
    }
    ErrorBuilder() << "layer '" << param.name() << "': unknown layer type '" << param.type()
                   << "' (known types: " << known.str() << ")";
  }
  return it->second(param, context);
}

}  // namespace caffe
