#include <gtest/gtest.h>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/flatten_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

vector<int64_t> FlattenedShape(const std::string& flatten_param) {
  Blob bottom({2, 3, 4, 5}), top;
  FlattenLayer layer(ParseLayer("name: 'f' type: 'Flatten' " + flatten_param));
  layer.SetUp({&bottom}, {&top});
  return top.shape();
}

}  // namespace

TEST(FlattenLayerTest, Shapes) {
  EXPECT_EQ(FlattenedShape(""), (vector<int64_t>{2, 60}));
  EXPECT_EQ(FlattenedShape("flatten_param { axis: 2 }"), (vector<int64_t>{2, 3, 20}));
  EXPECT_EQ(FlattenedShape("flatten_param { axis: 1 end_axis: 2 }"),
            (vector<int64_t>{2, 12, 5}));
  EXPECT_EQ(FlattenedShape("flatten_param { axis: 0 end_axis: -2 }"), (vector<int64_t>{24, 5}));
  EXPECT_EQ(FlattenedShape("flatten_param { axis: -3 end_axis: -2 }"),
            (vector<int64_t>{2, 12, 5}));
  EXPECT_EQ(FlattenedShape("flatten_param { axis: 3 }"), (vector<int64_t>{2, 3, 4, 5}));
}

TEST(FlattenLayerTest, SharesDataAndDiff) {
  Blob bottom({2, 3, 2}), top;
  FillUniform(&bottom, -1, 1);
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer("name: 'f' type: 'Flatten'"));
  EXPECT_STREQ(layer->type(), "Flatten");
  layer->SetUp({&bottom}, {&top});
  layer->Forward({&bottom}, {&top});
  EXPECT_EQ(top.shape(), (vector<int64_t>{2, 6}));
  EXPECT_EQ(top.cpu_data(), bottom.cpu_data());
  EXPECT_EQ(top.cpu_diff(), bottom.cpu_diff());
}

TEST(FlattenLayerTest, Gradient) {
  Blob bottom({2, 3, 2}), top;
  FillUniform(&bottom, -1, 1);
  FlattenLayer layer(ParseLayer("name: 'f' type: 'Flatten'"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&top});
  EXPECT_EQ(checker.checked(), 12);
}

TEST(FlattenLayerTest, BadAxesAndInPlaceAreErrors) {
  Blob bottom({2, 3, 4}), top;
  auto expect_error = [&](const std::string& text) {
    FlattenLayer layer(ParseLayer("name: 'f' type: 'Flatten' " + text));
    try {
      layer.SetUp({&bottom}, {&top});
      ADD_FAILURE() << "expected an error for " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("layer 'f'"), std::string::npos) << e.what();
    }
  };
  expect_error("flatten_param { axis: 3 }");
  expect_error("flatten_param { end_axis: -4 }");
  expect_error("flatten_param { axis: 2 end_axis: 0 }");
  FlattenLayer layer(ParseLayer("name: 'f' type: 'Flatten'"));
  EXPECT_THROW(layer.SetUp({&bottom}, {&bottom}), Error);
}

}  // namespace caffe
