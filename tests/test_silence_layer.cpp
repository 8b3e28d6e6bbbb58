#include <gtest/gtest.h>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/silence_layer.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(SilenceLayerTest, BackwardZeroesRequestedBottomDiffs) {
  Blob a({2, 3}), b({4}), c({1, 2, 2});
  for (Blob* blob : {&a, &b, &c}) {
    for (int i = 0; i < blob->count(); ++i) blob->mutable_cpu_diff()[i] = 7;
  }
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer("name: 's' type: 'Silence'"));
  EXPECT_STREQ(layer->type(), "Silence");
  layer->SetUp({&a, &b, &c}, {});
  EXPECT_EQ(layer->Forward({&a, &b, &c}, {}), 0.f);
  layer->Backward({}, {true, false, true}, {&a, &b, &c});
  for (int i = 0; i < a.count(); ++i) EXPECT_EQ(a.cpu_diff()[i], 0.f);
  for (int i = 0; i < b.count(); ++i) EXPECT_EQ(b.cpu_diff()[i], 7.f);
  for (int i = 0; i < c.count(); ++i) EXPECT_EQ(c.cpu_diff()[i], 0.f);
}

TEST(SilenceLayerTest, TopsOrNoBottomsAreErrors) {
  Blob a({2}), top;
  SilenceLayer layer(ParseLayer("name: 's' type: 'Silence'"));
  EXPECT_THROW(layer.SetUp({&a}, {&top}), Error);
  EXPECT_THROW(layer.SetUp({}, {}), Error);
}

}  // namespace caffe
