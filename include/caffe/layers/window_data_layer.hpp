// WindowData: R-CNN's detection fine-tuning input. Reads a window file that lists, per
// image, boxes with a class and their overlap with the ground truth, and fills each
// batch with boxes drawn at random: fg_fraction of the batch (rounded down) from the
// foreground (overlap >= fg_threshold, label = class), the rest, first in the batch,
// from the background (overlap < bg_threshold, label 0). Each box, grown by context_pad
// pixels of context (and made square first in crop_mode "square"), is warped to
// crop_size x crop_size, mirrored at random in TRAIN when mirror is set, and written as
// (pixel - mean) * scale; where the grown box leaves the image the output is 0.
//
// The draws come from the prefetch stream, which the context seeds, so a seed repeats a
// run. The windows are not sharded between ranks: every rank samples from all of them,
// and the solver seeds each rank's context differently, so the ranks' batches differ.
#ifndef CAFFE_LAYERS_WINDOW_DATA_LAYER_HPP_
#define CAFFE_LAYERS_WINDOW_DATA_LAYER_HPP_

#include <string>
#include <vector>

#include "caffe/data/datum_io.hpp"
#include "caffe/layers/base_data_layer.hpp"

namespace caffe {

class WindowDataLayer : public BasePrefetchingDataLayer {
 public:
  explicit WindowDataLayer(const LayerParameter& param) : BasePrefetchingDataLayer(param) {}
  ~WindowDataLayer() override { StopPrefetching(); }
  const char* type() const override { return "WindowData"; }

 protected:
  void DataLayerSetUp(const vector<Blob*>& top) override;
  void LoadBatch(Batch* batch) override;
  // As for Data and ImageData, window_data_param's scale, mean_file, crop_size and
  // mirror override transform_param's when set.
  TransformationParameter transform_param() const override {
    return FoldLegacyTransformParams(layer_param_.transform_param(),
                                     layer_param_.window_data_param());
  }

 private:
  struct Image {
    string path;  // root_folder + the path in the file
    int channels = 0;
    int height = 0;
    int width = 0;
    int line = 0;  // the path's 1-based line in the window file, for messages
  };
  struct Window {
    int image = 0;  // index into images_
    int label = 0;
    int x1 = 0;  // 0-based, inclusive
    int y1 = 0;
    int x2 = 0;
    int y2 = 0;
  };

  // "window file '<source>' line <line>: ", the start of a message about that line.
  string At(int line) const;
  void ReadWindowFile();
  // Fills mean_ from mean_file (its centre crop_size x crop_size) or mean_value.
  void BuildMean(const TransformationParameter& transform);
#ifdef USE_OPENCV
  // Decodes image `index`, checking it against the size the window file gives.
  cv::Mat ReadImage(int index) const;
  // Writes the window's crop, (pixel - mean) * scale, into `item` (channels x crop_size x
  // crop_size, zeroed by the caller), leaving the part outside the image at 0.
  void WarpWindow(const cv::Mat& image, const Window& window, bool mirror, float* item) const;
#endif

  string source_;
  int batch_size_ = 0;
  int foreground_per_batch_ = 0;
  int crop_size_ = 0;
  int context_pad_ = 0;
  bool square_ = false;
  bool mirror_ = false;  // mirror set and the phase is TRAIN
  float scale_ = 1.f;
  int channels_ = 0;  // of every image; the first image's header fixes it
  vector<Image> images_;
  vector<char> image_used_;  // per image: whether a foreground or background window is in it
  vector<Window> foreground_;
  vector<Window> background_;
  vector<float> mean_;  // channels_ x crop_size x crop_size, the value under each output pixel
#ifdef USE_OPENCV
  bool cache_images_ = false;
  vector<cv::Mat> cache_;  // per image, decoded at setup when cache_images (empty if unused)
#endif
};

}  // namespace caffe

#endif  // CAFFE_LAYERS_WINDOW_DATA_LAYER_HPP_
