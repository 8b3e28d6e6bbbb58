"""Net and the solvers as BVLC pycaffe users know them: ordered dictionaries of blobs
and parameters, and forward/backward by layer name, over the compiled core."""
from collections import OrderedDict

import numpy as np

from ._caffe import (Net, Solver, SGDSolver, NesterovSolver, AdaGradSolver,  # noqa: F401
                     RMSPropSolver, AdaDeltaSolver, AdamSolver)


class Layer:
    """Base of layers written in Python (``type: "Python"`` with ``python_param``).

    The net calls ``setup(bottom, top)`` once, then ``reshape(bottom, top)`` before
    every forward pass, ``forward(bottom, top)`` and ``backward(top, propagate_down,
    bottom)``; bottom and top are lists of blobs whose ``data`` and ``diff`` are numpy
    views. ``self.param_str`` is python_param's param_str, ``self.phase`` the net's
    phase, and ``self.blobs`` the layer's own learnable blobs
    (``self.blobs.add_blob(*shape)``).
    """
    type = "Python"

    def setup(self, bottom, top):
        pass

    def reshape(self, bottom, top):
        raise NotImplementedError(f"{type(self).__name__} must define reshape(bottom, top)")

    def forward(self, bottom, top):
        raise NotImplementedError(f"{type(self).__name__} must define forward(bottom, top)")

    def backward(self, top, propagate_down, bottom):
        pass


def _blobs(self):
    """Every blob of the net by name, in the order the net creates them."""
    return OrderedDict(zip(self._blob_names, self._blobs))


def _params(self):
    """Each layer's learnable blobs by layer name, for layers that have any."""
    return OrderedDict((name, layer.blobs) for name, layer in zip(self._layer_names, self.layers)
                       if len(layer.blobs) > 0)


def _layer_dict(self):
    return OrderedDict(zip(self._layer_names, self.layers))


def _inputs(self):
    return [self._blob_names[i] for i in self._inputs]


def _outputs(self):
    return [self._blob_names[i] for i in self._outputs]


def _top_names(self):
    return OrderedDict((name, [self._blob_names[b] for b in self._top_ids(i)])
                       for i, name in enumerate(self._layer_names))


def _bottom_names(self):
    return OrderedDict((name, [self._blob_names[b] for b in self._bottom_ids(i)])
                       for i, name in enumerate(self._layer_names))


def _layer_index(self, name, what):
    names = list(self._layer_names)
    if name not in names:
        raise KeyError(f"{what}: the net has no layer '{name}' (layers: {', '.join(names)})")
    return names.index(name)


def _set_blob_values(self, values, what):
    blobs = self.blobs
    for name, value in values.items():
        if name not in blobs:
            raise KeyError(f"{what}: the net has no blob '{name}'")
        blob = blobs[name]
        value = np.asarray(value)
        if value.shape != blob.shape:
            raise ValueError(f"{what}: blob '{name}' has shape {blob.shape}, "
                             f"the array given has {value.shape}")
        if what == "forward":
            blob.data[...] = value
        else:
            blob.diff[...] = value


def _forward(self, blobs=None, start=None, end=None, **kwargs):
    """Runs layers start..end (names, both included; the whole net by default),
    after copying the keyword arrays into the blobs they name. Returns the net's
    outputs (or, with `end`, that layer's tops) plus `blobs`, as arrays by name."""
    blobs = list(blobs or [])
    if kwargs:
        if set(kwargs) - set(self.inputs) and start is None:
            unknown = sorted(set(kwargs) - set(self.inputs))
            raise KeyError(f"forward: {', '.join(unknown)} are not inputs of the net "
                           f"(inputs: {', '.join(self.inputs)})")
        _set_blob_values(self, kwargs, "forward")
    start_index = 0 if start is None else _layer_index(self, start, "forward start")
    if end is None:
        end_index = len(self.layers) - 1
        outputs = self.outputs + blobs
    else:
        end_index = _layer_index(self, end, "forward end")
        outputs = self.top_names[end] + blobs
    if start_index > end_index:
        raise ValueError(f"forward: start '{start}' comes after end '{end}'")
    self._forward(start_index, end_index)
    all_blobs = self.blobs
    return {name: all_blobs[name].data for name in dict.fromkeys(outputs)}


