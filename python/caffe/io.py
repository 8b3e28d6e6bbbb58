"""Image and protobuf helpers of pycaffe: the Transformer that turns H x W x K images
into net input (and back), image loading and resizing, oversampled crops, and
conversions between numpy arrays and BlobProto / Datum messages."""
import numpy as np
from PIL import Image

from .proto import caffe_pb2


def _shape_error(what, expected, found):
    return ValueError("{}: expected {}, found {}".format(what, expected, found))


class Transformer:
    """Preprocesses images for the net's inputs, given as {input name: blob shape}.

    preprocess() applies, in this order: resize to the input's H x W, transpose,
    channel swap, raw scale, mean subtraction, input scale; deprocess() undoes them
    in reverse. The mean is therefore given in the net's layout and channel order
    and in the raw-scaled range.
    """

    def __init__(self, inputs):
        self.inputs = {name: tuple(int(d) for d in shape) for name, shape in inputs.items()}
        self.transpose = {}
        self.channel_swap = {}
        self.raw_scale = {}
        self.mean = {}
        self.input_scale = {}

    def _check_input(self, in_):
        if in_ not in self.inputs:
            raise ValueError("unknown input {!r}: the Transformer knows {}".format(
                in_, sorted(self.inputs)))

    def _channels(self, in_):
        shape = self.inputs[in_]
        if len(shape) < 2:
            raise ValueError("input {!r} of shape {} has no channel axis".format(in_, shape))
        return shape[1]

    def set_transpose(self, in_, order):
        """Axis order that takes an image (e.g. H x W x K) to the net's (K x H x W)."""
        self._check_input(in_)
        order = tuple(int(a) for a in order)
        ndim = len(self.inputs[in_]) - 1
        if sorted(order) != list(range(ndim)):
            raise _shape_error("transpose order of input {!r}".format(in_),
                               "a permutation of {} axes".format(ndim), order)
        self.transpose[in_] = order

    def set_channel_swap(self, in_, order):
        """Channel order of the net, e.g. (2, 1, 0) to feed RGB images to a BGR net."""
        self._check_input(in_)
        order = tuple(int(c) for c in order)
        channels = self._channels(in_)
        if sorted(order) != list(range(channels)):
            raise _shape_error("channel swap of input {!r}".format(in_),
                               "a permutation of {} channels".format(channels), order)
        self.channel_swap[in_] = order

    def set_raw_scale(self, in_, scale):
        """Factor from the loaded range to the net's raw range (255 for [0,1] -> [0,255])."""
        self._check_input(in_)
        self.raw_scale[in_] = scale

    def set_mean(self, in_, mean):
        """Mean to subtract: one value per channel, or a C x H x W (or H x W) array;
        an array of another H x W is resized to the input's."""
        self._check_input(in_)
        mean = np.asarray(mean, dtype=np.float32)
        channels = self._channels(in_)
        if mean.ndim == 1:
            if mean.shape[0] != channels:
                raise _shape_error("mean of input {!r}".format(in_),
                                   "{} per-channel values".format(channels), mean.shape[0])
            mean = mean[:, np.newaxis, np.newaxis]
        else:
            if mean.ndim == 2:
                mean = mean[np.newaxis]
            if mean.ndim != 3:
                raise _shape_error("mean of input {!r}".format(in_),
                                   "a C vector or a C x H x W array", mean.shape)
            if mean.shape[0] != channels:
                raise _shape_error("mean channels of input {!r}".format(in_), channels,
                                   mean.shape[0])
            in_dims = self.inputs[in_][2:]
            if mean.shape[1:] != in_dims:
                mean = resize_image(mean.transpose(1, 2, 0), in_dims).transpose(2, 0, 1)
        self.mean[in_] = mean

    def set_input_scale(self, in_, scale):
        """Factor applied last, after mean subtraction."""
        self._check_input(in_)
        self.input_scale[in_] = scale

    def preprocess(self, in_, data):
        """H x W x K image -> net input (one item of the batch, e.g. K x H x W float32)."""
        self._check_input(in_)
        caffe_in = np.array(data, dtype=np.float32)
        shape = self.inputs[in_]
        if len(shape) == 4:
            if caffe_in.ndim != 3:
                raise _shape_error("data for input {!r}".format(in_),
                                   "an H x W x K image", caffe_in.shape)
            if caffe_in.shape[:2] != shape[2:]:
                caffe_in = resize_image(caffe_in, shape[2:])
        if in_ in self.transpose:
            caffe_in = caffe_in.transpose(self.transpose[in_])
        if in_ in self.channel_swap:
            caffe_in = caffe_in[list(self.channel_swap[in_])]
        if self.raw_scale.get(in_) is not None:
            caffe_in *= self.raw_scale[in_]
        if in_ in self.mean:
            caffe_in -= self.mean[in_]
        if self.input_scale.get(in_) is not None:
            caffe_in *= self.input_scale[in_]
        return caffe_in

    def deprocess(self, in_, data):
        """Net input (K x H x W, or 1 x K x H x W) -> H x W x K image in the loaded range."""
        self._check_input(in_)
        image = np.array(data, dtype=np.float32)
        # Only a batch axis of one is dropped: squeezing would also drop a single
        # channel, which the transpose still needs.
        if image.ndim == len(self.inputs[in_]) and image.shape[0] == 1:
            image = image[0]
        if self.input_scale.get(in_) is not None:
            image /= self.input_scale[in_]
        if in_ in self.mean:
            image += self.mean[in_]
        if self.raw_scale.get(in_) is not None:
            image /= self.raw_scale[in_]
        if in_ in self.channel_swap:
            image = image[np.argsort(self.channel_swap[in_])]
        if in_ in self.transpose:
            image = image.transpose(np.argsort(self.transpose[in_]))
        return image


