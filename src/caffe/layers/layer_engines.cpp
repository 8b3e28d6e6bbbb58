// Registers the layer types that come in several engines and picks one per layer from
// its `engine` field:
//   CAFFE    the reference implementation (im2col + GEMM, plain loops).
//   DNNL     oneDNN on the CPU; a caffe::Error naming the layer when the build has no
//            oneDNN (USE_DNNL off).
//   DEFAULT  DNNL where it is built and was measured faster for that layer type
//            (kDnnlIsFaster below, from bench/conv_engine_bench.cpp), else CAFFE.
// InnerProduct has no engine field (BVLC's schema has none); it follows DEFAULT, which
// is CAFFE for it unless CAFFE_DEFAULT_ENGINE=DNNL.
// The environment variable CAFFE_DEFAULT_ENGINE=CAFFE or =DNNL overrides what DEFAULT
// means for all of these types, to compare engines on a whole net without editing it.
#include <cstdlib>
#include <cstring>

#include "caffe/layer_factory.hpp"
#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/layers/convolution_layer.hpp"
#include "caffe/layers/deconvolution_layer.hpp"
#include "caffe/layers/inner_product_layer.hpp"
#include "caffe/layers/lrn_layer.hpp"
#include "caffe/layers/pooling_layer.hpp"
#include "caffe/layers/relu_layer.hpp"

#ifdef USE_DNNL
#include "caffe/layers/dnnl_batch_norm_layer.hpp"
#include "caffe/layers/dnnl_convolution_layer.hpp"
#include "caffe/layers/dnnl_deconvolution_layer.hpp"
#include "caffe/layers/dnnl_inner_product_layer.hpp"
#include "caffe/layers/dnnl_lrn_layer.hpp"
#include "caffe/layers/dnnl_pooling_layer.hpp"
#include "caffe/layers/dnnl_relu_layer.hpp"
#endif

