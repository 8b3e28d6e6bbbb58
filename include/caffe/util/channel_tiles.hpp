// Per-channel passes over an N x C x S blob in either of its layouts
// (Blob::channel_block): Caffe's plain one, where a tile is one plane (n, c), or the
// channel-blocked one, where a tile is one channel block of one image, S positions of
// `block` channels side by side. Layers that apply per-channel constants (BatchNorm,
// Scale) write one loop body for both, and each element gets the same arithmetic in
// either layout.
#ifndef CAFFE_UTIL_CHANNEL_TILES_HPP_
#define CAFFE_UTIL_CHANNEL_TILES_HPP_

#include <cstdint>
#include <type_traits>

#include "caffe/util/error.hpp"
#include "caffe/util/parallel_for.hpp"

namespace caffe {

// The channel blocks the layers support (oneDNN's 8- and 16-channel layouts).
constexpr int kMaxChannelBlock = 16;
inline bool IsSupportedChannelBlock(int block) { return block == 8 || block == 16; }

// Runs tile(base, c0, width) over every tile, threads splitting the tiles into
// contiguous ranges. The tile's elements are at base + s * W + j for s in [0, spatial)
// and j in [0, W), element (s, j) in channel c0 + j, where width is a
// std::integral_constant<int, W>: 1 in the plain layout, the block in the blocked one.
// A compile-time width lets the body's inner loop vectorise over the block's channels.
template <typename Tile>
void ForEachChannelTile(int64_t num, int64_t channels, int64_t spatial, int block,
                        const Tile& tile) {
  auto run = [&](auto width) {
    constexpr int kWidth = decltype(width)::value;
    const int64_t tiles_per_image = channels / kWidth;
    ParallelFor(
        num * tiles_per_image,
        [&](int64_t begin, int64_t end) {
          for (int64_t t = begin; t < end; ++t) {
            tile(t * spatial * kWidth, (t % tiles_per_image) * kWidth, width);
          }
        },
        MinItemsFor(spatial * kWidth));
  };
  switch (block) {
    case 0: run(std::integral_constant<int, 1>()); break;
    case 8: run(std::integral_constant<int, 8>()); break;
    case 16: run(std::integral_constant<int, 16>()); break;
    default: CAFFE_REQUIRE(false) << "unsupported channel block " << block << " (expected 0, 8 or 16)";
  }
}

}  // namespace caffe

#endif  // CAFFE_UTIL_CHANNEL_TILES_HPP_
