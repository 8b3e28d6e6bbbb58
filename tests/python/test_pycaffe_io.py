"""Tests of caffe.io: Transformer, image loading, resizing, oversampling, and the
BlobProto / Datum conversions.

    PYTHONPATH=python /usr/bin/python3 -m pytest tests/python/test_pycaffe_io.py
"""
import numpy as np
import pytest
from PIL import Image

import caffe
from caffe.proto import caffe_pb2


# --- Transformer -------------------------------------------------------------------

def position_image(height, width, channels):
    """im[y, x, k] = (y * width + x) / 100 + k / 10: every value names its place."""
    y, x, k = np.meshgrid(np.arange(height), np.arange(width), np.arange(channels),
                          indexing="ij")
    return ((y * width + x) / 100.0 + k / 10.0).astype(np.float32)


def full_transformer(shape=(1, 3, 4, 5)):
    t = caffe.io.Transformer({"data": shape})
    t.set_transpose("data", (2, 0, 1))
    t.set_channel_swap("data", (2, 1, 0))
    t.set_raw_scale("data", 255)
    t.set_mean("data", np.array([10.0, 20.0, 30.0]))
    t.set_input_scale("data", 0.5)
    return t


def test_preprocess_applies_every_step_in_caffe_order():
    out = full_transformer().preprocess("data", position_image(4, 5, 3))
    assert out.shape == (3, 4, 5) and out.dtype == np.float32
    # out[c, y, x] = (im[y, x, swap[c]] * 255 - mean[c]) * 0.5, worked by hand:
    # net channel 0 <- image channel 2: im[1, 2, 2] = 0.07 + 0.2 = 0.27
    assert out[0, 1, 2] == pytest.approx((0.27 * 255 - 10) * 0.5)  # 29.425
    assert out[0, 1, 2] == pytest.approx(29.425, abs=1e-4)
    # net channel 1 <- image channel 1: im[0, 0, 1] = 0.1
    assert out[1, 0, 0] == pytest.approx(2.75, abs=1e-4)  # (25.5 - 20) * 0.5
    # net channel 2 <- image channel 0: im[3, 4, 0] = 0.19
    assert out[2, 3, 4] == pytest.approx(9.225, abs=1e-4)  # (48.45 - 30) * 0.5


def test_deprocess_inverts_preprocess():
    t = full_transformer()
    image = position_image(4, 5, 3)
    net_in = t.preprocess("data", image)
    np.testing.assert_allclose(t.deprocess("data", net_in), image, atol=1e-5)
    # A batch of one, as net.blobs['data'].data holds it, loses its batch axis.
    np.testing.assert_allclose(t.deprocess("data", net_in[np.newaxis]), image, atol=1e-5)


def test_deprocess_undoes_a_cyclic_channel_swap():
    t = caffe.io.Transformer({"data": (1, 3, 2, 2)})
    t.set_transpose("data", (2, 0, 1))
    t.set_channel_swap("data", (1, 2, 0))
    image = position_image(2, 2, 3)
    net_in = t.preprocess("data", image)
    np.testing.assert_array_equal(net_in[0], image[:, :, 1])
    np.testing.assert_array_equal(net_in[2], image[:, :, 0])
    np.testing.assert_array_equal(t.deprocess("data", net_in), image)


def test_deprocess_keeps_a_single_channel():
    t = caffe.io.Transformer({"data": (1, 1, 2, 3)})
    t.set_transpose("data", (2, 0, 1))
    t.set_raw_scale("data", 255)
    image = position_image(2, 3, 1)
    back = t.deprocess("data", t.preprocess("data", image)[np.newaxis])
    assert back.shape == (2, 3, 1)
    np.testing.assert_allclose(back, image, atol=1e-6)


def test_preprocess_leaves_the_callers_array_alone():
    image = position_image(4, 5, 3)
    before = image.copy()
    full_transformer().preprocess("data", image)
    np.testing.assert_array_equal(image, before)


def test_preprocess_resizes_to_the_input_size():
    t = caffe.io.Transformer({"data": (1, 3, 4, 5)})
    t.set_transpose("data", (2, 0, 1))
    out = t.preprocess("data", np.full((8, 10, 3), 0.25, dtype=np.float32))
    assert out.shape == (3, 4, 5)
    np.testing.assert_array_equal(out, 0.25)


def test_full_mean_of_the_input_size_is_subtracted_elementwise():
    t = caffe.io.Transformer({"data": (1, 2, 2, 2)})
    t.set_transpose("data", (2, 0, 1))
    mean = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    t.set_mean("data", mean)
    out = t.preprocess("data", np.full((2, 2, 2), 10.0, dtype=np.float32))
    np.testing.assert_array_equal(out, 10.0 - mean)


