// Registers the layer types that come in several engines and picks one per layer from
// its `engine` field and the Context the layer is created for:
//   CAFFE    the reference implementation (im2col + GEMM, plain loops; own kernels on
//            the GPU).
//   DNNL     oneDNN on the CPU; a caffe::Error naming the layer when the build has no
//            oneDNN (USE_DNNL off).
//   CUDNN    cuDNN on the GPU (Convolution, Pooling, LRN, ReLU, Sigmoid, TanH, Softmax,
//            BatchNorm); a caffe::Error naming the layer when the build has no cuDNN
//            (USE_CUDNN off). The cuDNN classes derive from the reference ones, so a
//            CPU-mode net with `engine: CUDNN` runs the reference CPU code. Types with no
//            cuDNN class (Deconvolution) get the reference layer.
//   DEFAULT  what the context's default_engine says. MEASURED (the usual): for a GPU net,
//            CUDNN where it is built and the type has a cuDNN class, else CAFFE (the
//            reference layer has the device kernels; the DNNL classes have none); for a
//            CPU net, DNNL where it is built and was measured faster for the layer type
//            (kDnnlIsFaster below), else CAFFE. CAFFE, DNNL or CUDNN send every DEFAULT
//            layer to that engine (the `caffe` tool's -engine flag).
// The choice reads nothing but the parameter and the context, never the thread count
// or the environment, so the same context always builds the same net.
// InnerProduct has no engine field (BVLC's schema has none); it follows DEFAULT.
#include "caffe/layer_factory.hpp"
#include "caffe/layers/batch_norm_layer.hpp"
#include "caffe/layers/convolution_layer.hpp"
#include "caffe/layers/deconvolution_layer.hpp"
#include "caffe/layers/inner_product_layer.hpp"
#include "caffe/layers/lrn_layer.hpp"
#include "caffe/layers/pooling_layer.hpp"
#include "caffe/layers/relu_layer.hpp"
#include "caffe/layers/sigmoid_layer.hpp"
#include "caffe/layers/softmax_layer.hpp"
#include "caffe/layers/tanh_layer.hpp"

#ifdef USE_DNNL
#include "caffe/layers/dnnl_batch_norm_layer.hpp"
#include "caffe/layers/dnnl_conv_layer.hpp"
#include "caffe/layers/dnnl_inner_product_layer.hpp"
#include "caffe/layers/dnnl_lrn_layer.hpp"
#include "caffe/layers/dnnl_pooling_layer.hpp"
#include "caffe/layers/dnnl_relu_layer.hpp"
#endif

#ifdef USE_CUDNN
#include "caffe/layers/cudnn_activation_layer.hpp"
#include "caffe/layers/cudnn_batch_norm_layer.hpp"
#include "caffe/layers/cudnn_convolution_layer.hpp"
#include "caffe/layers/cudnn_lrn_layer.hpp"
#include "caffe/layers/cudnn_pooling_layer.hpp"
#include "caffe/layers/cudnn_softmax_layer.hpp"
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
static_assert(PoolingParameter::CUDNN == kCudnn && LRNParameter::CUDNN == kCudnn &&
                  ReLUParameter::CUDNN == kCudnn && BatchNormParameter::CUDNN == kCudnn &&
                  SigmoidParameter::CUDNN == kCudnn && TanHParameter::CUDNN == kCudnn &&
                  SoftmaxParameter::CUDNN == kCudnn && SigmoidParameter::CAFFE == kCaffe &&
                  TanHParameter::CAFFE == kCaffe && SoftmaxParameter::CAFFE == kCaffe,
              "engine enums must agree across layer parameters");

#ifdef USE_DNNL
constexpr bool kHaveDnnl = true;
#else
constexpr bool kHaveDnnl = false;
#endif

#ifdef USE_CUDNN
constexpr bool kHaveCudnn = true;
#else
constexpr bool kHaveCudnn = false;
#endif

// Which layer types DEFAULT sends to oneDNN on the CPU: those measured faster with it
// on this project's shapes (bench/README.md, "Convolution engines", has the figures).
// A DEFAULT Pooling layer on oneDNN still runs the reference code where oneDNN has
// only its own reference kernel for the layout (DnnlPoolingLayer).
struct DnnlIsFaster {
  bool convolution, deconvolution, inner_product, pooling, lrn, relu, batch_norm;
};
constexpr DnnlIsFaster kDnnlIsFaster{/*convolution=*/true,
                                     /*deconvolution=*/false,
                                     /*inner_product=*/false,
                                     /*pooling=*/true,
                                     /*lrn=*/true,
                                     /*relu=*/true,
                                     /*batch_norm=*/false};

