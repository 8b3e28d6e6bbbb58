#include "caffe/util/insert_splits.hpp"

#include <map>
#include <utility>

#include "caffe/util/error.hpp"

namespace caffe {

std::string SplitLayerName(const std::string& layer_name, const std::string& blob_name,
                           int blob_index) {
  return blob_name + "_" + layer_name + "_" + std::to_string(blob_index) + "_split";
}

std::string SplitBlobName(const std::string& layer_name, const std::string& blob_name,
                          int blob_index, int split_index) {
  return blob_name + "_" + layer_name + "_" + std::to_string(blob_index) + "_split_" +
         std::to_string(split_index);
}

bool IsLossType(const std::string& type) {
  return type.size() >= 4 && type.compare(type.size() - 4, 4, "Loss") == 0;
}

void InsertSplits(const NetParameter& param, NetParameter* param_split) {
  param_split->CopyFrom(param);
  param_split->clear_layer();
  // (layer index, top index) of the latest producer of each blob name, and how many
  // later bottoms read that particular production. In-place layers re-produce a blob.
  using Site = std::pair<int, int>;
  std::map<std::string, Site> producer;
  std::map<Site, int> readers;
  std::map<Site, float> loss_weight;
  std::map<Site, int> next_reader;  // numbering of split outputs handed out so far
  std::map<std::pair<int, int>, Site> bottom_source;

  for (int i = 0; i < param.layer_size(); ++i) {
    const LayerParameter& layer = param.layer(i);
    for (int j = 0; j < layer.bottom_size(); ++j) {
      auto it = producer.find(layer.bottom(j));
      if (it == producer.end()) {
        // Layers run in file order, so a blob made only further down is as missing as
        // one made nowhere; naming its producer points at the fix (move a layer up).
        string later;
        for (int k = i; k < param.layer_size() && later.empty(); ++k) {
          for (const string& top : param.layer(k).top()) {
            if (top == layer.bottom(j)) later = param.layer(k).name();
          }
        }
        ErrorBuilder error;
        error.AboutLayer(layer.name()) << "layer '" << layer.name() << "' (" << layer.type() << "): bottom blob '"
              << layer.bottom(j) << "' is not produced by any earlier layer";
        if (!later.empty()) {
          error << " (expected a producer above it, found only the later layer '" << later
                << "'; layers run in file order)";
        }
      }
      bottom_source[{i, j}] = it->second;
      ++readers[it->second];
    }
    for (int j = 0; j < layer.top_size(); ++j) {
      producer[layer.top(j)] = {i, j};
      if (j < layer.loss_weight_size()) {
        loss_weight[{i, j}] = layer.loss_weight(j);
      } else if (j == 0 && layer.loss_weight_size() == 0 && IsLossType(layer.type())) {
        loss_weight[{i, j}] = 1.f;  // loss layers weigh their first top by 1 by default
      }
    }
  }
  // A loss top that is also read by another layer needs its own split output for the
  // loss, so it counts as one more reader.
  for (auto& entry : loss_weight) {
    if (entry.second != 0) ++readers[entry.first];
  }

  for (int i = 0; i < param.layer_size(); ++i) {
    LayerParameter* layer = param_split->add_layer();
    layer->CopyFrom(param.layer(i));
    for (int j = 0; j < layer->bottom_size(); ++j) {
      const Site source = bottom_source[{i, j}];
      if (readers[source] <= 1) continue;
      const LayerParameter& producer_layer = param.layer(source.first);
      layer->set_bottom(j, SplitBlobName(producer_layer.name(), producer_layer.top(source.second),
                                         source.second, next_reader[source]++));
    }
    for (int j = 0; j < layer->top_size(); ++j) {
      const Site site{i, j};
      const int count = readers[site];
      if (count <= 1) continue;
      LayerParameter* split = param_split->add_layer();
      const std::string& blob = layer->top(j);
      split->set_name(SplitLayerName(layer->name(), blob, j));
      split->set_type("Split");
      split->add_bottom(blob);
      const float weight = loss_weight.count(site) ? loss_weight[site] : 0.f;
      for (int k = 0; k < count; ++k) {
        split->add_top(SplitBlobName(layer->name(), blob, j, k));
        // The first split output carries the loss; the others feed consumers.
        if (weight != 0) split->add_loss_weight(k == 0 ? weight : 0);
      }
      if (weight != 0) {
        // The loss now comes from the split; the layer's own top weighs nothing.
        while (layer->loss_weight_size() < layer->top_size()) {
          layer->add_loss_weight(layer->loss_weight_size() == 0 && IsLossType(layer->type()) ? 1.f : 0.f);
        }
        layer->set_loss_weight(j, 0);
        next_reader[site] = 1;  // output 0 is reserved for the loss
      }
    }
  }
}

}  // namespace caffe
