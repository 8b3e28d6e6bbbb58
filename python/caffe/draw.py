"""Graphviz pictures of a net (a caffe_pb2.NetParameter), as BVLC pycaffe's caffe.draw.

Layers are boxes labelled with name and type (plus kernel, stride and pad for
convolutions and pooling); blobs are octagons; an in-place layer's edges go from its
blob and back to it. Needs pydot and graphviz's `dot`.
"""
import os

import pydot
from google.protobuf.descriptor import FieldDescriptor

from .proto import caffe_pb2

LAYER_STYLE_DEFAULT = {"shape": "record", "fillcolor": "#6495ED", "style": "filled"}
NEURON_LAYER_STYLE = {"shape": "record", "fillcolor": "#90EE90", "style": "filled"}
BLOB_STYLE = {"shape": "octagon", "fillcolor": "#E0E0E0", "style": "filled"}
LAYER_COLORS = {"Convolution": "#FF5050", "Deconvolution": "#FF5050",
                "Pooling": "#FF9900", "InnerProduct": "#CC33FF"}
LEARNING_LAYER_TYPES = ("Convolution", "Deconvolution", "InnerProduct")


def get_pooling_types_dict():
    """PoolingParameter's pool values -> their names, e.g. 0 -> 'MAX'."""
    return {value.number: name for name, value in
            caffe_pb2.PoolingParameter.PoolMethod.DESCRIPTOR.values_by_name.items()}


def choose_color_by_layertype(layertype):
    return LAYER_COLORS.get(layertype, LAYER_STYLE_DEFAULT["fillcolor"])


def get_edge_label(layer):
    """What a layer's out-edges say: the batch size of a data layer, the number of
    outputs of a learning layer, else nothing (None)."""
    if layer.type == "Data":
        return "Batch %d" % layer.data_param.batch_size
    if layer.type in ("Convolution", "Deconvolution"):
        return str(layer.convolution_param.num_output)
    if layer.type == "InnerProduct":
        return str(layer.inner_product_param.num_output)
    return None


def _spatial(param, prefix, field, default):
    """One of kernel/stride/pad as text, '5' or '3x5': the repeated or single field,
    else its _h/_w pair, else the default."""
    if param.DESCRIPTOR.fields_by_name[field].label == FieldDescriptor.LABEL_REPEATED:
        values = list(getattr(param, field))
    else:
        values = [getattr(param, field)] if param.HasField(field) else []
    if not values and (param.HasField(prefix + "_h") or param.HasField(prefix + "_w")):
        values = [getattr(param, prefix + "_h"), getattr(param, prefix + "_w")]
    if len(set(values)) > 1:
        return "x".join(str(value) for value in values)
    return str(values[0] if values else default)


def get_layer_lr_mult(layer):
    """'lr mult: ...' and 'decay mult: ...' per learnable blob (1 where unset)."""
    specs = list(layer.param) or [caffe_pb2.ParamSpec()]
    return ["lr mult: " + ", ".join("%g" % spec.lr_mult for spec in specs),
            "decay mult: " + ", ".join("%g" % spec.decay_mult for spec in specs)]


def _layer_descriptors(layer, display_lrm):
    descriptors = [layer.name]
    if layer.type == "Pooling":
        pool_name = get_pooling_types_dict().get(layer.pooling_param.pool, "?")
        descriptors.append("(Pooling %s)" % pool_name)
    else:
        descriptors.append("(%s)" % layer.type)
    if layer.type in ("Convolution", "Deconvolution", "Pooling"):
        param = layer.pooling_param if layer.type == "Pooling" else layer.convolution_param
        if layer.type == "Pooling" and param.global_pooling:
            descriptors.append("global")
        else:
            descriptors.append("kernel size: " + _spatial(param, "kernel", "kernel_size", 1))
        descriptors.append("stride: " + _spatial(param, "stride", "stride", 1))
        descriptors.append("pad: " + _spatial(param, "pad", "pad", 0))
    if display_lrm and (layer.type in LEARNING_LAYER_TYPES or len(layer.param)):
        descriptors.extend(get_layer_lr_mult(layer))
    return descriptors


def _dot_string(parts, separator, record=False):
    """`parts` joined by `separator` as one quoted dot string; in a record label the
    characters that split fields are escaped too."""
    special = '\\"{}|<>' if record else '\\"'
    escaped = ["".join("\\" + c if c in special else c for c in part) for part in parts]
    return '"%s"' % separator.join(escaped)