def test_mean_of_another_size_is_resized_to_the_input():
    t = caffe.io.Transformer({"data": (1, 2, 2, 2)})
    mean = np.stack([np.arange(16.0).reshape(4, 4), np.full((4, 4), 7.0)])
    t.set_mean("data", mean)
    # Halving with bilinear interpolation averages each 2 x 2 block.
    np.testing.assert_allclose(t.mean["data"][0], [[2.5, 4.5], [10.5, 12.5]], atol=1e-5)
    np.testing.assert_array_equal(t.mean["data"][1], 7.0)


def test_two_dimensional_mean_serves_a_grey_input():
    t = caffe.io.Transformer({"data": (1, 1, 2, 2)})
    t.set_mean("data", np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert t.mean["data"].shape == (1, 2, 2)


def test_per_channel_mean_broadcasts_over_the_image():
    t = caffe.io.Transformer({"data": (1, 3, 2, 2)})
    t.set_mean("data", [1.0, 2.0, 3.0])
    assert t.mean["data"].shape == (3, 1, 1)


@pytest.mark.parametrize("call, words", [
    (lambda t: t.set_transpose("label", (2, 0, 1)), "label"),
    (lambda t: t.preprocess("label", np.zeros((4, 5, 3))), "label"),
    (lambda t: t.set_transpose("data", (1, 0)), "permutation of 3 axes"),
    (lambda t: t.set_transpose("data", (0, 0, 1)), "permutation of 3 axes"),
    (lambda t: t.set_channel_swap("data", (1, 0)), "permutation of 3 channels"),
    (lambda t: t.set_mean("data", [1.0, 2.0]), "3 per-channel values"),
    (lambda t: t.set_mean("data", np.zeros((2, 4, 5))), "expected 3, found 2"),
    (lambda t: t.set_mean("data", np.zeros((1, 3, 4, 5))), "C x H x W"),
    (lambda t: t.preprocess("data", np.zeros((4, 5))), "H x W x K"),
])
def test_bad_configuration_names_what_was_expected(call, words):
    t = caffe.io.Transformer({"data": (1, 3, 4, 5)})
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        call(t)


# --- load_image ---------------------------------------------------------------------

RGB_PIXELS = np.array([[[255, 0, 0], [0, 128, 0], [0, 0, 7]],
                       [[1, 2, 3], [200, 100, 50], [255, 255, 255]]], dtype=np.uint8)


def test_load_image_color_reads_rgb_in_zero_one(tmp_path):
    path = str(tmp_path / "rgb.png")
    Image.fromarray(RGB_PIXELS).save(path)
    img = caffe.io.load_image(path)
    assert img.shape == (2, 3, 3) and img.dtype == np.float32
    np.testing.assert_allclose(img, RGB_PIXELS / 255.0, rtol=0, atol=1e-7)
    assert img[0, 1, 1] == pytest.approx(128 / 255.0)


def test_load_image_drops_alpha(tmp_path):
    path = str(tmp_path / "rgba.png")
    alpha = np.full((2, 3, 1), 9, dtype=np.uint8)
    Image.fromarray(np.concatenate([RGB_PIXELS, alpha], axis=2)).save(path)
    img = caffe.io.load_image(path)
    assert img.shape == (2, 3, 3)
    np.testing.assert_allclose(img, RGB_PIXELS / 255.0, atol=1e-7)


def test_load_image_grey_file(tmp_path):
    grey = np.array([[0, 51, 255], [17, 34, 68]], dtype=np.uint8)
    path = str(tmp_path / "grey.png")
    Image.fromarray(grey).save(path)
    as_grey = caffe.io.load_image(path, color=False)
    assert as_grey.shape == (2, 3, 1) and as_grey.dtype == np.float32
    np.testing.assert_allclose(as_grey[:, :, 0], grey / 255.0, atol=1e-7)
    assert as_grey[0, 1, 0] == pytest.approx(0.2)
    as_color = caffe.io.load_image(path)
    assert as_color.shape == (2, 3, 3)
    for k in range(3):
        np.testing.assert_array_equal(as_color[:, :, k], as_grey[:, :, 0])


def test_load_image_color_file_as_grey(tmp_path):
    # Pixels with R == G == B have that grey level under any luminance weights.
    levels = np.array([[0, 100], [200, 255]], dtype=np.uint8)
    path = str(tmp_path / "greyish.png")
    Image.fromarray(np.repeat(levels[:, :, np.newaxis], 3, axis=2)).save(path)
    img = caffe.io.load_image(path, color=False)
    assert img.shape == (2, 2, 1)
    np.testing.assert_allclose(img[:, :, 0], levels / 255.0, atol=1e-7)
    assert 0.0 <= img.min() and img.max() <= 1.0


def test_load_image_sixteen_bit_grey(tmp_path):
    path = str(tmp_path / "deep.png")
    Image.fromarray(np.array([[0, 65535, 13107]], dtype=np.uint16)).save(path)
    img = caffe.io.load_image(path, color=False)
    assert img.shape == (1, 3, 1)
    np.testing.assert_allclose(img[:, :, 0], [[0.0, 1.0, 0.2]], atol=1e-6)
    as_color = caffe.io.load_image(path)
    assert as_color.shape == (1, 3, 3)
    np.testing.assert_array_equal(as_color, np.repeat(img, 3, axis=2))


def test_load_image_missing_file(tmp_path):
    with pytest.raises(OSError):
        caffe.io.load_image(str(tmp_path / "absent.png"))


# --- resize_image --------------------------------------------------------------------

def test_nearest_doubles_each_pixel():
    im = np.array([[1.0, 2.0], [3.0, 4.0]])[:, :, np.newaxis]
    out = caffe.io.resize_image(im, (4, 4), interp_order=0)
    assert out.shape == (4, 4, 1) and out.dtype == np.float32
    np.testing.assert_array_equal(out[:, :, 0], [[1, 1, 2, 2],
                                                 [1, 1, 2, 2],
                                                 [3, 3, 4, 4],
                                                 [3, 3, 4, 4]])


def test_nearest_shrinks_to_the_pixel_under_each_centre():
    im = np.arange(16.0).reshape(4, 4, 1)
    out = caffe.io.resize_image(im, (2, 4), interp_order=0)
    # Output row centres fall at input rows 1.0 and 3.0.
    np.testing.assert_array_equal(out[:, :, 0], [[4, 5, 6, 7], [12, 13, 14, 15]])


def test_nearest_keeps_every_channel():
    im = np.stack([np.arange(6.0).reshape(2, 3), -np.arange(6.0).reshape(2, 3)], axis=2)
    out = caffe.io.resize_image(im, (2, 6), interp_order=0)
    np.testing.assert_array_equal(out[:, :, 0], [[0, 0, 1, 1, 2, 2], [3, 3, 4, 4, 5, 5]])
    np.testing.assert_array_equal(out[:, :, 1], -out[:, :, 0])


@pytest.mark.parametrize("order", [0, 1])
def test_same_size_is_the_identity(order):
    im = np.random.RandomState(1).rand(5, 7, 3)
    np.testing.assert_allclose(caffe.io.resize_image(im, (5, 7), order), im, atol=1e-7)


def test_bilinear_halving_averages_blocks():
    im = np.arange(16.0).reshape(4, 4, 1)
    out = caffe.io.resize_image(im, (2, 2))
    np.testing.assert_allclose(out[:, :, 0], [[2.5, 4.5], [10.5, 12.5]], atol=1e-6)


def test_bilinear_doubling_interpolates_between_centres():
    im = np.array([[0.0, 4.0]])[:, :, np.newaxis]
    out = caffe.io.resize_image(im, (1, 4))
    # Output centres at input x = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
    np.testing.assert_allclose(out[0, :, 0], [0.0, 1.0, 3.0, 4.0], atol=1e-6)


@pytest.mark.parametrize("new_dims", [(3, 3), (13, 9), (40, 17), (1, 1), (2, 30)])
@pytest.mark.parametrize("channels", [1, 3, 5])
def test_bilinear_stays_in_the_input_range(new_dims, channels):
    im = np.random.RandomState(channels).uniform(-3, 7, size=(11, 8, channels))
    out = caffe.io.resize_image(im, new_dims)
    assert out.shape == new_dims + (channels,) and out.dtype == np.float32
    assert out.min() >= np.float32(im.min()) and out.max() <= np.float32(im.max())


@pytest.mark.parametrize("order", [0, 1])
def test_constant_image_stays_constant(order):
    im = np.full((3, 5, 3), 0.1, dtype=np.float32)
    out = caffe.io.resize_image(im, (7, 2), order)
    np.testing.assert_array_equal(out, np.float32(0.1))


@pytest.mark.parametrize("im, dims, words", [
    (np.zeros((4, 4)), (2, 2), "H x W x K"),
    (np.zeros((4, 4, 1)), (2, 2, 2), "new_dims"),
    (np.zeros((4, 4, 1)), (0, 2), "new_dims"),
])
def test_resize_rejects_bad_shapes(im, dims, words):
    with pytest.raises(ValueError, match=words):
        caffe.io.resize_image(im, dims)


# --- oversample -----------------------------------------------------------------------

def test_oversample_crops_corners_centre_and_their_mirrors():
    height, width, channels = 5, 6, 2
    crop_h, crop_w = 3, 4
    first = np.fromfunction(lambda y, x, k: 100 * y + 10 * x + k, (height, width, channels))
    second = first + 1000
    crops = caffe.io.oversample([first, second], (crop_h, crop_w))
    assert crops.shape == (20, crop_h, crop_w, channels) and crops.dtype == np.float32
    # top-left, top-right, bottom-left, bottom-right, centre ((5-3)//2, (6-4)//2)
    origins = [(0, 0), (0, 2), (2, 0), (2, 2), (1, 1)]
    for n, image in enumerate([first, second]):
        for j, (y0, x0) in enumerate(origins):
            plain, mirrored = crops[10 * n + j], crops[10 * n + 5 + j]
            for a in range(crop_h):
                for b in range(crop_w):
                    for k in range(channels):
                        assert plain[a, b, k] == image[y0 + a, x0 + b, k]
                        assert mirrored[a, b, k] == image[y0 + a, x0 + crop_w - 1 - b, k]


def test_oversample_centre_of_an_odd_margin_rounds_down():
    im = np.arange(7.0).reshape(7, 1, 1)
    crops = caffe.io.oversample(np.array([im]), (4, 1))
    np.testing.assert_array_equal(crops[4, :, 0, 0], [1, 2, 3, 4])


def test_oversample_rejects_crops_larger_than_the_image():
    with pytest.raises(ValueError, match="crop_dims"):
        caffe.io.oversample([np.zeros((4, 4, 3))], (5, 4))


def test_oversample_rejects_images_of_different_shapes():
    with pytest.raises(ValueError, match="4, 4, 3"):
        caffe.io.oversample([np.zeros((4, 4, 3)), np.zeros((5, 4, 3))], (2, 2))


# --- BlobProto -----------------------------------------------------------------------

def test_blobproto_round_trip_writes_shape_dims():
    arr = np.arange(24.0).reshape(2, 3, 4) - 5.5
    diff = -arr * 2
    blob = caffe.io.array_to_blobproto(arr, diff)
    assert list(blob.shape.dim) == [2, 3, 4]
    assert not blob.HasField("num")
    parsed = caffe_pb2.BlobProto.FromString(blob.SerializeToString())
    np.testing.assert_array_equal(caffe.io.blobproto_to_array(parsed), arr)
    np.testing.assert_array_equal(caffe.io.blobproto_to_array(parsed, return_diff=True), diff)


@pytest.mark.parametrize("shape", [(5,), (2, 3), (1, 2, 3, 4), (2, 1, 1, 1, 3)])
def test_blobproto_round_trip_any_rank(shape):
    arr = np.random.RandomState(0).rand(*shape).astype(np.float32)
    back = caffe.io.blobproto_to_array(caffe.io.array_to_blobproto(arr))
    assert back.shape == shape
    np.testing.assert_array_equal(back, arr)


def test_legacy_four_dimensional_blobproto():
    blob = caffe_pb2.BlobProto(num=2, channels=1, height=2, width=3,
                               data=[float(v) for v in range(12)])
    arr = caffe.io.blobproto_to_array(blob)
    assert arr.shape == (2, 1, 2, 3)
    assert arr[1, 0, 1, 2] == 11.0 and arr[0, 0, 1, 0] == 3.0


def test_zero_dimensional_array_round_trip_writes_an_empty_shape():
    blob = caffe.io.array_to_blobproto(np.array(2.5))
    assert blob.HasField("shape") and list(blob.shape.dim) == [] and list(blob.data) == [2.5]
    parsed = caffe_pb2.BlobProto.FromString(blob.SerializeToString())
    assert parsed.HasField("shape")
    back = caffe.io.blobproto_to_array(parsed)
    assert back.shape == () and back == 2.5


def test_blobproto_with_an_empty_shape_is_zero_dimensional():
    blob = caffe_pb2.BlobProto(data=[-3.0])
    blob.shape.SetInParent()
    back = caffe.io.blobproto_to_array(blob)
    assert back.shape == () and back == -3.0
    blob.data.append(1.0)
    with pytest.raises(ValueError, match=r"expected 1 values for shape \(\), found 2"):
        caffe.io.blobproto_to_array(blob)


def test_blobproto_without_any_shape_is_bvlcs_scalar():
    # Neither shape nor num/channels/height/width: one value is a 0-d array, as in BVLC.
    back = caffe.io.blobproto_to_array(caffe_pb2.BlobProto(data=[4.0]))
    assert back.shape == () and back == 4.0
    back = caffe.io.blobproto_to_array(caffe_pb2.BlobProto(double_data=[4.5]))
    assert back.shape == () and back == 4.5
    # Any other count has no shape to take, as in BVLC.
    with pytest.raises(ValueError, match=r"expected 1 values for shape \(\), found 2"):
        caffe.io.blobproto_to_array(caffe_pb2.BlobProto(data=[1.0, 2.0]))
    with pytest.raises(ValueError, match=r"found 0"):
        caffe.io.blobproto_to_array(caffe_pb2.BlobProto())
    # The diff takes the data's shape.
    diff = caffe.io.blobproto_to_array(caffe_pb2.BlobProto(data=[4.0], diff=[0.5]),
                                       return_diff=True)
    assert diff.shape == () and diff == 0.5
    with pytest.raises(ValueError, match=r"diff: expected 1 values for shape \(\), found 0"):
        caffe.io.blobproto_to_array(caffe_pb2.BlobProto(data=[4.0]), return_diff=True)


def test_blobproto_with_the_wrong_number_of_values():
    blob = caffe_pb2.BlobProto(data=[1.0, 2.0, 3.0])
    blob.shape.dim.extend([2, 2])
    with pytest.raises(ValueError, match="4 values"):
        caffe.io.blobproto_to_array(blob)


def test_array_to_blobproto_rejects_a_diff_of_another_shape():
    with pytest.raises(ValueError, match="diff"):
        caffe.io.array_to_blobproto(np.zeros((2, 3)), np.zeros((3, 2)))


def test_blobprotovector_round_trip():
    arrays = [np.arange(6.0).reshape(2, 3), np.ones((1, 2, 2, 1)), np.array([7.5]),
              np.array(-1.25)]
    serialized = caffe.io.arraylist_to_blobprotovector_str(arrays)
    assert isinstance(serialized, bytes)
    assert len(caffe_pb2.BlobProtoVector.FromString(serialized).blobs) == 4
    back = caffe.io.blobprotovector_str_to_arraylist(serialized)
    assert [a.shape for a in back] == [a.shape for a in arrays]
    for got, want in zip(back, arrays):
        np.testing.assert_array_equal(got, want)


# --- Datum ---------------------------------------------------------------------------

def test_uint8_datum_round_trip_uses_the_data_bytes():
    arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4) * 10
    datum = caffe.io.array_to_datum(arr, label=7)
    assert (datum.channels, datum.height, datum.width, datum.label) == (2, 3, 4, 7)
    assert datum.data == arr.tobytes() and len(datum.float_data) == 0
    back = caffe.io.datum_to_array(caffe_pb2.Datum.FromString(datum.SerializeToString()))
    assert back.dtype == np.uint8
    np.testing.assert_array_equal(back, arr)


def test_float_datum_round_trip_uses_float_data():
    arr = (np.arange(6, dtype=np.float32).reshape(1, 2, 3) - 2) / 4
    datum = caffe.io.array_to_datum(arr)
    assert datum.data == b"" and list(datum.float_data) == list(arr.flat)
    assert not datum.HasField("label")
    back = caffe.io.datum_to_array(datum)
    assert back.shape == (1, 2, 3) and back.dtype.kind == "f"
    np.testing.assert_array_equal(back, arr)


def test_array_to_datum_rejects_other_ranks():
    with pytest.raises(ValueError, match="C x H x W.*\\(28, 28\\)"):
        caffe.io.array_to_datum(np.zeros((28, 28), dtype=np.uint8))


def test_datum_with_the_wrong_number_of_values():
    datum = caffe_pb2.Datum(channels=1, height=2, width=2, data=b"abc")
    with pytest.raises(ValueError, match="4 values"):
        caffe.io.datum_to_array(datum)


def test_encoded_datum_is_refused():
    datum = caffe_pb2.Datum(channels=1, height=1, width=1, data=b"\x89PNG", encoded=True)
    with pytest.raises(ValueError, match="encoded"):
        caffe.io.datum_to_array(datum)
