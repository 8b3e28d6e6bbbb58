"""caffe.coord_map: the coordinate maps of net_spec layers, their composition along a
fully convolutional net, and the Crop layer that aligns two blobs.

    PYTHONPATH=python python3 -m pytest tests/python/test_pycaffe_coord_map.py

The tests that build a caffe.Net need the build (CAFFE_BUILD, default <repo>/build).
"""
import numpy as np
import pytest

import caffe
from caffe import layers as L, params as P
from caffe.coord_map import (AxisMismatchException, UndefinedMapException, compose,
                             conv_params, coord_map, coord_map_from_to, crop, inverse)
from conftest import write


def fcn(conv_pad=2, pool=2, up_stride=2, up_pad=0, size=16):
    """data -> 3x3 convolution -> max pooling -> a deconvolution that upsamples by
    up_stride (kernel twice the stride, the shape of FCN's bilinear upsampling). The
    convolution's padding makes the upsampled blob larger than data, to crop."""
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, size, size]))
    n.conv = L.Convolution(n.data, num_output=2, kernel_size=3, pad=conv_pad)
    n.pool = L.Pooling(n.conv, pool=P.Pooling.MAX, kernel_size=pool, stride=pool)
    n.up = L.Deconvolution(n.pool, convolution_param=dict(
        num_output=2, kernel_size=2 * up_stride, stride=up_stride, pad=up_pad, bias_term=False))
    return n


def assert_map(actual, axis, a, b):
    assert actual[0] == axis
    np.testing.assert_allclose(actual[1], a, rtol=1e-12)
    np.testing.assert_allclose(actual[2], b, rtol=1e-12, atol=1e-12)


def input_spec(size=20):
    n = caffe.NetSpec()
    n.data = L.Input(shape=dict(dim=[1, 1, size, size]))
    return n


def test_the_module_is_caffe_coord_map():
    import caffe.coord_map
    assert caffe.coord_map.crop is crop


@pytest.mark.parametrize("make,stride,pad,kernel,dilation", [
    (lambda d: L.Convolution(d, num_output=1, kernel_size=5, stride=2, pad=1, dilation=2),
     2, 1, 5, 2),
    (lambda d: L.Convolution(d, num_output=1, kernel_size=4, stride=3), 3, 0, 4, 1),
    (lambda d: L.Pooling(d, pool=P.Pooling.AVE, kernel_size=3, stride=2, pad=1), 2, 1, 3, 1),
    (lambda d: L.Im2col(d, convolution_param=dict(kernel_size=2, stride=2)), 2, 0, 2, 1),
])
def test_an_output_cell_lies_over_the_centre_of_its_kernel(make, stride, pad, kernel, dilation):
    top = make(input_spec().data)
    layer_map = coord_map(top.fn)
    assert layer_map[0] == 1
    back = inverse(layer_map)
    for i in range(5):
        # The taps of output cell i, in input coordinates; the cell's centre is their mean.
        taps = stride * i - pad + dilation * np.arange(kernel)
        np.testing.assert_allclose(back[1] * i + back[2], taps.mean(), rtol=1e-12)


def test_layer_maps():
    data = input_spec().data
    conv = L.Convolution(data, num_output=1, kernel_size=5, stride=2, pad=1, dilation=2)
    assert_map(coord_map(conv.fn), 1, 0.5, (1 - 4) / 2)   # extent 9: centre 4 past the start
    axis, stride, extent, pad = conv_params(conv.fn)
    assert (axis, list(stride), list(extent), list(pad)) == (1, [2], [9], [1])
    pool = L.Pooling(data, pool=P.Pooling.MAX, kernel_size=2, stride=2)
    assert_map(coord_map(pool.fn), 1, 0.5, -0.25)
    up = L.Deconvolution(data, convolution_param=dict(num_output=1, kernel_size=4, stride=2,
                                                      pad=1))
    assert_map(coord_map(up.fn), 1, 2, 1.5 - 1)
    cropped = L.Crop(up, data, crop_param=dict(axis=2, offset=[3, 4]))
    assert_map(coord_map(cropped.fn), 1, [1, 1], [-3, -4])
    assert_map(coord_map(L.ReLU(data).fn), None, 1, 0)


