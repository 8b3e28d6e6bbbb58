"""Nets written as Python code, as BVLC pycaffe's caffe.net_spec:

    n = caffe.NetSpec()
    n.data, n.label = L.Data(source="train_lmdb", backend=P.Data.LMDB, batch_size=64, ntop=2)
    n.conv1 = L.Convolution(n.data, kernel_size=5, num_output=20)
    n.loss = L.SoftmaxWithLoss(n.conv1, n.label)
    print(n.to_proto())

`layers.<Type>(*bottoms, **params)` describes one layer and returns its top (a Top), its
tops (a tuple, for ntop > 1) or, for ntop=0, the layer itself (a Function). A keyword goes
to the layer's <type>_param message when that message has the field, else to
LayerParameter itself (name, param, include, loss_weight, transform_param, ...); dicts
fill messages, lists fill repeated fields. Tops take their names from the NetSpec
attributes they are assigned to; the rest are named '<Type><n>'. `params.<Type>.<NAME>`
is an enum value of <Type>Parameter, e.g. params.Pooling.MAX.
"""
from collections import Counter, OrderedDict

from google.protobuf.message import Message

from .proto import caffe_pb2

# Fields that net_spec itself fills from the Python graph.
_GRAPH_FIELDS = ("type", "bottom", "top")


def param_name_dict():
    """Layer type -> prefix of its LayerParameter field, e.g. 'InnerProduct' ->
    'inner_product' (for inner_product_param), read from LayerParameter's descriptor:
    the field whose message type is <Type>Parameter."""
    names = {}
    for field in caffe_pb2.LayerParameter.DESCRIPTOR.fields:
        message = field.message_type
        if (message is not None and field.name.endswith("_param")
                and message.name.endswith("Parameter")):
            names[message.name[:-len("Parameter")]] = field.name[:-len("_param")]
    return names


# Types with no parameter message of their own that read another type's: their
# keyword parameters go there, e.g. L.Deconvolution(num_output=10) fills
# convolution_param (BVLC's coord_map tests write it so). BVLC's net_spec knows only
# the <Type>Parameter pairs, so there such keywords fail when the net is written out.
# (SoftmaxWithLoss has loss_param besides softmax_param: its keywords stay explicit.)
_SHARED_PARAMS = {"Deconvolution": "convolution", "Im2col": "convolution",
                  "RNN": "recurrent", "LSTM": "recurrent"}
_param_names = dict(param_name_dict(), **_SHARED_PARAMS)


def assign_proto(message, name, value):
    """Set field `name` of `message` from plain Python values: a dict fills a message
    (recursively), a list or tuple fills a repeated field, and a single value given to a
    repeated field is appended."""
    field = message.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        raise AttributeError("%s has no field '%s'" % (message.DESCRIPTOR.name, name))
    if field.label == field.LABEL_REPEATED:
        items = value if isinstance(value, (list, tuple)) else [value]
        repeated = getattr(message, name)
        for item in items:
            if field.message_type is None:
                repeated.append(item)
            else:
                _fill_message(repeated.add(), name, item)
    elif field.message_type is not None:
        _fill_message(getattr(message, name), name, value)
    else:
        setattr(message, name, value)


