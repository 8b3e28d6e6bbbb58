"""Detector: a Net that classifies windows cropped from images (R-CNN style), each
window optionally widened by context padding, filled with the mean beyond the image."""
import numpy as np

from .io import image_transformer, load_image, resize_image
from .pycaffe import Net
from ._caffe import TEST


class Detector(Net):
    """Windows are (ymin, xmin, ymax, xmax) in pixels, the maxima exclusive. Each
    crop is warped to the input blob's H x W; mean, scales and channel swap
    configure a Transformer on the first input blob (see caffe.io.Transformer)."""

    def __init__(self, model_file, pretrained_file, mean=None, input_scale=None,
                 raw_scale=None, channel_swap=None, context_pad=None):
        Net.__init__(self, model_file, pretrained_file, TEST)
        in_ = self.inputs[0]
        self.transformer = image_transformer(in_, self.blobs[in_].data.shape, mean,
                                             input_scale, raw_scale, channel_swap)
        self.configure_crop(context_pad)

    def detect_windows(self, images_windows):
        """images_windows: (image filename, N x 4 windows) pairs. Returns one dict per
        window, in order: {'window', 'prediction' (first output blob), 'filename'}."""
        images_windows = [(name, np.asarray(windows, dtype=int).reshape(-1, 4))
                          for name, windows in images_windows]
        in_ = self.inputs[0]
        color = self.blobs[in_].data.shape[1] != 1
        crops = []
        for filename, windows in images_windows:
            image = load_image(filename, color=color)
            crops.extend(self.crop(image, window) for window in windows)
        if not crops:
            raise ValueError("detect_windows: expected at least one window, found none")

        caffe_in = np.stack([self.transformer.preprocess(in_, crop) for crop in crops])
        predictions = self.forward_all(**{in_: caffe_in})[self.outputs[0]]

        detections = []
        for filename, windows in images_windows:
            for window in windows:
                detections.append({"window": window, "prediction": predictions[len(detections)],
                                   "filename": filename})
        return detections

    def detect_selective_search(self, image_fnames):
        raise NotImplementedError(
            "detect_selective_search: selective search (a MATLAB tool) is not available "
            "in caffe-iwp; compute windows elsewhere and call detect_windows")

    def crop(self, im, window):
        """The image region of window; with context padding, the window widened so
        that after warping to the input size it keeps context_pad pixels of context
        on each side, with the mean where that context falls outside the image."""
        window = np.asarray(window, dtype=int)
        if not self.context_pad:
            crop = im[window[0]:window[2], window[1]:window[3]]
            if crop.size == 0:
                raise ValueError("crop: window {} is empty inside the {} image".format(
                    window.tolist(), im.shape[:2]))
            return crop

        crop_size = self.crop_dims[:2]
        scale = crop_size / (crop_size - 2.0 * self.context_pad)
        half = (window[2:] - window[:2] + 1) / 2.0
        center = window[:2] + half
        box = np.round(np.concatenate([center - scale * half, center + scale * half]))
        full = box[2:] - box[:2] + 1
        warp = crop_size / full
        # Rows / columns of mean to the top and left, where the box leaves the image.
        pad = np.round(np.maximum(0, -box[:2]) * warp).astype(int)

        im_h, im_w = im.shape[:2]
        box = np.clip(box, 0, [im_h, im_w, im_h, im_w]).astype(int)
        clipped = box[2:] - box[:2] + 1
        size = np.minimum(np.round(clipped * warp).astype(int), crop_size - pad)
        context = im[box[0]:box[2], box[1]:box[3]]
        if context.size == 0 or min(size) < 1:
            raise ValueError("crop: window {} with context lies outside the {} image".format(
                window.tolist(), im.shape[:2]))

        crop = np.ones(self.crop_dims, dtype=np.float32) * self.crop_mean
        crop[pad[0]:pad[0] + size[0], pad[1]:pad[1] + size[1]] = resize_image(context, size)
        return crop

    def configure_crop(self, context_pad):
        """Sets the crop size (the input blob in image layout, H x W x K) and, for
        context padding, the mean in image layout and range to pad with."""
        in_ = self.inputs[0]
        to_image = np.argsort(self.transformer.transpose[in_])
        self.crop_dims = np.array(self.blobs[in_].data.shape[1:])[to_image]
        self.context_pad = context_pad
        if not context_pad:
            return
        mean = self.transformer.mean.get(in_)
        if mean is None:
            self.crop_mean = np.zeros(self.crop_dims, dtype=np.float32)
            return
        crop_mean = mean.transpose(to_image)
        channel_swap = self.transformer.channel_swap.get(in_)
        if channel_swap is not None:
            crop_mean = crop_mean[:, :, np.argsort(channel_swap)]
        raw_scale = self.transformer.raw_scale.get(in_)
        if raw_scale is not None:
            crop_mean = crop_mean / raw_scale
        self.crop_mean = crop_mean
