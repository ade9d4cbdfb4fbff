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
  py::class_<ProcessCommunicator>(
      m, "CudaProcessCommunicator",
      "One rank per process (as under torchrun): this rank's symmetric memory, shared with the other ranks' "
      "processes through CUDA IPC handles.")
      .def(py::init([](py::array_t<int64_t, py::array::c_style | py::array::forcecast> plan, int rank, int device,
                       double timeout, std::string name) {
             return std::make_unique<ProcessCommunicator>(plan.data(), plan.size(), rank, device, timeout,
                                                          std::move(name));
           }),
           py::arg("plan"), py::arg("rank"), py::arg("device"), py::arg("timeout"), py::arg("name"))
      .def(
          "ipc_handle", [](const ProcessCommunicator& c) { return py::bytes(c.ipc_handle()); },
          "This rank's handle, for every rank's connect().")
      .def("connect", &ProcessCommunicator::connect, py::arg("handles"),
           "Map the peers' memory: every rank's ipc_handle() in rank order, this rank's included.")
      .def("run", &ProcessCommunicator::run, py::arg("input"), py::arg("output"), py::arg("stream"),
           "Launch this rank's kernel on the stream (device pointers and a cudaStream_t as ints); no host sync.")
      .def("synchronize", &ProcessCommunicator::synchronize, py::call_guard<py::gil_scoped_release>(),
           "Wait for this rank's GPU; raise CudaTimeoutError for recorded timeouts.")
      .def("epoch", &ProcessCommunicator::epoch, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("rank", &ProcessCommunicator::rank)
      .def_property_readonly("world", &ProcessCommunicator::world);
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