def _fill_message(message, name, value):
    if isinstance(value, Message):
        message.CopyFrom(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            assign_proto(message, key, item)
    else:
        raise TypeError("%s (a %s) takes a dict of its fields, not %r"
                        % (name, message.DESCRIPTOR.name, value))


def to_proto(*tops):
    """A NetParameter with every layer needed to compute `tops` (Tops, or Functions of
    ntop=0 layers); intermediate tops get automatic names."""
    layers, names, autonames = OrderedDict(), {}, Counter()
    for top in tops:
        top._to_proto(layers, names, autonames)
    net = caffe_pb2.NetParameter()
    net.layer.extend(layers.values())
    return net


class Top(object):
    """Output number `n` of the layer `fn`: what a layer takes as a bottom."""

    def __init__(self, fn, n):
        self.fn = fn
        self.n = n

    def to_proto(self):
        """A NetParameter with every layer needed to compute this top."""
        return to_proto(self)

    def _update(self, params):
        self.fn._update(params)

    def _to_proto(self, layers, names, autonames):
        self.fn._to_proto(layers, names, autonames)


class Function(object):
    """One layer: its type, its bottoms (Tops of other layers) and its parameters."""

    def __init__(self, type_name, inputs, params):
        self.type_name = type_name
        self.inputs = tuple(inputs)
        self.params = dict(params)
        self.ntop = self.params.pop("ntop", 1)
        self.in_place = self.params.pop("in_place", False)
        for index, bottom in enumerate(self.inputs):
            if not isinstance(bottom, Top):
                raise TypeError("%s input %d is not a Top (type is %s)"
                                % (type_name, index, type(bottom)))
        if self.in_place and len(self.inputs) < self.ntop:
            raise ValueError("%s layer: in_place needs a bottom for each of its %d tops"
                             % (type_name, self.ntop))
        self.tops = tuple(Top(self, n) for n in range(self.ntop))
        # Built once here only to check the parameters, so that a mistake is reported
        # where the layer is written rather than at to_proto().
        self._layer_with_params()

    def _update(self, params):
        self.params.update(params)

    def _get_top_name(self, top, names, autonames):
        if top not in names:
            autonames[self.type_name] += 1
            names[top] = self.type_name + str(autonames[self.type_name])
        return names[top]

    def _get_name(self, names, autonames):
        """The layer's name: the one it was assigned (ntop=0), else its first top's."""
        if self not in names:
            if self.tops:
                names[self] = self._get_top_name(self.tops[0], names, autonames)
            else:
                autonames[self.type_name] += 1
                names[self] = self.type_name + str(autonames[self.type_name])
        return names[self]

    def _layer_with_params(self):
        """A LayerParameter holding only this layer's keyword parameters."""
        layer = caffe_pb2.LayerParameter()
        own_field = _param_names.get(self.type_name)
        own = getattr(layer, own_field + "_param") if own_field else None
        for key, value in self.params.items():
            if key in _GRAPH_FIELDS:
                raise ValueError("%s layer: '%s' is made by net_spec from the layer graph; "
                                 "name tops by assigning them to NetSpec attributes"
                                 % (self.type_name, key))
            # As in BVLC, keys ending in 'param' always mean LayerParameter's fields.
            if (own is not None and not key.endswith("param")
                    and key in own.DESCRIPTOR.fields_by_name):
                target = own
            elif key in layer.DESCRIPTOR.fields_by_name:
                target = layer
            else:
                searched = ([own.DESCRIPTOR.name] if own is not None else []) + ["LayerParameter"]
                raise AttributeError(
                    "%s layer has no parameter '%s': not a field of %s (other messages "
                    "are given whole, e.g. convolution_param=dict(...))"
                    % (self.type_name, key, " or ".join(searched)))
            try:
                assign_proto(target, key, value)
            except (AttributeError, TypeError, ValueError) as error:
                kind = next(k for k in (AttributeError, TypeError, ValueError)
                            if isinstance(error, k))
                raise kind("%s layer, %s: %s" % (self.type_name, key, error)) from None
        return layer

    def _make_layer(self, layers, names, autonames):
        layer = self._layer_with_params()
        layer.type = self.type_name
        layer.bottom.extend(layers[bottom.fn].top[bottom.n] for bottom in self.inputs)
        if self.in_place:
            layer.top.extend(layer.bottom[:self.ntop])
        else:
            layer.top.extend(self._get_top_name(top, names, autonames) for top in self.tops)
        if not layer.HasField("name"):
            layer.name = self._get_name(names, autonames)
        return layer

    def _to_proto(self, layers, names, autonames):
        """Add to `layers` this layer and, before it, those it needs that are not there
        yet. A stack rather than recursion: deep nets would pass Python's recursion limit."""
        pending = [(self, False)]
        while pending:
            fn, inputs_added = pending.pop()
            if fn in layers:
                continue
            if inputs_added:
                layers[fn] = fn._make_layer(layers, names, autonames)
            else:
                pending.append((fn, True))
                pending.extend((bottom.fn, False) for bottom in reversed(fn.inputs))


class NetSpec(object):
    """Named tops: assigning a Top (or a Function of an ntop=0 layer) to an attribute
    names it; to_proto() writes every layer they need, in dependency order."""

    def __init__(self):
        super(NetSpec, self).__setattr__("tops", OrderedDict())

    def __setattr__(self, name, value):
        if not isinstance(value, (Top, Function)):
            raise TypeError("NetSpec.%s must be a Top (or the Function of an ntop=0 layer), "
                            "not %s; unpack a layer's tops: n.a, n.b = L.X(..., ntop=2)"
                            % (name, type(value).__name__))
        self.tops[name] = value

    def __getattr__(self, name):
        tops = self.__dict__.get("tops", {})
        if name not in tops:
            raise AttributeError("NetSpec has no top '%s'" % name)
        return tops[name]

    def __setitem__(self, name, value):
        self.__setattr__(name, value)

    def __getitem__(self, name):
        return self.__getattr__(name)

    def __delitem__(self, name):
        del self.tops[name]

    def keys(self):
        return list(self.tops.keys())

    def vals(self):
        return list(self.tops.values())

    def to_proto(self):
        names = {top: name for name, top in self.tops.items()}
        layers, autonames = OrderedDict(), Counter()
        for top in self.tops.values():
            top._to_proto(layers, names, autonames)
        net = caffe_pb2.NetParameter()
        net.layer.extend(layers.values())
        return net


class Layers(object):
    """`layers.<Type>(*bottoms, **params)` describes a layer of type <Type>."""

    def __getattr__(self, type_name):
        if type_name.startswith("__"):
            raise AttributeError(type_name)

        def layer_fn(*args, **kwargs):
            fn = Function(type_name, args, kwargs)
            if fn.ntop == 0:
                return fn
            if fn.ntop == 1:
                return fn.tops[0]
            return fn.tops
        layer_fn.__name__ = type_name
        return layer_fn


class Parameters(object):
    """`params.<Type>.<NAME>`: the value NAME of an enum in <Type>Parameter."""

    def __getattr__(self, type_name):
        if type_name.startswith("__"):
            raise AttributeError(type_name)
        message = getattr(caffe_pb2, type_name + "Parameter", None)
        if message is None:
            raise AttributeError("caffe_pb2 has no %sParameter" % type_name)
        return _EnumValues(message)


class _EnumValues(object):
    def __init__(self, message):
        self._message = message

    def __getattr__(self, value_name):
        if value_name.startswith("__"):
            raise AttributeError(value_name)
        try:
            return getattr(self._message, value_name)
        except AttributeError:
            raise AttributeError("%s has no enum value %s"
                                 % (self._message.DESCRIPTOR.name, value_name))


layers = L = Layers()
params = P = Parameters()