def test_per_axis_and_legacy_h_w_parameters():
    data = input_spec().data
    per_axis = L.Convolution(data, num_output=1, kernel_size=[3, 5], stride=[1, 2], pad=[0, 2])
    legacy = L.Convolution(data, num_output=1, kernel_h=3, kernel_w=5, stride_h=1, stride_w=2,
                           pad_h=0, pad_w=2)
    for top in (per_axis, legacy):
        assert_map(coord_map(top.fn), 1, [1, 0.5], [-1, 0])
    pool = L.Pooling(data, kernel_h=2, kernel_w=4, stride_h=2, stride_w=4)
    assert_map(coord_map(pool.fn), 1, [0.5, 0.25], [-0.25, -0.375])


@pytest.mark.parametrize("kernel,stride,pad,dilation",
                         [(4, 2, 1, 1), (3, 1, 1, 1), (64, 32, 0, 1), (3, 2, 2, 2), (5, 3, 1, 1)])
def test_convolution_then_its_deconvolution_is_the_identity(kernel, stride, pad, dilation):
    n = input_spec()
    params = dict(num_output=1, kernel_size=kernel, stride=stride, pad=pad, dilation=dilation)
    n.conv = L.Convolution(n.data, **params)
    n.up = L.Deconvolution(n.conv, convolution_param=params)
    assert_map(compose(coord_map(n.up.fn), coord_map(n.conv.fn)), 1, 1, 0)
    assert_map(coord_map_from_to(n.up, n.data), 1, 1, 0)


def test_compose_and_inverse():
    first, second = (1, np.array([5.]), np.array([7.])), (1, np.array([2.]), np.array([3.]))
    # first, then second: x -> 5x + 7 -> 2(5x + 7) + 3.
    assert_map(compose(second, first), 1, 10, 17)
    assert_map(compose(first, inverse(first)), 1, 1, 0)
    assert_map(compose((None, 1, 0), second), 1, 2, 3)
    assert_map(compose(second, (None, 1, 0)), 1, 2, 3)
    with pytest.raises(AxisMismatchException):
        compose((1, 1, 0), (2, 1, 0))


def test_fully_convolutional_net_maps():
    n = fcn(conv_pad=5)
    # The conv's cell 0 covers padded input positions -5..-3.
    assert_map(coord_map_from_to(n.conv, n.data), 1, 1, -4)
    # Pool cell 0 covers conv cells 0 and 1.
    assert_map(coord_map_from_to(n.pool, n.data), 1, 2, 0.5 - 4)
    assert_map(coord_map_from_to(n.up, n.data), 1, 1, -5)
    assert_map(coord_map_from_to(n.data, n.up), 1, 1, 5)
    # top_to above top_from: the walk meets it on the way up.
    assert_map(coord_map_from_to(n.up, n.pool), 1, 0.5, -0.75)
    # 4x pooling and 4x upsampling: the shift changes, the scale stays 1.
    four = fcn(conv_pad=5, pool=4, up_stride=4)
    assert_map(coord_map_from_to(four.up, four.data), 1, 1, -6)


def test_maps_between_branches_meet_at_their_common_ancestor():
    n = input_spec()
    n.same = L.Convolution(n.data, num_output=1, kernel_size=3, pad=1)
    n.valid = L.Convolution(n.data, num_output=1, kernel_size=5)
    assert_map(coord_map_from_to(n.same, n.valid), 1, 1, -2)
    assert crop(n.same, n.valid).fn.params["crop_param"] == dict(axis=2, offset=[2])


def test_pass_through_layers_keep_the_map():
    n = fcn(conv_pad=5)
    n.relu = L.ReLU(n.up, in_place=True)
    n.bn = L.BatchNorm(n.relu)
    n.scale = L.Scale(n.bn)
    n.drop = L.Dropout(n.scale)
    n.sum = L.Eltwise(n.drop, n.up)
    n.cat = L.Concat(n.sum, n.up)
    for top in (n.relu, n.bn, n.scale, n.drop, n.sum, n.cat):
        assert_map(coord_map_from_to(top, n.data), 1, 1, -5)


