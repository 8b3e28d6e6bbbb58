// How the DENSE exchange cuts the gradients into buckets, and when each bucket's
// gradients are final during backward.
//
// Buckets are filled from the last parameter to the first, the order in which
// backward produces gradients, so the first bucket is complete after the last layers
// have run and the exchange can start on it while earlier layers still compute (on
// the device, on its own stream). A parameter may span buckets; every element is in
// exactly one piece. The plan depends only on the sizes, so every rank builds the
// same one and calls the collectives in the same order.
#ifndef CAFFE_SYNC_BUCKET_PLAN_HPP_
#define CAFFE_SYNC_BUCKET_PLAN_HPP_

#include <cstdint>
#include <vector>

namespace caffe {

// A contiguous run of one parameter's gradient inside a bucket.
struct BucketPiece {
  int param = 0;         // index into the learnable parameters
  int64_t start = 0;     // first element within that parameter
  int64_t length = 0;
};

struct Bucket {
  std::vector<BucketPiece> pieces;  // in bucket order
  int64_t elements = 0;
  // The bucket's gradients are final once backward has passed this layer: the
  // lowest ready layer among its pieces' parameters.
  int ready_after_layer = 0;
};

class BucketPlan {
 public:
  BucketPlan() = default;
  // sizes[p]: elements of learnable parameter p (net order); ready_layers[p]: the
  // layer after whose backward its gradient is final (Net::learnable_param_ready_layers;
  // empty means "only after the whole backward"); capacity: elements per bucket, >= 1.
  BucketPlan(const std::vector<int64_t>& sizes, const std::vector<int>& ready_layers,
             int64_t capacity);

  const std::vector<Bucket>& buckets() const { return buckets_; }
  // True when the plan was built for these parameter sizes.
  bool Matches(const std::vector<int64_t>& sizes) const { return sizes == sizes_; }
  // The number of leading buckets (in plan order) whose gradients are final once
  // backward has finished `layer` and every layer above it. Buckets become ready in
  // plan order, so this only grows as backward proceeds.
  int ReadyCount(int layer) const;

 private:
  std::vector<int64_t> sizes_;
  std::vector<Bucket> buckets_;
};

}  // namespace caffe

#endif  // CAFFE_SYNC_BUCKET_PLAN_HPP_
