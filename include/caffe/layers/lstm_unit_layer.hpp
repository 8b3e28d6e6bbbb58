// LSTMUnit: one timestep of an LSTM's cell, BVLC's `LSTMUnit` (no parameters). Bottoms:
// c_prev (1 x N x D), the gate inputs x (1 x N x 4D: for each stream the D input-gate,
// D forget-gate, D output-gate and D candidate values, in that order) and cont (1 x N).
// Tops c and h (1 x N x D):
//   i = sigmoid(x_i), f = sigmoid(x_f), o = sigmoid(x_o), g = tanh(x_g)
//   c = cont f c_prev + i g,   h = o tanh(c)
// cont is 0 where a sequence starts, so the previous cell is forgotten there. Backward
// gives c_prev and x their gradients and refuses to give one to cont, an indicator.
// Not in place: backward reads the bottoms, from which it recomputes the gates.
#ifndef CAFFE_LAYERS_LSTM_UNIT_LAYER_HPP_
#define CAFFE_LAYERS_LSTM_UNIT_LAYER_HPP_

#include <cmath>
#include <cstdint>

#include "caffe/layer.hpp"

#ifdef __CUDACC__
#define CAFFE_LSTM_HD __host__ __device__
#else
#define CAFFE_LSTM_HD
#endif

namespace caffe {

class LSTMUnitLayer : public Layer {
 public:
  explicit LSTMUnitLayer(const LayerParameter& param) : Layer(param) {}
  void Reshape(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  const char* type() const override { return "LSTMUnit"; }
  int ExactNumBottomBlobs() const override { return 3; }
  int ExactNumTopBlobs() const override { return 2; }
  // cont says where sequences start; it has no gradient.
  bool AllowForceBackward(int bottom_index) const override { return bottom_index != 2; }

 protected:
  void Forward_cpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_cpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#ifdef USE_CUDA
  void Forward_gpu(const vector<Blob*>& bottom, const vector<Blob*>& top) override;
  void Backward_gpu(const vector<Blob*>& top, const vector<bool>& propagate_down,
                    const vector<Blob*>& bottom) override;
#endif

 private:
  // Both backward passes start here: a net asks for cont's gradient only when cont's
  // producer learns, which a sequence indicator's should not.
  void RefuseGradientToCont(const vector<bool>& propagate_down) const;

  int64_t hidden_dim_ = 0;  // D
};

// The per-element arithmetic, written once: the CPU passes run it in a host loop and
// the GPU passes (lstm_unit_layer.cu) in a device kernel, so the CPU tests check the
// arithmetic the device runs. Element e < N D is stream e / D, unit e % D.
CAFFE_LSTM_HD inline float LSTMGateSigmoid(float x) { return 1.f / (1.f + expf(-x)); }

// The four activated gates of element e, recomputed from the gate inputs.
struct LSTMGates {
  float input, forget, output, candidate;
};
CAFFE_LSTM_HD inline LSTMGates ActivateLSTMGates(const float* gate_inputs, int64_t dim, int64_t e) {
  const int64_t stream = e / dim, unit = e % dim;
  const float* x = gate_inputs + stream * 4 * dim;
  return {LSTMGateSigmoid(x[unit]), LSTMGateSigmoid(x[dim + unit]),
          LSTMGateSigmoid(x[2 * dim + unit]), tanhf(x[3 * dim + unit])};
}

struct LSTMUnitForward {
  const float* c_prev;
  const float* gate_inputs;
  const float* cont;
  float* c;
  float* h;
  int64_t dim;
  CAFFE_LSTM_HD void operator()(int64_t e) const {
    const LSTMGates g = ActivateLSTMGates(gate_inputs, dim, e);
    const float cell = cont[e / dim] * g.forget * c_prev[e] + g.input * g.candidate;
    c[e] = cell;
    h[e] = g.output * tanhf(cell);
  }
};

// dc and dh are the tops' gradients; dc_prev or dgate_inputs is null when that bottom
// gets none. Each element writes its own four gate gradients, so elements are independent.
struct LSTMUnitBackward {
  const float* c_prev;
  const float* gate_inputs;
  const float* cont;
  const float* dc;
  const float* dh;
  float* dc_prev;
  float* dgate_inputs;
  int64_t dim;
  CAFFE_LSTM_HD void operator()(int64_t e) const {
    const LSTMGates g = ActivateLSTMGates(gate_inputs, dim, e);
    const float keep = cont[e / dim];
    const float tanh_cell = tanhf(keep * g.forget * c_prev[e] + g.input * g.candidate);
    // The cell's total gradient: its own top's and the one through h = o tanh(c).
    const float dcell = dc[e] + dh[e] * g.output * (1.f - tanh_cell * tanh_cell);
    if (dc_prev) dc_prev[e] = dcell * keep * g.forget;
    if (dgate_inputs) {
      const int64_t stream = e / dim, unit = e % dim;
      float* dx = dgate_inputs + stream * 4 * dim;
      dx[unit] = dcell * g.candidate * g.input * (1.f - g.input);
      dx[dim + unit] = dcell * keep * c_prev[e] * g.forget * (1.f - g.forget);
      dx[2 * dim + unit] = dh[e] * tanh_cell * g.output * (1.f - g.output);
      dx[3 * dim + unit] = dcell * g.input * (1.f - g.candidate * g.candidate);
    }
  }
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_LSTM_UNIT_LAYER_HPP_