namespace caffe {

namespace {

// The Engine enums of every parameter message share these numbers.
constexpr int kDefault = ConvolutionParameter::DEFAULT;
constexpr int kCaffe = ConvolutionParameter::CAFFE;
constexpr int kCudnn = ConvolutionParameter::CUDNN;
constexpr int kDnnl = ConvolutionParameter::DNNL;
static_assert(PoolingParameter::DNNL == kDnnl && LRNParameter::DNNL == kDnnl &&
                  ReLUParameter::DNNL == kDnnl && BatchNormParameter::DNNL == kDnnl &&
                  PoolingParameter::CAFFE == kCaffe && LRNParameter::CAFFE == kCaffe &&
                  ReLUParameter::CAFFE == kCaffe && BatchNormParameter::CAFFE == kCaffe,
              "engine enums must agree across layer parameters");

#ifdef USE_DNNL
constexpr bool kHaveDnnl = true;
#else
constexpr bool kHaveDnnl = false;
#endif

// Which layer types DEFAULT sends to oneDNN, from bench/conv_engine_bench (forward +
// backward on LeNet / ResNet-20 / AlexNet shapes; geometric mean per type of reference
// time / DNNL time, two runs on a shared 2-core AVX-512 host, 1 thread | 2 threads):
//   Convolution 1.4-1.6 | 1.3-2.5   (LeNet's small convolutions alone: 0.8-1.0)
//   Pooling 3.5-4.1 | 2.7-3.5, LRN 2.5-2.9 | 2.1-2.8, ReLU 15-22 | 7-11
//   BatchNorm (TRAIN) 1.8-1.9 | 0.7-2.0. With more than one thread DEFAULT keeps the
//   reference BatchNorm (its loops run on the shared OpenMP pool): oneDNN's batch
//   norm synchronises its threads with spinning barriers, and on a loaded host one
//   descheduled thread stalls the rest. ResNet-20 (`caffe time`, synthetic stage,
//   2 threads, load ~17 on 2 cores): its BatchNorm layers took 944-1277 ms per
//   forward-backward with oneDNN, 124-127 ms with the reference loops.
//   InnerProduct 0.67-0.83 | 0.45-0.49: oneDNN runs the same kind of GEMM as OpenBLAS
//   there, plus a per-call overhead that small layers feel.
//   Deconvolution (caffe time on three upsampling layers, batch 16: 64->32 and 32->16
//   channels k4 s2 p1, and 16->8 channels k3 s2 p1 group 2 to 127x127; 1 | 2 threads,
//   two runs): the first two 1.1-1.3x faster on oneDNN, the grouped one 4x slower
//   (oneDNN's forward takes 100-125 ms against 14 ms), the three together 0.61-0.65 |
//   0.69-0.71. DEFAULT stays CAFFE; `engine: DNNL` picks oneDNN per layer.
struct DnnlIsFaster {
  bool convolution, deconvolution, inner_product, pooling, lrn, relu, batch_norm;
};
constexpr DnnlIsFaster kDnnlIsFaster{/*convolution=*/true,
                                     /*deconvolution=*/false,
                                     /*inner_product=*/false,
                                     /*pooling=*/true,
                                     /*lrn=*/true,
                                     /*relu=*/true,
                                     /*batch_norm=*/true};

// CAFFE_DEFAULT_ENGINE, or kDefault when unset.
int DefaultOverride(const LayerParameter& param) {
  const char* value = std::getenv("CAFFE_DEFAULT_ENGINE");
  if (value == nullptr || *value == '\0' || std::strcmp(value, "DEFAULT") == 0) return kDefault;
  if (std::strcmp(value, "CAFFE") == 0) return kCaffe;
  if (std::strcmp(value, "DNNL") == 0) return kDnnl;
  ErrorBuilder() << "layer '" << param.name() << "' (" << param.type()
                 << "): environment variable CAFFE_DEFAULT_ENGINE must be CAFFE, DNNL or "
                    "DEFAULT, found '"
                 << value << "'";
}

// Resolves `engine` (a value of the layer's Engine enum) to kCaffe or kDnnl.
int ChooseEngine(const LayerParameter& param, int engine, bool dnnl_is_faster) {
  if (engine == kDefault) {
    engine = DefaultOverride(param);
    if (engine == kDefault) engine = kHaveDnnl && dnnl_is_faster ? kDnnl : kCaffe;
  }
  if (engine == kDnnl) {
    CAFFE_REQUIRE(kHaveDnnl) << "layer '" << param.name() << "' (" << param.type()
                             << "): engine DNNL requested, but this build has no oneDNN "
                                "(configure with USE_DNNL=ON and libdnnl-dev installed)";
    return kDnnl;
  }
  if (engine == kCaffe) return kCaffe;
  if (engine == kCudnn) {
    // The CUDNN variants are GPU-side; on the host they are the reference code, which
    // is also what a CPU-mode net with a cuDNN prototxt should run.
    return kCaffe;
  }
  ErrorBuilder() << "layer '" << param.name() << "' (" << param.type() << "): unknown engine "
                 << engine;
}

template <typename Reference, typename Dnnl>
shared_ptr<Layer> Create(const LayerParameter& param, int engine, bool dnnl_is_faster) {
  if (ChooseEngine(param, engine, dnnl_is_faster) == kDnnl) return std::make_shared<Dnnl>(param);
  return std::make_shared<Reference>(param);
}

// Without oneDNN the "Dnnl" aliases name the reference classes only so that this
// compiles: ChooseEngine throws before one would be made.
shared_ptr<Layer> CreateConvolutionLayer(const LayerParameter& param) {
#ifdef USE_DNNL
  using Dnnl = DnnlConvolutionLayer;
#else
  using Dnnl = ConvolutionLayer;
#endif
  return Create<ConvolutionLayer, Dnnl>(param, param.convolution_param().engine(),
                                        kDnnlIsFaster.convolution);
}

shared_ptr<Layer> CreateDeconvolutionLayer(const LayerParameter& param) {
#ifdef USE_DNNL
  using Dnnl = DnnlDeconvolutionLayer;
#else
  using Dnnl = DeconvolutionLayer;
#endif
  return Create<DeconvolutionLayer, Dnnl>(param, param.convolution_param().engine(),
                                          kDnnlIsFaster.deconvolution);
}

shared_ptr<Layer> CreateInnerProductLayer(const LayerParameter& param) {
#ifdef USE_DNNL
  using Dnnl = DnnlInnerProductLayer;
#else
  using Dnnl = InnerProductLayer;
#endif
  return Create<InnerProductLayer, Dnnl>(param, kDefault, kDnnlIsFaster.inner_product);
}

shared_ptr<Layer> CreatePoolingLayer(const LayerParameter& param) {
#ifdef USE_DNNL
  using Dnnl = DnnlPoolingLayer;
#else
  using Dnnl = PoolingLayer;
#endif
  return Create<PoolingLayer, Dnnl>(param, param.pooling_param().engine(),
                                    kDnnlIsFaster.pooling);
}

shared_ptr<Layer> CreateLRNLayer(const LayerParameter& param) {
#ifdef USE_DNNL
  using Dnnl = DnnlLRNLayer;
#else
  using Dnnl = LRNLayer;
#endif
  return Create<LRNLayer, Dnnl>(param, param.lrn_param().engine(), kDnnlIsFaster.lrn);
}

shared_ptr<Layer> CreateReLULayer(const LayerParameter& param) {
#ifdef USE_DNNL
  using Dnnl = DnnlReLULayer;
#else
  using Dnnl = ReLULayer;
#endif
  return Create<ReLULayer, Dnnl>(param, param.relu_param().engine(), kDnnlIsFaster.relu);
}

shared_ptr<Layer> CreateBatchNormLayer(const LayerParameter& param) {
#ifdef USE_DNNL
  using Dnnl = DnnlBatchNormLayer;
#else
  using Dnnl = BatchNormLayer;
#endif
  return Create<BatchNormLayer, Dnnl>(param, param.batch_norm_param().engine(),
                                      kDnnlIsFaster.batch_norm && NumThreads() == 1);
}

}  // namespace

REGISTER_LAYER_CREATOR(Convolution, CreateConvolutionLayer);
REGISTER_LAYER_CREATOR(Deconvolution, CreateDeconvolutionLayer);
REGISTER_LAYER_CREATOR(InnerProduct, CreateInnerProductLayer);
REGISTER_LAYER_CREATOR(Pooling, CreatePoolingLayer);
REGISTER_LAYER_CREATOR(LRN, CreateLRNLayer);
REGISTER_LAYER_CREATOR(ReLU, CreateReLULayer);
REGISTER_LAYER_CREATOR(BatchNorm, CreateBatchNormLayer);

}  // namespace caffe
