#include <gtest/gtest.h>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/dummy_data_layer.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

vector<float> Values(const Blob& blob) {
  return vector<float>(blob.cpu_data(), blob.cpu_data() + blob.count());
}

}  // namespace

TEST(DummyDataLayerTest, LegacyDimsDefaultToZeros) {
  LayerParameter param = ParseLayer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { "
      "num: 2 channels: 3 height: 4 width: 5 num: 1 channels: 1 height: 1 width: 1 }");
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(param);
  EXPECT_STREQ(layer->type(), "DummyData");
  Blob a, b;
  vector<Blob*> tops{&a, &b};
  // Garbage in the tops must be overwritten by the default constant-0 filler.
  a.Reshape({2, 3, 4, 5});
  for (int i = 0; i < a.count(); ++i) a.mutable_cpu_data()[i] = 9;
  layer->SetUp({}, tops);
  layer->Forward({}, tops);
  EXPECT_EQ(a.shape(), (vector<int64_t>{2, 3, 4, 5}));
  EXPECT_EQ(b.shape(), (vector<int64_t>{1, 1, 1, 1}));
  for (float v : Values(a)) EXPECT_EQ(v, 0.f);
  EXPECT_EQ(b.cpu_data()[0], 0.f);
}

TEST(DummyDataLayerTest, ConstantFilledOnceRandomRefilledEachForward) {
  LayerParameter param = ParseLayer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { "
      "shape { dim: 2 dim: 3 } shape { dim: 4 } "
      "data_filler { type: 'constant' value: 3 } "
      "data_filler { type: 'uniform' min: 1 max: 2 } }");
  DummyDataLayer layer(param);
  Blob constant, random;
  vector<Blob*> tops{&constant, &random};
  layer.SetUp({}, tops);
  EXPECT_EQ(constant.shape(), (vector<int64_t>{2, 3}));
  EXPECT_EQ(random.shape(), (vector<int64_t>{4}));
  for (float v : Values(constant)) EXPECT_EQ(v, 3.f);

  // A constant top is not rewritten: an edit survives Forward.
  constant.mutable_cpu_data()[0] = -5;
  layer.context().Seed(42);
  layer.Forward({}, tops);
  EXPECT_EQ(constant.cpu_data()[0], -5.f);
  const vector<float> first = Values(random);
  for (float v : first) {
    EXPECT_GE(v, 1.f);
    EXPECT_LE(v, 2.f);
  }
  layer.Forward({}, tops);
  EXPECT_NE(Values(random), first);
  // The draws come from the layer's context: the same seed gives the same values.
  layer.context().Seed(42);
  layer.Forward({}, tops);
  EXPECT_EQ(Values(random), first);
}

TEST(DummyDataLayerTest, OneFillerAndShapeForAllTops) {
  LayerParameter param = ParseLayer(
      "name: 'dummy' type: 'DummyData' dummy_data_param { shape { dim: 3 } "
      "data_filler { type: 'gaussian' std: 1 } }");
  DummyDataLayer layer(param);
  Blob a, b;
  vector<Blob*> tops{&a, &b};
  layer.SetUp({}, tops);
  layer.Forward({}, tops);
  EXPECT_EQ(a.shape(), (vector<int64_t>{3}));
  EXPECT_EQ(b.shape(), (vector<int64_t>{3}));
  EXPECT_NE(Values(a), Values(b));  // independent draws
}

TEST(DummyDataLayerTest, BadParametersAreErrors) {
  Blob a, b, c;
  vector<Blob*> three{&a, &b, &c};
  auto expect_error = [&](const std::string& text, const std::string& fragment) {
    DummyDataLayer layer(ParseLayer("name: 'dummy' type: 'DummyData' " + text));
    try {
      layer.SetUp({}, three);
      ADD_FAILURE() << "expected an error for " << text;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("layer 'dummy'"), std::string::npos) << what;
      EXPECT_NE(what.find(fragment), std::string::npos) << what;
    }
  };
  expect_error("dummy_data_param { shape { dim: 1 } shape { dim: 2 } }", "shape");
  expect_error("dummy_data_param { }", "shape");
  expect_error("dummy_data_param { num: 1 channels: 1 height: 1 }", "width");
  expect_error("dummy_data_param { shape { dim: 1 } num: 1 channels: 1 height: 1 width: 1 }",
               "not both");
  expect_error("dummy_data_param { shape { dim: 1 } data_filler { type: 'constant' } "
               "data_filler { type: 'constant' } }",
               "data_filler");
  expect_error("dummy_data_param { shape { dim: 1 } data_filler { type: 'nonsense' } }",
               "nonsense");
}

}  // namespace caffe