def get_layer_label(layer, rankdir, display_lrm=False):
    """The quoted label of a layer's node: words run across a vertical graph (TB, BT)
    and down a horizontal one, whose horizontal space is the scarce one."""
    separator = " " if rankdir in ("TB", "BT") else "\\n"
    return _dot_string(_layer_descriptors(layer, display_lrm), separator, record=True)


def _rule_met(rule, state):
    """Caffe's NetStateRule test (Net::StateMeetsRule)."""
    if rule.HasField("phase") and rule.phase != state.phase:
        return False
    if rule.HasField("min_level") and state.level < rule.min_level:
        return False
    if rule.HasField("max_level") and state.level > rule.max_level:
        return False
    return (all(stage in state.stage for stage in rule.stage)
            and not any(stage in state.stage for stage in rule.not_stage))


def _layer_included(layer, state):
    """Caffe's filter (Net::FilterNet): with include rules, one must be met; without,
    no exclude rule may be."""
    if len(layer.include) and len(layer.exclude):
        raise ValueError("layer %s has both include and exclude rules" % layer.name)
    if len(layer.include):
        return any(_rule_met(rule, state) for rule in layer.include)
    return not any(_rule_met(rule, state) for rule in layer.exclude)


def get_pydot_graph(caffe_net, rankdir, label_edges=True, phase=None, display_lrm=False):
    """A pydot.Dot of `caffe_net`: all layers, or (phase caffe.TRAIN or caffe.TEST) those
    that Caffe keeps in that phase, with the net's own state's level and stages."""
    graph = pydot.Dot(_dot_string([caffe_net.name or "Net"], ""),
                      graph_type="digraph", rankdir=rankdir)
    state = None
    if phase is not None:
        state = caffe_pb2.NetState()
        state.CopyFrom(caffe_net.state)
        state.phase = phase
    # Node ids are generated so that any layer or blob name is safe in dot; the
    # names are in the labels. One node per blob name: in-place layers share it.
    blob_nodes = {}

    def blob_node(blob):
        if blob not in blob_nodes:
            blob_nodes[blob] = pydot.Node("blob%d" % len(blob_nodes),
                                          label=_dot_string([blob], ""), **BLOB_STYLE)
            graph.add_node(blob_nodes[blob])
        return blob_nodes[blob]

    for index, layer in enumerate(caffe_net.layer):
        if state is not None and not _layer_included(layer, state):
            continue
        in_place = len(layer.bottom) == 1 and list(layer.bottom) == list(layer.top)
        style = dict(NEURON_LAYER_STYLE if in_place else LAYER_STYLE_DEFAULT)
        if not in_place:
            style["fillcolor"] = choose_color_by_layertype(layer.type)
        node = pydot.Node("layer%d" % index,
                          label=get_layer_label(layer, rankdir, display_lrm), **style)
        graph.add_node(node)
        for bottom in layer.bottom:
            graph.add_edge(pydot.Edge(blob_node(bottom), node))
        edge_label = get_edge_label(layer) if label_edges else None
        for top in layer.top:
            edge = pydot.Edge(node, blob_node(top))
            if edge_label:
                edge.set_label(_dot_string([edge_label], ""))
            graph.add_edge(edge)
    return graph


def _check_format(ext):
    # pydot answers an unknown format with a failed assertion; say what is wrong.
    known = ["raw"] + pydot.Dot().formats
    if ext not in known:
        raise ValueError("unknown image format '%s' (known: %s)" % (ext, ", ".join(known)))


def image_format(filename):
    """The format draw_net_to_file writes `filename` in: its extension, lower-cased."""
    ext = os.path.splitext(filename)[1][1:].lower()
    if not ext:
        raise ValueError("%s: no extension to choose the image format by" % filename)
    try:
        _check_format(ext)
    except ValueError as error:
        raise ValueError("%s: %s" % (filename, error)) from None
    return ext


def draw_net(caffe_net, rankdir, ext="png", phase=None, display_lrm=False):
    """The picture of `caffe_net` as bytes in format `ext` (png, svg, pdf, ...: see
    pydot.Dot().formats; 'raw' gives the dot source)."""
    _check_format(ext)
    graph = get_pydot_graph(caffe_net, rankdir, phase=phase, display_lrm=display_lrm)
    if ext == "raw":
        return graph.to_string().encode()
    return graph.create(format=ext)


def draw_net_to_file(caffe_net, filename, rankdir="LR", phase=None, display_lrm=False):
    """Draw `caffe_net` into `filename`, in the format its extension names."""
    image = draw_net(caffe_net, rankdir, image_format(filename), phase, display_lrm)
    with open(filename, "wb") as image_file:
        image_file.write(image)
