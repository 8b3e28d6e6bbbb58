// Blob, Net, the solvers and the module functions, with BVLC pycaffe's names. The
// Python half (python/caffe/pycaffe.py) adds the dictionaries and the batched
// forward/backward on top of the underscore methods here.
#include "caffe_module.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#ifdef USE_MPI
#include <mpi.h>
#endif
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl_bind.h>

#include "blob_vec.hpp"
#include "caffe/layer_factory.hpp"
#include "caffe/layers/memory_data_layer.hpp"
#include "caffe/net.hpp"
#include "caffe/solver.hpp"
#include "caffe/solvers/adadelta_solver.hpp"
#include "caffe/solvers/adagrad_solver.hpp"
#include "caffe/solvers/adam_solver.hpp"
#include "caffe/solvers/nesterov_solver.hpp"
#include "caffe/solvers/rmsprop_solver.hpp"
#include "caffe/solvers/sgd_solver.hpp"
#include "caffe/sync/comm_deadline.hpp"
#include "caffe/sync/communicator.hpp"
#include "caffe/sync/gradient_exchange.hpp"
#include "caffe/sync/mpi_communicator.hpp"
#include "caffe/sync/transport.hpp"
#include "caffe/util/device_alternate.hpp"
#include "caffe/util/io.hpp"
#include "caffe/util/num_threads.hpp"
#include "caffe/util/upgrade_proto.hpp"
#include "python_layer.hpp"

namespace py = pybind11;
using namespace py::literals;