def image_transformer(in_, shape, mean=None, input_scale=None, raw_scale=None,
                      channel_swap=None):
    """A Transformer for H x W x K images into input `in_` of `shape`, as Classifier and
    Detector set one up: transposed to K x H x W, and each given setting applied."""
    transformer = Transformer({in_: shape})
    transformer.set_transpose(in_, (2, 0, 1))
    if mean is not None:
        transformer.set_mean(in_, mean)
    if input_scale is not None:
        transformer.set_input_scale(in_, input_scale)
    if raw_scale is not None:
        transformer.set_raw_scale(in_, raw_scale)
    if channel_swap is not None:
        transformer.set_channel_swap(in_, channel_swap)
    return transformer


def load_image(filename, color=True):
    """Reads an image file as float32 in [0, 1]: H x W x 3 (RGB; grey is repeated,
    alpha dropped), or H x W x 1 when color is False. 16-bit grey is scaled by 1/65535."""
    with Image.open(filename) as im:
        if im.mode in ("I", "F") or im.mode.startswith("I;16"):
            grey = np.asarray(im, dtype=np.float32)
            if im.mode != "F":
                grey /= 65535.0
            img = grey[:, :, np.newaxis]
            return np.tile(img, (1, 1, 3)) if color else img
        pixels = np.asarray(im.convert("RGB" if color else "L"), dtype=np.float32)
    img = pixels / 255.0
    return img if color else img[:, :, np.newaxis]


