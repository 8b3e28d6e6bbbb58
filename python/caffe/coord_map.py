"""Where the positions of one blob of a net_spec net lie in another, as BVLC pycaffe's
caffe.coord_map: the mapping that fully convolutional nets need to align an upsampled
score map with the input (FCN's skip connections), and the Crop layer that does it.

    from caffe.coord_map import crop
    n.upscore = L.Deconvolution(n.score, convolution_param=dict(
        num_output=21, kernel_size=64, stride=32, bias_term=False))
    n.score = crop(n.upscore, n.data)    # upscore cut to data's grid, aligned

A coordinate map is a tuple (axis, a, b). Along every spatial axis after `axis` (the
last axis that is not a coordinate: 1, the channels of N x C x H x W), the position x
in the map's source blob lies over the position a * x + b in its destination blob;
positions are those of cell centres and may be fractional. `a` and `b` are numpy arrays
with one entry per spatial axis, or a single entry that holds for all of them (plain 1
and 0 for a layer that leaves coordinates alone, whose `axis` is None: it fits any).

coord_map(fn) is the map of one layer, from its bottom to its top; compose, inverse
and coord_map_from_to combine them along the net's graph.
"""
from collections import deque

import numpy as np

from .net_spec import layers as L

# Layers whose top has each bottom's spatial grid, position for position: elementwise
# functions, per-channel normalizations and scalings, and Split. BVLC's list, with this
# build's other elementwise layers (Clip, Square, Swish). Concat is decided per layer
# (only concatenation along the batch or channel axis keeps the grid).
PASS_THROUGH_LAYERS = ["AbsVal", "BatchNorm", "Bias", "BNLL", "Clip", "Dropout", "Eltwise",
                       "ELU", "Exp", "Log", "LRN", "MVN", "Power", "PReLU", "ReLU", "Scale",
                       "Sigmoid", "Split", "Square", "Swish", "TanH", "Threshold"]

# The layers that slide a kernel over the grid (read through conv_params).
_SLIDING_LAYERS = ("Convolution", "Pooling", "Im2col")


class AxisMismatchException(Exception):
    """Two maps were composed whose coordinates start at different axes."""


class UndefinedMapException(Exception):
    """A layer has no coordinate map (it mixes positions, as InnerProduct does, or the
    map depends on blob shapes that a net_spec net does not know)."""


def _values(repeated, default):
    values = list(repeated)
    return np.array(values if values else [default], ndmin=1)


def _hw_or(message, name, repeated_or_single, default):
    """A kernel/stride/pad value as Caffe reads it: name_h and name_w when either is
    set (2-D), else the plain field (repeated for convolution, single for pooling)."""
    if message.HasField(name + "_h") or message.HasField(name + "_w"):
        return np.array([getattr(message, name + "_h"), getattr(message, name + "_w")])
    if isinstance(repeated_or_single, int):
        return np.array([repeated_or_single])
    return _values(repeated_or_single, default)


def conv_params(fn):
    """(axis, stride, kernel extent, pad) of a Convolution, Deconvolution, Im2col or
    Pooling layer, each but axis an array (one entry, or one per spatial axis). The
    kernel extent is the span a dilated kernel covers: (kernel_size - 1) * dilation + 1.
    """
    layer = fn._layer_with_params()
    if fn.type_name == "Pooling":
        p = layer.pooling_param
        if p.global_pooling:
            # One output cell for the whole input: where its centre lies depends on the
            # input's size, which the net_spec graph does not know.
            raise UndefinedMapException("Pooling with global_pooling has no coordinate map")
        if not (p.HasField("kernel_size") or p.HasField("kernel_h") or p.HasField("kernel_w")):
            raise ValueError("Pooling layer without kernel_size (or kernel_h and kernel_w)")
        kernel = _hw_or(p, "kernel", p.kernel_size, None)
        stride = _hw_or(p, "stride", p.stride, 1)
        pad = _hw_or(p, "pad", p.pad, 0)
        dilation = np.array([1])
        axis = 1
    else:
        p = layer.convolution_param
        if not (len(p.kernel_size) or p.HasField("kernel_h") or p.HasField("kernel_w")):
            raise ValueError("%s layer without kernel_size (or kernel_h and kernel_w)"
                             % fn.type_name)
        kernel = _hw_or(p, "kernel", p.kernel_size, None)
        stride = _hw_or(p, "stride", p.stride, 1)
        pad = _hw_or(p, "pad", p.pad, 0)
        dilation = _values(p.dilation, 1)
        axis = p.axis
        if axis < 0:
            raise UndefinedMapException(
                "%s with a negative axis (%d): which axis that is depends on the blob's "
                "number of axes, which the net_spec graph does not know" % (fn.type_name, axis))
    return axis, stride, (kernel - 1) * dilation + 1, pad


def crop_params(fn):
    """(axis, offset) of a Crop layer: the first cropped axis and the offsets (one, or
    one per cropped axis)."""
    p = fn._layer_with_params().crop_param
    if p.axis < 0:
        raise UndefinedMapException(
            "Crop with a negative axis (%d): which axis that is depends on the blob's "
            "number of axes, which the net_spec graph does not know" % p.axis)
    return p.axis, _values(p.offset, 0)