namespace caffe {

namespace {

using BlobVec = vector<shared_ptr<Blob>>;

// pycaffe's process-wide settings (set_mode_*, set_device, set_random_seed): the
// context new nets are built in, and what new solvers start from.
struct ModuleSettings {
  shared_ptr<Context> context = std::make_shared<Context>();
  bool seeded = false;
  int64_t seed = 0;
};

ModuleSettings& Settings() {
  static ModuleSettings settings;
  return settings;
}

// One communicator per process, as in `caffe train`: under mpirun it is this rank's
// place in the job, otherwise a job of one. BLAS and the loops get this rank's share
// of the machine's cores, once.
const shared_ptr<Communicator>& ProcessCommunicator() {
  static shared_ptr<Communicator> comm;
  static std::once_flag once;
  std::call_once(once, [] {
    comm = CreateCommunicator();
    SetNumThreads(std::max(1, NumThreads() / std::max(1, comm->local_size())));
    if (comm->rank() != 0) FLAGS_minloglevel = google::GLOG_WARNING;
  });
  return comm;
}

Phase CheckedPhase(int phase) {
  CAFFE_REQUIRE(phase == TRAIN || phase == TEST)
      << "phase: expected caffe.TRAIN (0) or caffe.TEST (1), found " << phase;
  return static_cast<Phase>(phase);
}

shared_ptr<Net> MakeNet(const string& model, int phase, int level, const vector<string>& stages,
                        const py::object& weights) {
  auto net = std::make_shared<Net>(model, CheckedPhase(phase), Settings().context, level, stages);
  if (!weights.is_none()) net->CopyTrainedLayersFrom(weights.cast<string>());
  return net;
}

// A solver built as `caffe train` builds one, exchange included, so that a
// Python-driven job under mpirun trains exactly like the tool. `type` overrides the
// file's solver type (caffe.SGDSolver(file) is SGD whatever the file says).
shared_ptr<Solver> MakeSolver(const string& path, const string& type) {
  SolverParameter param;
  ReadSolverParamsFromTextFile(path, &param);
  if (!type.empty()) param.set_type(type);
  if (param.has_sync_param()) ValidateSyncParameter(param.sync_param(), path);
  const ModuleSettings& settings = Settings();
  if (settings.seeded && param.random_seed() < 0) param.set_random_seed(settings.seed);
  const shared_ptr<Communicator>& comm = ProcessCommunicator();
  auto context = std::make_shared<Context>();
  context->set_default_engine(settings.context->default_engine());
  context->set_mode(settings.context->mode());
  context->set_device_id(settings.context->device_id());
  context->set_rank(comm->rank(), comm->size());
  shared_ptr<Solver> solver = SolverRegistry::CreateSolver(param, context, path);
  if (comm->size() > 1 || param.has_sync_param()) {
    Transport transport = CreateTransport(comm, context->mode() == Mode::GPU);
    solver->set_gradient_exchange(CreateGradientExchange(param.sync_param(), std::move(transport)));
    LOG(INFO) << "Data-parallel training on " << comm->size() << " rank(s), exchange "
              << solver->gradient_exchange()->method_name();
  }
  return solver;
}

template <typename SolverType>
shared_ptr<SolverType> MakeTypedSolver(const string& path, const string& type) {
  auto solver = std::dynamic_pointer_cast<SolverType>(MakeSolver(path, type));
  CAFFE_REQUIRE(solver) << path << ": solver type " << type << " did not build a " << type
                        << " solver";
  return solver;
}

vector<int64_t> DimsFromArgs(const py::args& args) {
  vector<int64_t> dims;
  for (const py::handle& arg : args) {
    const int64_t dim = arg.cast<int64_t>();
    CAFFE_REQUIRE(dim >= 0) << "blob dimensions must not be negative, found " << dim;
    dims.push_back(dim);
  }
  return dims;
}

// A float32 numpy array over the blob's host memory: writes through it are the
// blob's. `owner` (the Python blob) stays alive as long as the array does.
py::array HostView(const Blob& blob, float* data, const py::object& owner) {
  vector<py::ssize_t> shape(blob.shape().begin(), blob.shape().end());
  return py::array(py::dtype::of<float>(), shape, data, owner);
}

py::list BlobsOfNet(const Net& net) {
  py::list blobs;
  for (const shared_ptr<Blob>& blob : net.blobs()) blobs.append(blob);
  return blobs;
}

// Net.layers: a Python layer is its user object (BVLC returns the instance), every
// other layer the C++ one.
py::list LayersOfNet(const Net& net) {
  py::list layers;
  for (const shared_ptr<Layer>& layer : net.layers()) {
    if (auto* python = dynamic_cast<PythonLayer*>(layer.get())) {
      layers.append(python->python_object());
    } else {
      layers.append(layer);
    }
  }
  return layers;
}

vector<int> IndicesOf(const Net& net, const vector<Blob*>& blobs) {
  vector<int> indices;
  for (Blob* blob : blobs) {
    for (size_t i = 0; i < net.blobs().size(); ++i) {
      if (net.blobs()[i].get() == blob) indices.push_back(static_cast<int>(i));
    }
  }
  return indices;
}

string ShapeText(const py::array& array) {
  string text = "(";
  for (py::ssize_t i = 0; i < array.ndim(); ++i) {
    text += (i ? ", " : "") + std::to_string(array.shape(i));
  }
  return text + ")";
}

void SetInputArrays(Net& net, py::array_t<float, py::array::c_style | py::array::forcecast> data,
                    py::array_t<float, py::array::c_style | py::array::forcecast> labels) {
  auto* memory =
      net.layers().empty() ? nullptr : dynamic_cast<MemoryDataLayer*>(net.layers()[0].get());
  CAFFE_REQUIRE(memory) << "set_input_arrays needs the net's first layer to be MemoryData, found "
                        << (net.layers().empty() ? string("no layer")
                                                 : "'" + net.layer_names()[0] + "' (" +
                                                       net.layers()[0]->type() + ")");
  CAFFE_REQUIRE(data.ndim() == 4 && data.shape(1) == memory->channels() &&
                data.shape(2) == memory->height() && data.shape(3) == memory->width())
      << "set_input_arrays: layer '" << net.layer_names()[0] << "' expects data of shape (N, "
      << memory->channels() << ", " << memory->height() << ", " << memory->width()
      << "), found " << ShapeText(data);
  CAFFE_REQUIRE(labels.size() == data.shape(0))
      << "set_input_arrays: expected one label per example (" << data.shape(0) << "), found "
      << labels.size();
  memory->Reset(data.data(), labels.data(), data.shape(0));
}

void SaveNet(const Net& net, const string& path) {
  NetParameter param;
  net.ToProto(&param, /*write_diff=*/false);
  WriteProtoToBinaryFile(param, path);
}

void SetModeGpu() {
  CAFFE_REQUIRE(HasCudaDevice())
      << "set_mode_gpu: no GPU is available (this build or this machine has none)";
  Settings().context->set_mode(Mode::GPU);
}

void SetDevice(int device) {
  const int count = CudaDeviceCount();
  CAFFE_REQUIRE(device >= 0 && device < count)
      << "set_device: unknown GPU id " << device << " (" << count << " GPU(s) available)";
#ifdef USE_CUDA
  CUDA_CHECK(cudaSetDevice(device));
#endif
  Settings().context->set_device_id(device);
}

void DefineBlob(py::module_& m) {
  py::class_<Blob, shared_ptr<Blob>>(m, "Blob")
      .def(py::init([](py::args dims) { return std::make_shared<Blob>(DimsFromArgs(dims)); }))
      .def_property_readonly("shape",
                             [](const Blob& b) {
                               return py::tuple(py::cast(vector<int64_t>(b.shape())));
                             })
      .def_property_readonly("count", [](const Blob& b) { return b.count(); })
      .def_property_readonly("num", &Blob::num)
      .def_property_readonly("channels", &Blob::channels)
      .def_property_readonly("height", &Blob::height)
      .def_property_readonly("width", &Blob::width)
      .def("reshape", [](Blob& b, py::args dims) { b.Reshape(DimsFromArgs(dims)); })
      .def_property_readonly("data",
                             [](py::object self) {
                               Blob& b = self.cast<Blob&>();
                               return HostView(b, b.mutable_cpu_data(), self);
                             })
      .def_property_readonly("diff", [](py::object self) {
        Blob& b = self.cast<Blob&>();
        return HostView(b, b.mutable_cpu_diff(), self);
      });

  py::bind_vector<BlobVec>(m, "BlobVec")
      .def("add_blob", [](BlobVec& blobs, py::args dims) {
        blobs.push_back(std::make_shared<Blob>(DimsFromArgs(dims)));
      });
}

void DefineNet(py::module_& m) {
  py::class_<Layer, shared_ptr<Layer>>(m, "NetLayer")
      .def_property_readonly("type", [](const Layer& l) { return string(l.type()); })
      .def_property_readonly("name", &Layer::name)
      .def_property_readonly(
          "blobs", [](Layer& l) -> BlobVec& { return l.blobs(); }, py::return_value_policy::reference_internal);

  // dynamic_attr: scripts hang their own things on a net (a transformer, labels).
  py::class_<Net, shared_ptr<Net>>(m, "Net", py::dynamic_attr())
      .def(py::init(&MakeNet), "network_file"_a, "phase"_a, "level"_a = 0,
           "stages"_a = vector<string>{}, "weights"_a = py::none())
      .def(py::init([](const string& model, const string& weights, int phase, int level,
                       const vector<string>& stages) {
             return MakeNet(model, phase, level, stages, py::str(weights));
           }),
           "network_file"_a, "weights"_a, "phase"_a, "level"_a = 0, "stages"_a = vector<string>{})
      .def_property_readonly("name", &Net::name)
      .def_property_readonly("phase", [](const Net& n) { return static_cast<int>(n.phase()); })
      .def("_forward", [](Net& n, int start, int end) { return n.ForwardFromTo(start, end); })
      .def("_backward", &Net::BackwardFromTo)
      // Zeroes every learnable blob's diff in the net's mode (BVLC's clear_param_diffs):
      // backward adds into them, so a loop of its own clears them before each pass.
      .def("clear_param_diffs", &Net::ClearParamDiffs)
      .def("reshape", &Net::Reshape)
      .def("copy_from", py::overload_cast<const string&>(&Net::CopyTrainedLayersFrom))
      .def("share_with", [](Net& n, const Net& other) { n.ShareTrainedLayersWith(other); })
      .def("save", &SaveNet)
      // BVLC's HDF5 weights layout (Net::ToHDF5); copy_from also loads a name ending in .h5.
      .def("save_hdf5", [](const Net& n, const string& path) { n.ToHDF5(path); })
      .def("load_hdf5", &Net::CopyTrainedLayersFromHDF5)
      .def("_set_input_arrays", &SetInputArrays)
      .def_property_readonly("_blob_names", &Net::blob_names)
      .def_property_readonly("_layer_names", &Net::layer_names)
      .def_property_readonly("_blobs", &BlobsOfNet)
      .def_property_readonly("layers", &LayersOfNet)
      .def_property_readonly("_inputs", [](const Net& n) { return IndicesOf(n, n.input_blobs()); })
      .def_property_readonly("_outputs", &Net::output_blob_indices)
      .def("_top_ids", &Net::top_ids)
      .def("_bottom_ids", &Net::bottom_ids);
}

void DefineSolvers(py::module_& m) {
  py::class_<Solver, shared_ptr<Solver>>(m, "Solver")
      .def_property_readonly("net", &Solver::net)
      .def_property_readonly("test_nets", &Solver::test_nets)
      .def_property_readonly("iter", &Solver::iter)
      .def_property_readonly("type", [](const Solver& s) { return string(s.type()); })
      .def("step", &Solver::Step, "iters"_a)
      .def("apply_update", &Solver::ApplyUpdateFromDiffs)
      .def(
          "solve",
          [](Solver& s, const py::object& resume) {
            s.Solve(resume.is_none() ? string() : resume.cast<string>());
          },
          "resume_file"_a = py::none())
      .def("restore", &Solver::Restore)
      .def("snapshot", &Solver::Snapshot)
      .def("test_all", &Solver::TestAll);

  py::class_<SGDSolver, Solver, shared_ptr<SGDSolver>>(m, "SGDSolver")
      .def(py::init([](const string& path) { return MakeTypedSolver<SGDSolver>(path, "SGD"); }));
  py::class_<NesterovSolver, SGDSolver, shared_ptr<NesterovSolver>>(m, "NesterovSolver")
      .def(py::init(
          [](const string& path) { return MakeTypedSolver<NesterovSolver>(path, "Nesterov"); }));
  py::class_<AdaGradSolver, SGDSolver, shared_ptr<AdaGradSolver>>(m, "AdaGradSolver")
      .def(py::init(
          [](const string& path) { return MakeTypedSolver<AdaGradSolver>(path, "AdaGrad"); }));
  py::class_<RMSPropSolver, SGDSolver, shared_ptr<RMSPropSolver>>(m, "RMSPropSolver")
      .def(py::init(
          [](const string& path) { return MakeTypedSolver<RMSPropSolver>(path, "RMSProp"); }));
  py::class_<AdaDeltaSolver, SGDSolver, shared_ptr<AdaDeltaSolver>>(m, "AdaDeltaSolver")
      .def(py::init(
          [](const string& path) { return MakeTypedSolver<AdaDeltaSolver>(path, "AdaDelta"); }));
  py::class_<AdamSolver, SGDSolver, shared_ptr<AdamSolver>>(m, "AdamSolver")
      .def(py::init([](const string& path) { return MakeTypedSolver<AdamSolver>(path, "Adam"); }));

  m.def("get_solver", [](const string& path) { return MakeSolver(path, ""); }, "filename"_a);
}

// Whether this process is one of several ranks of a running MPI job.
bool InMultiRankJob() {
#ifdef USE_MPI
  int initialized = 0, finalized = 0, size = 1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return false;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size > 1;
#else
  return false;
#endif
}

// Ends every rank of the job: the others may wait for this one in a collective,
// and MPI_Finalize at exit would then wait for them in turn.
void AbortJob() {
#ifdef USE_MPI
  if (InMultiRankJob()) caffe::AbortMpiJob(1);
#endif
}

}  // namespace

void DefineCaffeModule(py::module_& m) {
  m.doc() = "caffe-iwp's compiled core; use it through the caffe package";
  if (!google::IsGoogleLoggingInitialized()) {
    FLAGS_logtostderr = 1;
    FLAGS_log_year_in_prefix = false;  // Caffe's line prefix, as the tools write it
    google::InitGoogleLogging("pycaffe");
  }
  // Error messages name the file, line, layer or blob: RuntimeError's subclass keeps
  // them, and `except RuntimeError` still catches it.
  static py::exception<Error> caffe_error(m, "CaffeError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      caffe_error(e.what());
    }
  });

  m.attr("TRAIN") = static_cast<int>(TRAIN);
  m.attr("TEST") = static_cast<int>(TEST);
  m.def("set_mode_cpu", [] { Settings().context->set_mode(Mode::CPU); });
  m.def("set_mode_gpu", &SetModeGpu);
  m.def("set_device", &SetDevice, "device_id"_a);
  m.def("set_random_seed", [](int64_t seed) {
    Settings().seeded = true;
    Settings().seed = seed;
    Settings().context->Seed(static_cast<uint64_t>(seed));
  });
  m.def("layer_type_list", &LayerRegistry::LayerTypeList);
  m.def("solver_rank", [] { return ProcessCommunicator()->rank(); });
  m.def("solver_count", [] { return ProcessCommunicator()->size(); });
  m.def("set_comm_timeout", &caffe::SetCommTimeoutSeconds, "seconds"_a,
        "Seconds a rank waits for the others in one collective before it counts them as "
        "lost: a warning at half of it, then caffe.CaffeError, which ends the job. 0 turns it "
        "off; 300 by default (caffe train -comm_timeout).");
  m.def("get_comm_timeout", &caffe::CommTimeoutSeconds);
  m.def("_in_multi_rank_job", &InMultiRankJob);
  m.def("_abort_job", &AbortJob);
  m.def("init_log", [](int level) { FLAGS_minloglevel = level; }, "level"_a = 0);

  DefineBlob(m);
  DefineNet(m);
  DefineSolvers(m);
}

}  // namespace caffe