def _backward(self, diffs=None, start=None, end=None, **kwargs):
    """Runs backward from layer `start` down to layer `end` (the whole net by
    default), after copying the keyword arrays into the diffs of the blobs they
    name. Returns the input diffs (or, with `end`, that layer's bottoms) plus
    `diffs`, as arrays by name."""
    diffs = list(diffs or [])
    if kwargs:
        if set(kwargs) - set(self.outputs) and start is None:
            unknown = sorted(set(kwargs) - set(self.outputs))
            raise KeyError(f"backward: {', '.join(unknown)} are not outputs of the net "
                           f"(outputs: {', '.join(self.outputs)})")
        _set_blob_values(self, kwargs, "backward")
    start_index = len(self.layers) - 1 if start is None else _layer_index(self, start,
                                                                          "backward start")
    if end is None:
        end_index = 0
        outputs = self.inputs + diffs
    else:
        end_index = _layer_index(self, end, "backward end")
        outputs = self.bottom_names[end] + diffs
    if start_index < end_index:
        raise ValueError(f"backward: start '{start}' comes before end '{end}'")
    self._backward(start_index, end_index)
    all_blobs = self.blobs
    return {name: all_blobs[name].diff for name in dict.fromkeys(outputs)}


def _batch_size(self, names):
    sizes = {self.blobs[name].shape[0] for name in names}
    if len(sizes) != 1:
        raise ValueError(f"blobs {', '.join(names)} differ in batch size: {sorted(sizes)}")
    return sizes.pop()


def _batches(self, arrays):
    """Splits whole-data-set arrays into the net's batch size, padding the last
    batch with zeros; yields (batch dict, number of real rows)."""
    total = {len(a) for a in arrays.values()}
    if len(total) != 1:
        raise ValueError(f"the arrays given differ in length: {sorted(total)}")
    total = total.pop()
    batch = _batch_size(self, list(arrays))
    for first in range(0, total, batch):
        rows = min(batch, total - first)
        chunk = {}
        for name, array in arrays.items():
            part = np.asarray(array[first:first + rows], dtype=np.float32)
            if rows < batch:
                padding = np.zeros((batch - rows,) + part.shape[1:], dtype=np.float32)
                part = np.concatenate([part, padding])
            chunk[name] = part
        yield chunk, rows


def _forward_all(self, blobs=None, **kwargs):
    """forward over whole data sets: the keyword arrays may hold any number of
    rows; the outputs (and `blobs`) come back with as many rows."""
    names = list(dict.fromkeys(self.outputs + list(blobs or [])))
    collected = {name: [] for name in names}
    for chunk, rows in _batches(self, kwargs):
        out = self.forward(blobs=blobs, **chunk)
        for name in names:
            collected[name].append(out[name][:rows].copy())
    return {name: np.concatenate(parts) if parts else np.zeros((0,), np.float32)
            for name, parts in collected.items()}


def _forward_backward_all(self, blobs=None, diffs=None, **kwargs):
    """forward and backward over whole data sets; keyword arguments are inputs
    (for forward) or output diffs (for backward). Returns (outputs, input diffs)."""
    forward_in = {k: v for k, v in kwargs.items() if k in self.inputs}
    backward_in = {k: v for k, v in kwargs.items() if k in self.outputs}
    unknown = set(kwargs) - set(forward_in) - set(backward_in)
    if unknown:
        raise KeyError(f"forward_backward_all: {', '.join(sorted(unknown))} are neither "
                       "inputs nor outputs of the net")
    out_names = list(dict.fromkeys(self.outputs + list(blobs or [])))
    diff_names = list(dict.fromkeys(self.inputs + list(diffs or [])))
    outs = {name: [] for name in out_names}
    grads = {name: [] for name in diff_names}
    forward_batches = list(_batches(self, forward_in)) if forward_in else []
    backward_batches = list(_batches(self, backward_in)) if backward_in else []
    for i in range(max(len(forward_batches), len(backward_batches))):
        f_chunk, rows = forward_batches[i] if forward_batches else ({}, None)
        b_chunk, b_rows = backward_batches[i] if backward_batches else ({}, None)
        rows = b_rows if rows is None else rows
        out = self.forward(blobs=blobs, **f_chunk)
        grad = self.backward(diffs=diffs, **b_chunk)
        for name in out_names:
            outs[name].append(out[name][:rows].copy())
        for name in diff_names:
            grads[name].append(grad[name][:rows].copy())
    return ({n: np.concatenate(p) for n, p in outs.items() if p},
            {n: np.concatenate(p) for n, p in grads.items() if p})


def _set_input_arrays_as_float(self, data, labels):
    """Hands whole arrays to the net's first layer, which must be MemoryData: data
    (N, C, H, W) and one label per row; each forward serves the next batch."""
    self._set_input_arrays(np.ascontiguousarray(data, dtype=np.float32),
                           np.ascontiguousarray(labels, dtype=np.float32))


Net.blobs = property(_blobs)
Net.params = property(_params)
Net.layer_dict = property(_layer_dict)
Net.inputs = property(_inputs)
Net.outputs = property(_outputs)
Net.top_names = property(_top_names)
Net.bottom_names = property(_bottom_names)
Net.forward = _forward
Net.backward = _backward
Net.forward_all = _forward_all
Net.forward_backward_all = _forward_backward_all
Net.set_input_arrays = _set_input_arrays_as_float
