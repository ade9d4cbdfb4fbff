#include "cuda_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cuda_runtime.h>

#include "context.h"

namespace py = pybind11;

namespace purlin::cuda {

void register_bindings(py::module_& m) {
  py::register_exception<TimeoutError>(m, "CudaTimeoutError", PyExc_TimeoutError);
  py::register_exception<CudaError>(m, "CudaBackendError", PyExc_RuntimeError);
  py::class_<Communicator>(m, "CudaCommunicator",
                           "One process driving one GPU per rank: runs a binary plan as one kernel per GPU.")
      .def(py::init([](py::array_t<int64_t, py::array::c_style | py::array::forcecast> plan, std::vector<int> devices,
                       double timeout, std::string name) {
             return std::make_unique<Communicator>(plan.data(), plan.size(), std::move(devices), timeout,
                                                   std::move(name));
           }),
           py::arg("plan"), py::arg("devices"), py::arg("timeout"), py::arg("name"))
      .def("run", &Communicator::run, py::arg("inputs"), py::arg("outputs"), py::arg("streams"),
           "Launch on every rank's stream (device pointers and cudaStream_t handles as ints); no host sync.")
      .def("synchronize", &Communicator::synchronize, py::call_guard<py::gil_scoped_release>(),
           "Wait for every GPU; raise CudaTimeoutError for recorded timeouts.")
      .def("epoch", &Communicator::epoch, py::arg("rank"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("world", &Communicator::world);
  m.def(
      "cuda_device_count",
      [] {
        int n = 0;
        // No driver or no device both mean: nothing to run on.
        return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
      },
      "Number of visible CUDA devices (0 when there is no usable driver).");
}

}  // namespace purlin::cuda
