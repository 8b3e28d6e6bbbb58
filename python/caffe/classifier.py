"""Classifier: a Net that takes H x W x K images and returns class probabilities,
averaged over 10 oversampled crops or from the centre crop alone."""
import numpy as np

from .io import image_transformer, oversample as oversample_crops, resize_image
from .pycaffe import Net
from ._caffe import TEST


class Classifier(Net):
    """Images are resized to image_dims (default: the input blob's H x W), then
    cropped to the input blob's H x W; mean, scales and channel swap configure a
    Transformer on the first input blob (see caffe.io.Transformer)."""

    def __init__(self, model_file, pretrained_file, image_dims=None, mean=None,
                 input_scale=None, raw_scale=None, channel_swap=None):
        Net.__init__(self, model_file, pretrained_file, TEST)
        in_ = self.inputs[0]
        self.transformer = image_transformer(in_, self.blobs[in_].data.shape, mean,
                                             input_scale, raw_scale, channel_swap)
        self.crop_dims = np.array(self.blobs[in_].data.shape[2:])
        if image_dims is None or len(image_dims) == 0:
            image_dims = self.crop_dims
        self.image_dims = tuple(int(d) for d in image_dims)
        if len(self.image_dims) != 2 or any(np.less(self.image_dims, self.crop_dims)):
            raise ValueError("image_dims: expected (height, width) of at least the input's "
                             "{}, found {}".format(tuple(self.crop_dims), self.image_dims))

    def predict(self, inputs, oversample=True):
        """inputs: H x W x K images (a list, or an N x H x W x K array).
        Returns an N x classes array of the first output blob."""
        in_ = self.inputs[0]
        channels = self.blobs[in_].data.shape[1]
        images = [np.asarray(im) for im in inputs]
        if not images:
            raise ValueError("predict: expected at least one image, found none")
        for im in images:
            if im.ndim != 3 or im.shape[2] != channels:
                raise ValueError("predict: expected H x W x {} images, found shape {}".format(
                    channels, im.shape))
        resized = np.stack([resize_image(im, self.image_dims) for im in images])

        if oversample:
            crops = oversample_crops(resized, self.crop_dims)
        else:
            y, x = (np.array(self.image_dims) - self.crop_dims) // 2
            crops = resized[:, y:y + self.crop_dims[0], x:x + self.crop_dims[1]]

        caffe_in = np.stack([self.transformer.preprocess(in_, crop) for crop in crops])
        predictions = self.forward_all(**{in_: caffe_in})[self.outputs[0]]
        predictions = predictions.reshape(len(crops), -1)
        if oversample:
            predictions = predictions.reshape(len(images), 10, -1).mean(axis=1)
        return predictions
