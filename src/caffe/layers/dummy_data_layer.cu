// Device path of DummyDataLayer: the uniform and plain Gaussian fillers draw on the
// device; any other filler (xavier, msra, a sparse Gaussian, ...) fills on the host
// as in CPU mode, and its consumers upload it.
#include "caffe/layers/dummy_data_layer.hpp"
#include "caffe/filler.hpp"
#include "caffe/util/math_functions.hpp"

namespace caffe {

void DummyDataLayer::Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) {
  for (size_t i = 0; i < top.size(); ++i) {
    if (!refill_[i]) continue;
    const FillerParameter& filler = fillers_[i];
    Blob* blob = top[i];
    if (filler.type() == "uniform") {
      LAYER_REQUIRE(filler.min() <= filler.max())
          << "uniform filler needs min <= max, found min " << filler.min() << " and max "
          << filler.max();
      math::gpu_rng_uniform(blob->count(), filler.min(), filler.max(), context().rng(),
                            blob->mutable_gpu_data());
    } else if (filler.type() == "gaussian" && filler.sparse() < 0) {
      LAYER_REQUIRE(filler.std() > 0) << "gaussian filler needs std > 0, found " << filler.std();
      math::gpu_rng_gaussian(blob->count(), filler.mean(), filler.std(), context().rng(),
                             blob->mutable_gpu_data());
    } else {
      FillBlob(filler, blob, context().rng());
    }
  }
}

}  // namespace caffe
