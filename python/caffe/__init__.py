"""caffe-iwp's Python interface, following BVLC Caffe's pycaffe: the same module,
class and function names, so that existing user scripts run unchanged.

    PYTHONPATH=python python3 -c "import caffe; print(caffe.layer_type_list())"
"""
import os as _os
import sys as _sys
import traceback as _traceback

# Inside a C++ program that embeds the interpreter (`caffe train` running a Python
# layer) the extension is compiled into the program: use that copy, since loading the
# shared library as well would put a second copy of the framework in the process.
if "_caffe" in _sys.builtin_module_names:
    import _caffe
    _sys.modules[__name__ + "._caffe"] = _caffe
else:
    from . import _caffe

from ._caffe import (TRAIN, TEST, CaffeError, Blob, set_mode_cpu, set_mode_gpu, set_device,
                     set_random_seed, layer_type_list, solver_rank, solver_count, init_log,
                     get_solver, set_comm_timeout, get_comm_timeout)
from .pycaffe import (Layer, Net, Solver, SGDSolver, NesterovSolver, AdaGradSolver,
                      RMSPropSolver, AdaDeltaSolver, AdamSolver)
from . import io
from .classifier import Classifier
from .detector import Detector
from .net_spec import layers, params, NetSpec, to_proto


def has_nccl():
    """False: BVLC's single-process caffe.NCCL (one Python process driving every GPU)
    is not how this framework runs NCCL. Multi-GPU training is one process per GPU
    under mpirun, whose exchange uses NCCL in CUDA builds (docs/multinode.md)."""
    return False


def _end_the_job_on_an_uncaught_error(kind, value, trace, _report=_sys.excepthook):
    """A rank that stops on an error ends the whole MPI job instead of leaving the
    other ranks waiting for it (as `caffe train` does)."""
    if not _caffe._in_multi_rank_job():
        _report(kind, value, trace)
        return
    _sys.stderr.flush()
    if _report is _sys.__excepthook__:
        # One write: Python's own hook writes a traceback in pieces, and mpirun merges
        # every rank's stderr, so another rank's log lines could land inside its lines.
        data = "".join(_traceback.format_exception(kind, value, trace)).encode(errors="replace")
        while data:
            data = data[_os.write(2, data):]
    else:
        _report(kind, value, trace)
        _sys.stderr.flush()
    _caffe._abort_job()


_sys.excepthook = _end_the_job_on_an_uncaught_error
