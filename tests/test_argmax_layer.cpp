#include <gtest/gtest.h>

#include <algorithm>

#include "caffe/layers/argmax_layer.hpp"
#include "test_util.hpp"

namespace caffe {
namespace {

struct ArgMaxRun {
  Blob bottom, top;
  std::unique_ptr<ArgMaxLayer> layer;
  ArgMaxRun(const string& proto, const vector<int64_t>& shape, const vector<float>& values = {}) {
    bottom.Reshape(shape);
    if (values.empty()) {
      FillUniform(&bottom, -1, 1);
    } else {
      std::copy(values.begin(), values.end(), bottom.mutable_cpu_data());
    }
    layer.reset(new ArgMaxLayer(ParseLayer(proto)));
    layer->SetUp({&bottom}, {&top});
    layer->Forward({&bottom}, {&top});
  }
};

// Indices of `values` by decreasing value, larger index first among equals.
vector<int> Ranked(const vector<float>& values) {
  vector<int> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return values[a] != values[b] ? values[a] > values[b] : a > b;
  });
  return order;
}

}  // namespace

TEST(ArgMaxLayerTest, OverAllButFirstAxis) {
  ArgMaxRun run("name: 'a' type: 'ArgMax'", {2, 5}, {0, 3, 1, -2, 2, 9, -1, 4, 8.5f, 0});
  ASSERT_EQ(run.top.shape(), (vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(run.top.cpu_data()[0], 1);
  EXPECT_EQ(run.top.cpu_data()[1], 0);
}

TEST(ArgMaxLayerTest, TopKWithValues) {
  ArgMaxRun run("name: 'a' type: 'ArgMax' argmax_param { top_k: 2 out_max_val: true }", {2, 5},
          {0, 3, 1, -2, 2, 9, -1, 4, 8.5f, 0});
  ASSERT_EQ(run.top.shape(), (vector<int64_t>{2, 2, 2}));
  // Per example: the k indices, then the k values.
  const vector<float> expected{1, 4, 3, 2, 0, 3, 9, 8.5f};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(run.top.cpu_data()[i], expected[i]) << i;
}

TEST(ArgMaxLayerTest, TiesGoToTheLargerIndex) {
  ArgMaxRun run("name: 'a' type: 'ArgMax'", {1, 4}, {1, 3, 3, 0});
  EXPECT_EQ(run.top.cpu_data()[0], 2);
}

TEST(ArgMaxLayerTest, KeepsTrailingAxesOfLargerBottoms) {
  ArgMaxRun run("name: 'a' type: 'ArgMax' argmax_param { top_k: 3 }", {2, 3, 2, 2, 2});
  EXPECT_EQ(run.top.shape(), (vector<int64_t>{2, 1, 3, 1, 1}));
  for (int n = 0; n < 2; ++n) {
    const float* x = run.bottom.cpu_data() + n * 24;
    const vector<int> order = Ranked(vector<float>(x, x + 24));
    for (int k = 0; k < 3; ++k) EXPECT_EQ(run.top.cpu_data()[n * 3 + k], order[k]);
  }
}

TEST(ArgMaxLayerTest, AlongAnAxisMatchesNaiveLoop) {
  const vector<int64_t> shape{2, 3, 4, 2};
  for (int axis : {0, 1, 2, -1}) {
    for (bool values : {false, true}) {
      const int top_k = axis == -1 ? 1 : 2;
      ArgMaxRun run("name: 'a' type: 'ArgMax' argmax_param { axis: " + std::to_string(axis) +
                  " top_k: " + std::to_string(top_k) +
                  (values ? " out_max_val: true }" : " }"),
              shape);
      const int a = axis < 0 ? axis + 4 : axis;
      vector<int64_t> top_shape = shape;
      top_shape[a] = top_k;
      ASSERT_EQ(run.top.shape(), top_shape);
      const int64_t dim = shape[a];
      const int64_t stride = run.bottom.count(a + 1);
      const int64_t outer = run.bottom.count(0, a);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t s = 0; s < stride; ++s) {
          vector<float> line(dim);
          for (int64_t j = 0; j < dim; ++j) line[j] = run.bottom.cpu_data()[(o * dim + j) * stride + s];
          const vector<int> order = Ranked(line);
          for (int k = 0; k < top_k; ++k) {
            const float got = run.top.cpu_data()[(o * top_k + k) * stride + s];
            EXPECT_EQ(got, values ? line[order[k]] : order[k]) << "axis " << axis;
          }
        }
      }
    }
  }
}

TEST(ArgMaxLayerTest, TopKLargerThanTheAxisIsAnError) {
  Blob bottom({2, 3}), top;
  ArgMaxLayer layer(ParseLayer("name: 'a' type: 'ArgMax' argmax_param { axis: 1 top_k: 4 }"));
  try {
    layer.SetUp({&bottom}, {&top});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(string(e.what()).find("layer 'a'"), string::npos) << e.what();
    EXPECT_NE(string(e.what()).find("top_k 4"), string::npos) << e.what();
  }
  ArgMaxLayer flat(ParseLayer("name: 'a' type: 'ArgMax' argmax_param { top_k: 7 }"));
  EXPECT_THROW(flat.SetUp({&bottom}, {&top}), Error);
}

TEST(ArgMaxLayerTest, BackwardIsAnError) {
  Blob bottom({2, 3}), top;
  ArgMaxLayer layer(ParseLayer("name: 'a' type: 'ArgMax'"));
  layer.SetUp({&bottom}, {&top});
  layer.Forward({&bottom}, {&top});
  EXPECT_FALSE(layer.AllowForceBackward(0));
  EXPECT_THROW(layer.Backward({&top}, {true}, {&bottom}), Error);
  layer.Backward({&top}, {false}, {&bottom});  // nothing asked, nothing done
}

}  // namespace caffe