def _concat_axis(fn):
    p = fn._layer_with_params().concat_param
    # Caffe's ConcatLayer: the legacy concat_dim wins when it is set.
    return p.concat_dim if p.HasField("concat_dim") else p.axis


def coord_map(fn):
    """The coordinate map of layer `fn` (a net_spec Function) from its bottoms to its
    top. Raises UndefinedMapException for a layer without one.

    A sliding kernel (Convolution, Pooling, Im2col) with stride s, pad p and kernel
    extent K centres output cell i over input position s * i - p + (K - 1) / 2, so
    input x lies over output (x + p - (K - 1) / 2) / s. Deconvolution is the reverse of
    the convolution with its parameters. Crop moves the grid by its offset.
    """
    if fn.type_name in _SLIDING_LAYERS:
        axis, stride, extent, pad = conv_params(fn)
        return axis, 1 / stride, (pad - (extent - 1) / 2) / stride
    if fn.type_name == "Deconvolution":
        axis, stride, extent, pad = conv_params(fn)
        return axis, stride.astype(float), (extent - 1) / 2 - pad
    if fn.type_name == "Crop":
        # Output cell i is input cell i + offset. The map's axis is the last axis
        # before the cropped ones.
        axis, offset = crop_params(fn)
        return axis - 1, np.ones(offset.shape), -offset.astype(float)
    if fn.type_name in PASS_THROUGH_LAYERS:
        return None, 1, 0
    if fn.type_name == "Concat" and _concat_axis(fn) in (0, 1):
        return None, 1, 0
    raise UndefinedMapException("%s layers have no coordinate map" % fn.type_name)


def compose(base_map, next_map):
    """The map that applies next_map, then base_map: with base (a1, b1) and next
    (a2, b2), x goes to a1 * (a2 * x + b2) + b1. Raises AxisMismatchException when both
    name an axis and the axes differ."""
    ax1, a1, b1 = base_map
    ax2, a2, b2 = next_map
    if ax1 is None:
        ax = ax2
    elif ax2 is None or ax1 == ax2:
        ax = ax1
    else:
        raise AxisMismatchException("maps over axes %s and %s do not compose" % (ax1, ax2))
    return ax, a1 * a2, a1 * b2 + b1


def inverse(coord_map):
    """The map back: a * x + b = y gives x = y / a - b / a."""
    ax, a, b = coord_map
    return ax, 1 / a, -b / a


def _mappable_bottoms(top):
    """The bottoms a walk from `top` towards the inputs goes through. Every bottom of a
    layer shares its top's grid except the second one of Crop, which gives only the
    output's size."""
    bottoms = top.fn.inputs
    return bottoms[:1] if top.fn.type_name == "Crop" else bottoms


def _maps_to(top, stop=None):
    """{ancestor: map from the ancestor's coordinates to top's}, for `top` and every
    blob above it that can be reached through layers with a map. With `stop`, the walk
    ends at the first blob (nearest first) that `stop` holds and returns that blob
    too."""
    maps = {top: (None, 1, 0)}
    pending = deque([top])
    while pending:
        current = pending.popleft()
        if stop is not None and current in stop:
            return maps, current
        try:
            layer_map = coord_map(current.fn)
        except UndefinedMapException:
            continue
        for bottom in _mappable_bottoms(current):
            if bottom not in maps:
                maps[bottom] = compose(maps[current], layer_map)
                pending.append(bottom)
    return maps, None


def coord_map_from_to(top_from, top_to):
    """The map from top_from's coordinates to top_to's: (axis, a, b) such that the cell
    at x in top_from lies over a * x + b in top_to. The two must share an ancestor
    reached through layers with a map (all ancestors are taken to agree, as in BVLC);
    else RuntimeError."""
    from_maps, _ = _maps_to(top_from)
    to_maps, common = _maps_to(top_to, stop=from_maps)
    if common is None:
        raise RuntimeError("Could not compute map between tops; are they connected by "
                           "spatial layers?")
    # top_from -> the common ancestor -> top_to.
    return compose(to_maps[common], inverse(from_maps[common]))


def crop(top_from, top_to):
    """A Crop layer (its top) that cuts top_from to top_to's spatial size so that each
    cell lies over the same cell of top_to. The map between them must be a whole
    shift towards the start (a = 1, b a whole number <= 0); else AssertionError, as in
    BVLC."""
    ax, a, b = coord_map_from_to(top_from, top_to)
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    # 1 / s * s and sums of halves are exact in binary for the usual strides, but not
    # for every stride: allow rounding error, nothing more.
    if not np.allclose(a, 1, rtol=0, atol=1e-9):
        raise AssertionError("scale mismatch on crop (a = {})".format(a))
    offset = np.round(b)
    if not np.allclose(b, offset, rtol=0, atol=1e-9):
        raise AssertionError("cannot crop noninteger offset (b = {})".format(b))
    if np.any(offset > 0):
        raise AssertionError("cannot crop negative offset (b = {})".format(b))
    # A map through layers that leave coordinates alone names no axis: crop the
    # spatial axes of N x C x H x W, Crop's default.
    axis = 2 if ax is None else ax + 1
    return L.Crop(top_from, top_to,
                  crop_param=dict(axis=int(axis), offset=[int(-o) for o in offset.ravel()]))
