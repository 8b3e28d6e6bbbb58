#include <gtest/gtest.h>

#include <algorithm>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/split_layer.hpp"
#include "gradient_checker.hpp"
#include "test_util.hpp"

namespace caffe {

TEST(SplitLayerTest, TopsShareTheBottomData) {
  Blob bottom({2, 3}), a, b;
  FillUniform(&bottom, -1, 1);
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(ParseLayer("name: 's' type: 'Split'"));
  EXPECT_STREQ(layer->type(), "Split");
  layer->SetUp({&bottom}, {&a, &b});
  layer->Forward({&bottom}, {&a, &b});
  EXPECT_EQ(a.shape(), bottom.shape());
  EXPECT_EQ(b.shape(), bottom.shape());
  EXPECT_EQ(a.cpu_data(), bottom.cpu_data());
  EXPECT_EQ(b.cpu_data(), bottom.cpu_data());
  // Diffs stay separate so each consumer can write its own.
  EXPECT_NE(a.cpu_diff(), b.cpu_diff());
  // A bottom that grows is followed on the next pass.
  bottom.Reshape({4, 5});
  layer->Forward({&bottom}, {&a, &b});
  EXPECT_EQ(a.shape(), bottom.shape());
  EXPECT_EQ(a.cpu_data(), bottom.cpu_data());
}

TEST(SplitLayerTest, BackwardSumsTopDiffs) {
  Blob bottom({3}), a, b, c;
  SplitLayer layer(ParseLayer("name: 's' type: 'Split'"));
  layer.SetUp({&bottom}, {&a, &b, &c});
  for (int i = 0; i < 3; ++i) {
    a.mutable_cpu_diff()[i] = 1 + i;
    b.mutable_cpu_diff()[i] = 10 * (1 + i);
    c.mutable_cpu_diff()[i] = 100;
    bottom.mutable_cpu_diff()[i] = -7;  // overwritten, not accumulated
  }
  layer.Backward({&a, &b, &c}, {true}, {&bottom});
  EXPECT_FLOAT_EQ(bottom.cpu_diff()[0], 111);
  EXPECT_FLOAT_EQ(bottom.cpu_diff()[1], 122);
  EXPECT_FLOAT_EQ(bottom.cpu_diff()[2], 133);
}

// Over several L1 pieces, and with the bottom's diff shared with the first top's (as
// a memory plan may arrange): the tops' diffs added in top order, element by element.
TEST(SplitLayerTest, BackwardOverManyPiecesAndSharedFirstDiff) {
  const int64_t count = 5 * 4096 + 13;
  for (const bool shared : {false, true}) {
    Blob bottom({count}), a, b, c;
    SplitLayer layer(ParseLayer("name: 's' type: 'Split'"));
    layer.SetUp({&bottom}, {&a, &b, &c});
    if (shared) bottom.ShareDiff(a);
    Blob da({count}), db({count}), dc({count});
    FillUniform(&da, -1, 1, 21);
    FillUniform(&db, -1, 1, 22);
    FillUniform(&dc, -1, 1, 23);
    std::copy(da.cpu_data(), da.cpu_data() + count, a.mutable_cpu_diff());
    std::copy(db.cpu_data(), db.cpu_data() + count, b.mutable_cpu_diff());
    std::copy(dc.cpu_data(), dc.cpu_data() + count, c.mutable_cpu_diff());
    layer.Backward({&a, &b, &c}, {true}, {&bottom});
    for (int64_t i = 0; i < count; ++i) {
      const float expected = (da.cpu_data()[i] + db.cpu_data()[i]) + dc.cpu_data()[i];
      ASSERT_EQ(bottom.cpu_diff()[i], expected) << (shared ? "shared, " : "") << i;
    }
  }
}

TEST(SplitLayerTest, Gradient) {
  Blob bottom({2, 3, 2}), a, b;
  FillUniform(&bottom, -1, 1);
  SplitLayer layer(ParseLayer("name: 's' type: 'Split'"));
  GradientChecker checker(1e-2f, 1e-3f);
  checker.CheckGradient(&layer, {&bottom}, {&a, &b});
  EXPECT_EQ(checker.checked(), 12);
}

TEST(SplitLayerTest, InPlaceIsAnError) {
  Blob bottom({2}), other;
  SplitLayer layer(ParseLayer("name: 's' type: 'Split'"));
  EXPECT_THROW(layer.SetUp({&bottom}, {&other, &bottom}), Error);
  EXPECT_THROW(layer.SetUp({}, {&other}), Error);
}

}  // namespace caffe
