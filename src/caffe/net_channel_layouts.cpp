// Net::PlanChannelBlockedLayouts: which activation blobs live in a channel-blocked
// layout (see net.hpp).
#include <numeric>

#include "caffe/net.hpp"
#include "caffe/util/channel_tiles.hpp"

namespace caffe {

namespace {

// Regions of blobs joined by layers that need one layout across their blobs.
class BlobRegions {
 public:
  explicit BlobRegions(int blobs) : parent_(blobs) { std::iota(parent_.begin(), parent_.end(), 0); }
  int Find(int blob) {
    while (parent_[blob] != blob) blob = parent_[blob] = parent_[parent_[blob]];
    return blob;
  }
  void Join(int a, int b) { parent_[Find(a)] = Find(b); }

 private:
  vector<int> parent_;
};

}  // namespace

Net::ChannelLayoutPlan Net::PlanChannelBlockedLayouts(const std::set<string>& keep) {
  ChannelLayoutPlan plan;
  if (force_backward_ || debug_info_) {
    plan.skipped = force_backward_ ? "force_backward is set" : "debug_info is set";
    return plan;
  }
  if (context_->mode() != Mode::CPU) {
    plan.skipped = "the net runs on the GPU";
    return plan;
  }
  const int num_blobs = static_cast<int>(blobs_.size());
  BlobRegions regions(num_blobs);
  vector<bool> must_be_plain(num_blobs, false);
  for (int b : BlobsLeftAlone(keep, "to keep in the plain layout")) must_be_plain[b] = true;
  // What the convolutions at a region's edges prefer: -1 none seen yet, 0 they disagree.
  vector<int> preferred(num_blobs, -1);
  auto prefer = [&](int blob, int block) {
    int& p = preferred[blob];
    p = p == -1 ? block : (p == block ? p : 0);
  };
  for (size_t i = 0; i < layers_.size(); ++i) {
    const vector<int>& bottoms = bottom_id_vecs_[i];
    const vector<int>& tops = top_id_vecs_[i];
    switch (layers_[i]->channel_layout_role()) {
      case Layer::ChannelLayoutRole::kPlainOnly:
        for (int b : bottoms) must_be_plain[b] = true;
        for (int b : tops) must_be_plain[b] = true;
        break;
      case Layer::ChannelLayoutRole::kFollowsItsBlobs: {
        vector<int> all(bottoms);
        all.insert(all.end(), tops.begin(), tops.end());
        for (size_t k = 1; k < all.size(); ++k) regions.Join(all[0], all[k]);
        break;
      }
      case Layer::ChannelLayoutRole::kConvertsPerBlob:
        for (size_t k = 0; k < bottoms.size(); ++k) {
          prefer(bottoms[k], layers_[i]->PreferredChannelBlock(false, static_cast<int>(k)));
        }
        for (size_t k = 0; k < tops.size(); ++k) {
          prefer(tops[k], layers_[i]->PreferredChannelBlock(true, static_cast<int>(k)));
        }
        break;
    }
  }
  // Per region: the block every edge convolution prefers, or 0.
  vector<int> region_block(num_blobs, -1);
  for (int b = 0; b < num_blobs; ++b) {
    if (preferred[b] == -1) continue;
    int& block = region_block[regions.Find(b)];
    block = block == -1 ? preferred[b] : (block == preferred[b] ? block : 0);
  }
  for (int b = 0; b < num_blobs; ++b) {
    int& block = region_block[regions.Find(b)];
    const Blob& blob = *blobs_[b];
    const bool fits = block > 0 && IsSupportedChannelBlock(block) && blob.num_axes() == 4 &&
                      blob.shape(1) % block == 0;
    if (must_be_plain[b] || !fits) block = 0;
  }
  std::set<int> planned_regions;
  for (int b = 0; b < num_blobs; ++b) {
    const int region = regions.Find(b);
    const int block = std::max(region_block[region], 0);
    if (block > 0) {
      planned_regions.insert(region);
      plan.block = block;
      ++plan.blobs;
    }
    blobs_[b]->set_channel_block(block);
  }
  plan.regions = static_cast<int>(planned_regions.size());
  // The convolutions build their primitives for their blobs' layouts in Reshape.
  Reshape();
  return plan;
}

}  // namespace caffe