// The engine the context's default_engine names, or kDefault for the measured choice.
int ForcedDefault(DefaultEngine engine) {
  switch (engine) {
    case DefaultEngine::CAFFE:
      return kCaffe;
    case DefaultEngine::DNNL:
      return kDnnl;
    case DefaultEngine::CUDNN:
      return kCudnn;
    case DefaultEngine::MEASURED:
      break;
  }
  return kDefault;
}

// What a layer type offers besides the reference class.
struct Variants {
  bool dnnl_is_faster;  // DEFAULT on the CPU picks oneDNN (false: no DNNL class, or slower)
  bool has_cudnn;       // there is a cuDNN class; DEFAULT on the GPU picks it
};

// Resolves `engine` (a value of the layer's Engine enum) to kCaffe, kDnnl or kCudnn.
int ChooseEngine(const LayerParameter& param, int engine, const Context& context,
                 Variants variants) {
  if (engine == kDefault) {
    engine = ForcedDefault(context.default_engine());
    if (engine == kDefault) {
      if (context.mode() == Mode::GPU) {
        engine = kHaveCudnn && variants.has_cudnn ? kCudnn : kCaffe;
      } else {
        engine = kHaveDnnl && variants.dnnl_is_faster ? kDnnl : kCaffe;
      }
    }
  }
  if (engine == kDnnl) {
    CAFFE_REQUIRE(kHaveDnnl) << "layer '" << param.name() << "' (" << param.type()
                             << "): engine DNNL requested, but this build has no oneDNN "
                                "(configure with USE_DNNL=ON and libdnnl-dev installed)";
    return kDnnl;
  }
  if (engine == kCaffe) return kCaffe;
  if (engine == kCudnn) {
    CAFFE_REQUIRE(kHaveCudnn) << "layer '" << param.name() << "' (" << param.type()
                              << "): engine CUDNN requested, but this build has no cuDNN "
                                 "(configure with CPU_ONLY=OFF, nvcc and libcudnn installed)";
    // A type without a cuDNN class runs the reference layer (its GPU path), as BVLC
    // Caffe did for such prototxts.
    return variants.has_cudnn ? kCudnn : kCaffe;
  }
  ErrorBuilder() << "layer '" << param.name() << "' (" << param.type() << "): unknown engine "
                 << engine;
}

template <typename Reference, typename Dnnl, typename Cudnn>
shared_ptr<Layer> Create(const LayerParameter& param, int engine, const Context& context,
                         Variants variants) {
  switch (ChooseEngine(param, engine, context, variants)) {
    case kDnnl:
      return std::make_shared<Dnnl>(param);
    case kCudnn:
      return std::make_shared<Cudnn>(param);
    default:
      return std::make_shared<Reference>(param);
  }
}

// Without oneDNN (cuDNN) the "Dnnl" ("Cudnn") aliases name the reference classes only so
// that this compiles: ChooseEngine throws before one would be made. Types with no
// variant of an engine alias it the same way and say so in their Variants.
#ifdef USE_DNNL
#define CAFFE_DNNL_CLASS(dnnl, reference) dnnl
#else
#define CAFFE_DNNL_CLASS(dnnl, reference) reference
#endif
#ifdef USE_CUDNN
#define CAFFE_CUDNN_CLASS(cudnn, reference) cudnn
#else
#define CAFFE_CUDNN_CLASS(cudnn, reference) reference
#endif

shared_ptr<Layer> CreateConvolutionLayer(const LayerParameter& param, const Context& context) {
  return Create<ConvolutionLayer, CAFFE_DNNL_CLASS(DnnlConvolutionLayer, ConvolutionLayer),
                CAFFE_CUDNN_CLASS(CudnnConvolutionLayer, ConvolutionLayer)>(
      param, param.convolution_param().engine(), context,
      {kDnnlIsFaster.convolution, /*has_cudnn=*/true});
}

shared_ptr<Layer> CreateDeconvolutionLayer(const LayerParameter& param, const Context& context) {
  return Create<DeconvolutionLayer, CAFFE_DNNL_CLASS(DnnlDeconvolutionLayer, DeconvolutionLayer),
                DeconvolutionLayer>(param, param.convolution_param().engine(), context,
                                    {kDnnlIsFaster.deconvolution, /*has_cudnn=*/false});
}