def _nearest_indices(n_in, n_out):
    # The input pixel whose extent holds each output pixel's centre, in integers
    # so that exact ratios (2x, 1/2x) pick the same pixel every time.
    return np.minimum(((2 * np.arange(n_out) + 1) * n_in) // (2 * n_out), n_in - 1)


def _interpolate_axis(im, axis, n_out):
    n_in = im.shape[axis]
    # Pixel centres aligned, positions clamped to the edge pixels: every output is a
    # convex combination of two neighbours, so no value leaves the input's range.
    pos = np.clip((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0, n_in - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, n_in - 1)
    weight_shape = [1] * im.ndim
    weight_shape[axis] = n_out
    w = (pos - lo).reshape(weight_shape)
    return np.take(im, lo, axis) * (1 - w) + np.take(im, hi, axis) * w


def resize_image(im, new_dims, interp_order=1):
    """Resizes an H x W x K image to new_dims (height, width) as float32:
    interp_order 0 is nearest neighbour, any other order bilinear."""
    im = np.asarray(im)
    if im.ndim != 3:
        raise _shape_error("resize_image", "an H x W x K image", im.shape)
    new_dims = tuple(int(d) for d in new_dims)
    if len(new_dims) != 2 or min(new_dims) < 1:
        raise _shape_error("resize_image new_dims", "(height, width) >= 1", new_dims)
    if min(im.shape) < 1:
        raise _shape_error("resize_image", "a non-empty image", im.shape)
    if interp_order == 0:
        rows = _nearest_indices(im.shape[0], new_dims[0])
        cols = _nearest_indices(im.shape[1], new_dims[1])
        return im[rows][:, cols].astype(np.float32)
    resized = _interpolate_axis(im.astype(np.float64), 0, new_dims[0])
    resized = _interpolate_axis(resized, 1, new_dims[1])
    # A guarantee rather than a correction: rounding in the blend could otherwise
    # step a last bit past an extreme.
    return np.clip(resized, im.min(), im.max()).astype(np.float32)


def oversample(images, crop_dims):
    """10 crops of crop_dims (height, width) per H x W x K image, as BVLC orders them:
    top-left, top-right, bottom-left, bottom-right, centre, then the same five
    mirrored left-right. Returns a float32 array (10 * N, h, w, K)."""
    images = [np.asarray(im) for im in images]
    if not images:
        raise ValueError("oversample: expected at least one image, found none")
    shape = images[0].shape
    for im in images:
        if im.ndim != 3 or im.shape != shape:
            raise _shape_error("oversample", "H x W x K images all of shape {}".format(shape),
                               im.shape)
    crop_h, crop_w = (int(d) for d in crop_dims)
    height, width, channels = shape
    if not (0 < crop_h <= height and 0 < crop_w <= width):
        raise _shape_error("oversample crop_dims", "at most the image's {}".format(
            (height, width)), (crop_h, crop_w))
    corners = [(y, x) for y in (0, height - crop_h) for x in (0, width - crop_w)]
    corners.append(((height - crop_h) // 2, (width - crop_w) // 2))
    crops = np.empty((10 * len(images), crop_h, crop_w, channels), dtype=np.float32)
    for i, im in enumerate(images):
        for j, (y, x) in enumerate(corners):
            crop = im[y:y + crop_h, x:x + crop_w]
            crops[10 * i + j] = crop
            crops[10 * i + 5 + j] = crop[:, ::-1]
    return crops


def blobproto_to_array(blob, return_diff=False):
    """BlobProto -> numpy array holding its data, or its diff when return_diff is set.

    The shape is shape.dim when `shape` is present (no dims: a 0-d array, numpy shape
    (), holding one value), else the legacy num/channels/height/width when any of them
    is set. A blob with neither is BVLC's scalar: a 0-d array of its one value (any
    other count is a ValueError, as in BVLC). The diff takes the data's shape and must
    have as many values.
    """
    if return_diff:
        values = blob.double_diff if len(blob.double_diff) else blob.diff
    else:
        values = blob.double_data if len(blob.double_data) else blob.data
    arr = np.array(values, dtype=float)
    if blob.HasField("shape"):
        shape = tuple(blob.shape.dim)
    elif any(blob.HasField(field) for field in ("num", "channels", "height", "width")):
        shape = (blob.num, blob.channels, blob.height, blob.width)
    else:
        shape = ()
    if arr.size != int(np.prod(shape)):
        raise _shape_error("BlobProto {}".format("diff" if return_diff else "data"),
                           "{} values for shape {}".format(int(np.prod(shape)), shape),
                           arr.size)
    return arr.reshape(shape)


def array_to_blobproto(arr, diff=None):
    """numpy array (and an optional diff of the same shape) -> BlobProto with shape.dim;
    a 0-d array gives `shape {}` (present, no dims) and its one value."""
    arr = np.asarray(arr)
    blob = caffe_pb2.BlobProto()
    # Marks `shape` present even without dims, so that a scalar reads back as 0-d
    # rather than as a blob with no shape at all.
    blob.shape.SetInParent()
    blob.shape.dim.extend(arr.shape)
    blob.data.extend(arr.astype(float).flat)
    if diff is not None:
        diff = np.asarray(diff)
        if diff.shape != arr.shape:
            raise _shape_error("array_to_blobproto diff", arr.shape, diff.shape)
        blob.diff.extend(diff.astype(float).flat)
    return blob


def arraylist_to_blobprotovector_str(arraylist):
    """List of arrays -> serialized BlobProtoVector."""
    vector = caffe_pb2.BlobProtoVector()
    vector.blobs.extend(array_to_blobproto(arr) for arr in arraylist)
    return vector.SerializeToString()


def blobprotovector_str_to_arraylist(serialized):
    """Serialized BlobProtoVector -> list of arrays."""
    vector = caffe_pb2.BlobProtoVector()
    vector.ParseFromString(serialized)
    return [blobproto_to_array(blob) for blob in vector.blobs]


def array_to_datum(arr, label=None):
    """C x H x W array -> Datum: uint8 into the data bytes, other types into float_data."""
    arr = np.asarray(arr)
    if arr.ndim != 3:
        raise _shape_error("array_to_datum", "a C x H x W array", arr.shape)
    datum = caffe_pb2.Datum()
    datum.channels, datum.height, datum.width = arr.shape
    if arr.dtype == np.uint8:
        datum.data = arr.tobytes()
    else:
        datum.float_data.extend(arr.astype(float).flat)
    if label is not None:
        datum.label = int(label)
    return datum


def datum_to_array(datum):
    """Datum -> C x H x W array: uint8 from the data bytes, else float from float_data."""
    if datum.encoded:
        raise ValueError("datum_to_array: expected raw pixels, found an encoded "
                         "(compressed image) Datum")
    shape = (datum.channels, datum.height, datum.width)
    if len(datum.data):
        arr = np.frombuffer(datum.data, dtype=np.uint8)
    else:
        arr = np.array(datum.float_data, dtype=float)
    if arr.size != int(np.prod(shape)):
        raise _shape_error("Datum", "{} values for shape {}".format(int(np.prod(shape)), shape),
                           arr.size)
    return arr.reshape(shape).copy()
