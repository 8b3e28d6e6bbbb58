#include <gtest/gtest.h>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/memory_data_layer.hpp"
#include "test_util.hpp"

namespace caffe {

namespace {

LayerParameter MemoryDataParam(int batch) {
  return ParseLayer("name: 'mem' type: 'MemoryData' top: 'data' top: 'label' "
                    "memory_data_param { batch_size: " + std::to_string(batch) +
                    " channels: 2 height: 1 width: 3 }");
}

}  // namespace

TEST(MemoryDataLayerTest, ServesBatchesInOrderAndWrapsAround) {
  shared_ptr<Layer> layer = LayerRegistry::CreateLayer(MemoryDataParam(2));
  auto* memory = dynamic_cast<MemoryDataLayer*>(layer.get());
  ASSERT_NE(memory, nullptr);
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer->SetUp({}, tops);
  EXPECT_EQ(data.shape(), (vector<int64_t>{2, 2, 1, 3}));
  EXPECT_EQ(label.shape(), (vector<int64_t>{2}));

  // Four examples of 6 values each: example e holds 10e + position.
  vector<float> values(4 * 6), labels{5, 6, 7, 8};
  for (int e = 0; e < 4; ++e) {
    for (int i = 0; i < 6; ++i) values[e * 6 + i] = 10.f * e + i;
  }
  memory->Reset(values.data(), labels.data(), 4);
  values.assign(values.size(), -1.f);  // the layer keeps its own copy
  for (int pass = 0; pass < 3; ++pass) {
    const int first = (pass % 2) * 2;
    layer->Forward({}, tops);
    for (int e = 0; e < 2; ++e) {
      EXPECT_EQ(label.cpu_data()[e], 5 + first + e) << "pass " << pass;
      for (int i = 0; i < 6; ++i) {
        EXPECT_EQ(data.cpu_data()[e * 6 + i], 10.f * (first + e) + i) << "pass " << pass;
      }
    }
  }
}

TEST(MemoryDataLayerTest, BatchSizeChangeReshapesAndRestarts) {
  MemoryDataLayer layer(MemoryDataParam(2));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  vector<float> values(4 * 6, 1.f), labels{0, 1, 2, 3};
  layer.Reset(values.data(), labels.data(), 4);
  layer.Forward({}, tops);
  layer.set_batch_size(4);
  layer.Reshape({}, tops);
  layer.Forward({}, tops);
  EXPECT_EQ(data.shape(0), 4);
  for (int e = 0; e < 4; ++e) EXPECT_EQ(label.cpu_data()[e], e);
  EXPECT_THROW(layer.set_batch_size(3), Error);  // 3 does not divide 4
}

TEST(MemoryDataLayerTest, BadUseIsAClearError) {
  MemoryDataLayer layer(MemoryDataParam(3));
  Blob data, label;
  vector<Blob*> tops{&data, &label};
  layer.SetUp({}, tops);
  try {
    layer.Forward({}, tops);
    FAIL() << "expected an error before any Reset";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'mem'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("set_input_arrays"), std::string::npos) << e.what();
  }
  vector<float> values(4 * 6), labels(4);
  EXPECT_THROW(layer.Reset(values.data(), labels.data(), 4), Error);  // not a multiple of 3
  MemoryDataLayer unsized(ParseLayer("name: 'm' type: 'MemoryData' top: 'd' top: 'l' "
                                     "memory_data_param { batch_size: 2 channels: 1 }"));
  EXPECT_THROW(unsized.SetUp({}, tops), Error);
}

}  // namespace caffe