shared_ptr<Layer> CreateInnerProductLayer(const LayerParameter& param, const Context& context) {
  return Create<InnerProductLayer, CAFFE_DNNL_CLASS(DnnlInnerProductLayer, InnerProductLayer),
                InnerProductLayer>(param, kDefault, context,
                                   {kDnnlIsFaster.inner_product, /*has_cudnn=*/false});
}

shared_ptr<Layer> CreatePoolingLayer(const LayerParameter& param, const Context& context) {
  return Create<PoolingLayer, CAFFE_DNNL_CLASS(DnnlPoolingLayer, PoolingLayer),
                CAFFE_CUDNN_CLASS(CudnnPoolingLayer, PoolingLayer)>(
      param, param.pooling_param().engine(), context, {kDnnlIsFaster.pooling, /*has_cudnn=*/true});
}

shared_ptr<Layer> CreateLRNLayer(const LayerParameter& param, const Context& context) {
  return Create<LRNLayer, CAFFE_DNNL_CLASS(DnnlLRNLayer, LRNLayer),
                CAFFE_CUDNN_CLASS(CudnnLRNLayer, LRNLayer)>(
      param, param.lrn_param().engine(), context, {kDnnlIsFaster.lrn, /*has_cudnn=*/true});
}

shared_ptr<Layer> CreateReLULayer(const LayerParameter& param, const Context& context) {
  return Create<ReLULayer, CAFFE_DNNL_CLASS(DnnlReLULayer, ReLULayer),
                CAFFE_CUDNN_CLASS(CudnnReLULayer, ReLULayer)>(
      param, param.relu_param().engine(), context, {kDnnlIsFaster.relu, /*has_cudnn=*/true});
}

shared_ptr<Layer> CreateBatchNormLayer(const LayerParameter& param, const Context& context) {
  return Create<BatchNormLayer, CAFFE_DNNL_CLASS(DnnlBatchNormLayer, BatchNormLayer),
                CAFFE_CUDNN_CLASS(CudnnBatchNormLayer, BatchNormLayer)>(
      param, param.batch_norm_param().engine(), context,
      {kDnnlIsFaster.batch_norm, /*has_cudnn=*/true});
}

// No oneDNN variants: their Engine enums have no DNNL value.
shared_ptr<Layer> CreateSigmoidLayer(const LayerParameter& param, const Context& context) {
  return Create<SigmoidLayer, SigmoidLayer, CAFFE_CUDNN_CLASS(CudnnSigmoidLayer, SigmoidLayer)>(
      param, param.sigmoid_param().engine(), context, {/*dnnl_is_faster=*/false, /*has_cudnn=*/true});
}

shared_ptr<Layer> CreateTanHLayer(const LayerParameter& param, const Context& context) {
  return Create<TanHLayer, TanHLayer, CAFFE_CUDNN_CLASS(CudnnTanHLayer, TanHLayer)>(
      param, param.tanh_param().engine(), context, {/*dnnl_is_faster=*/false, /*has_cudnn=*/true});
}

shared_ptr<Layer> CreateSoftmaxLayer(const LayerParameter& param, const Context& context) {
  return Create<SoftmaxLayer, SoftmaxLayer, CAFFE_CUDNN_CLASS(CudnnSoftmaxLayer, SoftmaxLayer)>(
      param, param.softmax_param().engine(), context, {/*dnnl_is_faster=*/false, /*has_cudnn=*/true});
}

#undef CAFFE_DNNL_CLASS
#undef CAFFE_CUDNN_CLASS

}  // namespace

REGISTER_LAYER_CREATOR(Convolution, CreateConvolutionLayer);
REGISTER_LAYER_CREATOR(Deconvolution, CreateDeconvolutionLayer);
REGISTER_LAYER_CREATOR(InnerProduct, CreateInnerProductLayer);
REGISTER_LAYER_CREATOR(Pooling, CreatePoolingLayer);
REGISTER_LAYER_CREATOR(LRN, CreateLRNLayer);
REGISTER_LAYER_CREATOR(ReLU, CreateReLULayer);
REGISTER_LAYER_CREATOR(BatchNorm, CreateBatchNormLayer);
REGISTER_LAYER_CREATOR(Sigmoid, CreateSigmoidLayer);
REGISTER_LAYER_CREATOR(TanH, CreateTanHLayer);
REGISTER_LAYER_CREATOR(Softmax, CreateSoftmaxLayer);

}  // namespace caffe
