#include "python_runtime.hpp"

#include <cstdlib>
#include <mutex>
#include <typeinfo>

#include <pybind11/embed.h>

#include "caffe/blob.hpp"

namespace py = pybind11;

namespace caffe {

namespace {

// Output a Python layer prints sits in sys.stdout's buffer; a C++ program never
// finalizes the interpreter, so flush it on the way out.
void FlushPythonStreams() {
  if (!Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  for (const char* name : {"stdout", "stderr"}) {
    PyObject* stream = PySys_GetObject(name);  // borrowed
    if (stream && stream != Py_None) {
      PyObject* result = PyObject_CallMethod(stream, "flush", nullptr);
      Py_XDECREF(result);
      PyErr_Clear();
    }
  }
}

}  // namespace

void EnsurePythonRuntime() {
  static std::once_flag started;
  std::call_once(started, [] {
    if (Py_IsInitialized()) return;
    // Python's own SIGINT handler would take Ctrl-C away from the solver's
    // sigint_effect; the C++ program keeps its handlers.
    py::initialize_interpreter(/*init_signal_handlers=*/false);
    std::atexit(FlushPythonStreams);
  });
  py::gil_scoped_acquire gil;
  if (py::detail::get_type_info(typeid(Blob)) == nullptr) {
    // In a C++ program the module is compiled in (embedded_module.cpp).
    py::module_::import("_caffe");
  }
}

std::string DescribePythonError(const py::error_already_set& error) {
  py::gil_scoped_acquire gil;
  std::string text = py::str(error.type().attr("__name__")).cast<std::string>();
  const std::string message = py::str(error.value()).cast<std::string>();
  if (!message.empty()) text += ": " + message;
  // Where in the user's code: the innermost frame of the traceback.
  py::object trace = error.trace();
  if (trace && !trace.is_none()) {
    while (!trace.attr("tb_next").is_none()) trace = trace.attr("tb_next");
    const std::string file =
        py::str(trace.attr("tb_frame").attr("f_code").attr("co_filename")).cast<std::string>();
    text += " (" + file + ":" + py::str(trace.attr("tb_lineno")).cast<std::string>() + ")";
  }
  return text;
}

}  // namespace caffe
