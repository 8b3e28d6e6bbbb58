#include <gtest/gtest.h>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/input_layer.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(InputLayerTest, OneShapeForEveryTop) {
  LayerParameter param = ParseLayer(
      "name: 'in' type: 'Input' top: 'a' top: 'b' input_param { shape { dim: 2 dim: 3 } }");
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(param);
  EXPECT_STREQ(layer->type(), "Input");
  Blob a, b;
  vector<Blob*> tops{&a, &b};
  layer->SetUp({}, tops);
  EXPECT_EQ(a.shape(), (vector<int64_t>{2, 3}));
  EXPECT_EQ(b.shape(), (vector<int64_t>{2, 3}));
}

TEST(InputLayerTest, ShapePerTopAndValuesLeftAlone) {
  LayerParameter param = ParseLayer(
      "name: 'in' type: 'Input' input_param { shape { dim: 1 dim: 3 dim: 4 dim: 4 } "
      "shape { dim: 1 } }");
  InputLayer layer(param);
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  EXPECT_EQ(data.shape(), (vector<int64_t>{1, 3, 4, 4}));
  EXPECT_EQ(label.shape(), (vector<int64_t>{1}));
  // The caller writes the values and may reshape the inputs; Forward keeps both.
  label.mutable_cpu_data()[0] = 7;
  data.Reshape({2, 3, 4, 4});
  layer.Forward({}, tops);
  EXPECT_EQ(data.shape(), (vector<int64_t>{2, 3, 4, 4}));
  EXPECT_EQ(label.cpu_data()[0], 7);
}

TEST(InputLayerTest, WrongNumberOfShapesIsAnError) {
  LayerParameter param = ParseLayer(
      "name: 'in' type: 'Input' input_param { shape { dim: 1 } shape { dim: 2 } }");
  InputLayer layer(param);
  Blob a, b, c;
  vector<Blob*> tops{&a, &b, &c};
  try {
    layer.SetUp({}, tops);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("layer 'in'"), std::string::npos) << what;
    EXPECT_NE(what.find("found 2"), std::string::npos) << what;
  }
  LayerParameter no_shape = ParseLayer("name: 'in' type: 'Input'");
  InputLayer empty(no_shape);
  EXPECT_THROW(empty.SetUp({}, {&a}), Error);
}

TEST(InputLayerTest, BottomsAreAnError) {
  LayerParameter param =
      ParseLayer("name: 'in' type: 'Input' input_param { shape { dim: 1 } }");
  InputLayer layer(param);
  Blob bottom({1}), top;
  EXPECT_THROW(layer.SetUp({&bottom}, {&top}), Error);
}

}  // namespace caffe