def test_crop_walks_only_its_first_bottom():
    n = fcn(conv_pad=5)
    n.cut = L.Crop(n.up, n.data, crop_param=dict(axis=2, offset=[3, 4]))
    # cut's cell x is up's x + (3, 4), which lies over data's x + (3, 4) - 5; the
    # second bottom gives only the size.
    assert_map(coord_map_from_to(n.cut, n.data), 1, 1, [-2, -1])


def test_crop_returns_the_aligning_crop_layer(tmp_path):
    n = fcn(conv_pad=2)
    n.score = crop(n.up, n.data)
    assert n.score.fn.type_name == "Crop"
    assert n.score.fn.inputs == (n.up, n.data)
    assert n.score.fn.params["crop_param"] == dict(axis=2, offset=[2])
    assert_map(coord_map_from_to(n.score, n.data), 1, 1, 0)
    layer = n.to_proto().layer[-1]
    assert (layer.type, list(layer.bottom)) == ("Crop", ["up", "data"])
    assert (layer.crop_param.axis, list(layer.crop_param.offset)) == (2, [2])
    # Caffe accepts it: up is 20 x 20, cut at 2 to data's 16 x 16.
    net = caffe.Net(write(tmp_path, "fcn.prototxt", str(n.to_proto())), caffe.TEST)
    net.forward()
    assert net.blobs["up"].data.shape == (1, 2, 20, 20)
    assert net.blobs["score"].data.shape == (1, 2, 16, 16)


@pytest.mark.parametrize("kernel,pad,dilation", [(3, 2, 1), (5, 4, 1), (3, 3, 2)])
def test_the_crop_offset_lines_up_values(tmp_path, kernel, pad, dilation):
    n = input_spec(size=12)
    n.conv = L.Convolution(n.data, num_output=1, kernel_size=kernel, pad=pad, dilation=dilation,
                           bias_term=False)
    n.aligned = crop(n.conv, n.data)
    net = caffe.Net(write(tmp_path, "align.prototxt", str(n.to_proto())), caffe.TEST)
    # A kernel that is 1 at its centre tap and 0 elsewhere: each output cell copies the
    # input under its centre, so the aligned crop must give the input back.
    weights = net.params["conv"][0].data
    weights[...] = 0
    weights[0, 0, (kernel - 1) // 2, (kernel - 1) // 2] = 1
    image = np.random.RandomState(0).rand(1, 1, 12, 12).astype(np.float32)
    net.blobs["data"].data[...] = image
    net.forward()
    assert net.blobs["conv"].data.shape[2] > 12
    np.testing.assert_allclose(net.blobs["aligned"].data, image, rtol=1e-6, atol=1e-7)


def test_crop_refuses_maps_a_crop_cannot_make():
    n = fcn(pool=2, up_stride=4)   # 2x down, 4x up
    with pytest.raises(AssertionError, match="scale mismatch"):
        crop(n.up, n.data)
    n = fcn()
    n.up = L.Deconvolution(n.pool, convolution_param=dict(num_output=2, kernel_size=3, stride=2))
    with pytest.raises(AssertionError, match="noninteger"):
        crop(n.up, n.data)
    n = fcn(up_pad=6)   # up's cell 0 would lie past data's start
    with pytest.raises(AssertionError, match="negative"):
        crop(n.up, n.data)


def test_layers_without_a_map():
    n = fcn()
    n.ip = L.InnerProduct(n.up, num_output=3)
    with pytest.raises(UndefinedMapException):
        coord_map(n.ip.fn)
    with pytest.raises(RuntimeError, match="connected by spatial layers"):
        coord_map_from_to(n.ip, n.data)
    for top in (L.Pooling(n.data, pool=P.Pooling.AVE, global_pooling=True),
                L.Concat(n.up, n.up, axis=2),
                L.Convolution(n.data, num_output=1, kernel_size=3, axis=-3),
                L.Softmax(n.up)):
        with pytest.raises(UndefinedMapException):
            coord_map(top.fn)
