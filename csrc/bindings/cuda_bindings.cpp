#include "cuda_bindings.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cuda_runtime.h>

#include "cuda/context.h"

namespace py = pybind11;

namespace purlin::cuda {

// The cubins copied out of the Python bytes first: the loads run without the GIL.
template <class C>
void specialise(C& c, const std::vector<py::bytes>& cubins, const std::string& name) {
  std::vector<std::string> bytes(cubins.begin(), cubins.end());
  py::gil_scoped_release release;
  c.specialise(bytes, name);
}

constexpr const char* kAllowProgrammaticDoc =
    "Allow programmatic launch (the default) or not, from the next call on; in effect where it fits. Returns "
    "`programmatic`.";
constexpr const char* kProgrammaticDoc =
    "Whether calls launch as programmatic dependents (sm_90 on, two grids of every rank fit on its GPU): a call "
    "may start while the work ahead of it on its stream runs, and waits for that work on the device.";

void register_bindings(py::module_& m) {
  py::register_exception<TimeoutError>(m, "CudaTimeoutError", PyExc_TimeoutError);
  py::register_exception<CudaError>(m, "CudaBackendError", PyExc_RuntimeError);
  py::register_exception<BadCountsError>(m, "BadCountsError", PyExc_ValueError);
  py::register_exception<BadBuffersError>(m, "BadBuffersError", PyExc_ValueError);
  py::class_<KernelSpec>(m, "KernelSpec", "A compiled collective as the CUDA runtime launches it")
      .def(py::init<>())
      .def_property(
          "cubin", [](const KernelSpec& s) { return py::bytes(s.cubin); },
          [](KernelSpec& s, const py::bytes& b) { s.cubin = std::string(b); })
      .def_readwrite("name", &KernelSpec::name)
      .def_readwrite("arch", &KernelSpec::arch)
      .def_readwrite("world", &KernelSpec::world)
      .def_readwrite("threads", &KernelSpec::threads)
      .def_readwrite("grid", &KernelSpec::grid)
      .def_readwrite("smem", &KernelSpec::smem)
      .def_readwrite("sites", &KernelSpec::sites)
      .def_readwrite("counter_stride", &KernelSpec::counter_stride)
      .def_readwrite("symmetric_bytes", &KernelSpec::symmetric_bytes)
      .def_readwrite("tables", &KernelSpec::tables)
      .def_readwrite("input_bytes", &KernelSpec::input_bytes)
      .def_readwrite("output_bytes", &KernelSpec::output_bytes)
      .def_readwrite("site_names", &KernelSpec::site_names)
      .def_readwrite("multimem", &KernelSpec::multimem)
      .def_readwrite("count_words", &KernelSpec::count_words)
      .def_readwrite("symmetric", &KernelSpec::symmetric)
      .def_readwrite("gpu_scope", &KernelSpec::gpu_scope)
      .def_readwrite("stream", &KernelSpec::stream);
  py::class_<Communicator>(m, "CudaCommunicator",
                           "One process driving every rank (a GPU may host several): one compiled kernel per rank.")
      .def(py::init<KernelSpec, std::vector<int>, double, std::string>(), py::arg("spec"), py::arg("devices"),
           py::arg("timeout"), py::arg("name"))
      .def(
          "run",
          [](Communicator& c, const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
             const std::vector<uintptr_t>& streams, const std::vector<uintptr_t>& counts,
             const std::vector<uintptr_t>& recv_counts) { c.run(inputs, outputs, streams, {counts, recv_counts}); },
          py::arg("inputs"), py::arg("outputs"), py::arg("streams"), py::arg("counts") = std::vector<uintptr_t>{},
          py::arg("recv_counts") = std::vector<uintptr_t>{},
          "Launch on every rank's stream (device pointers and cudaStream_t handles as ints); no host sync. "
          "Device counts: each rank's int64 counts and where its received counts go (0: nowhere).")
      .def("run_rank", &Communicator::run_rank, py::arg("rank"), py::arg("input"), py::arg("output"),
           py::arg("stream"), py::call_guard<py::gil_scoped_release>(),
           "Launch rank `rank`'s kernel alone on its stream (device pointers and a cudaStream_t as ints), as a "
           "thread driving that rank's GPU does; every rank must be launched once per call. No host sync.")
      .def(
          "specialise",
          &specialise<Communicator>,
          py::arg("cubins"), py::arg("name"),
          "Launch kernel `name` of `cubins[i]` (the same kernel with local rank i's tables compiled in) from "
          "the next call on; every rank's launch of the calls before must have been issued.")
      .def("add_binding", &Communicator::add_binding, py::arg("tables"), py::arg("input_bytes"), py::arg("output_bytes"),
           py::arg("smem"), py::call_guard<py::gil_scoped_release>(),
           "Another binding of the kernel's counts (every rank's tables and buffer bytes, the kernel's shared "
           "memory for them); every rank's tables uploaded now. Returns its number (the spec's own is 0).")
      .def("use_binding", &Communicator::use_binding, py::arg("id"),
           "Launch with binding `id` from the next call on.")
      .def("synchronize", &Communicator::synchronize, py::call_guard<py::gil_scoped_release>(),
           "Wait for every GPU; raise CudaTimeoutError for recorded timeouts.")
      .def("epoch", &Communicator::epoch, py::arg("rank"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("programmatic", &Communicator::programmatic, kProgrammaticDoc)
      .def("allow_programmatic", &Communicator::allow_programmatic, py::arg("allow"), kAllowProgrammaticDoc)
      .def_property_readonly("world", &Communicator::world);
  py::class_<DeviceHeap, std::shared_ptr<DeviceHeap>>(
      m, "CudaDeviceHeap",
      "Device memory of this rank that every rank of its process group maps through CUDA IPC: where symmetric "
      "kernels whose ranks are in other processes find every rank's buffers.")
      .def(py::init<int, int, int, int64_t, std::string>(), py::arg("rank"), py::arg("world"), py::arg("device"),
           py::arg("bytes"), py::arg("name"))
      .def(py::init<int, int, int, uintptr_t, int64_t, std::string>(), py::arg("rank"), py::arg("world"),
           py::arg("device"), py::arg("memory"), py::arg("bytes"), py::arg("name"),
           "Registered: `bytes` of the caller's device memory at `memory` (inside a cudaMalloc allocation), which "
           "the caller keeps alive and frees.")
      .def(
          "ipc_handle", [](const DeviceHeap& h) { return py::bytes(h.ipc_handle()); },
          "This rank's handle, for every rank's connect().")
      .def("connect", &DeviceHeap::connect, py::arg("handles"),
           "Map the peers' heaps: every rank's ipc_handle() in rank order, this rank's included.")
      .def_property_readonly("base", &DeviceHeap::base, "This rank's heap (a device pointer as an int).")
      .def_property_readonly("bytes", &DeviceHeap::bytes)
      .def_property_readonly("rank", &DeviceHeap::rank)
      .def_property_readonly("world", &DeviceHeap::world)
      .def_property_readonly("device", &DeviceHeap::device)
      .def_property_readonly("connected", &DeviceHeap::connected)
      .def_property_readonly("registered", &DeviceHeap::registered)
      .def_property_readonly("serial", &DeviceHeap::serial,
                             "The heap's number, the same on every rank once connected.");
  py::class_<ProcessCommunicator>(
      m, "CudaProcessCommunicator",
      "One rank per process (as under torchrun): this rank's symmetric memory, shared with the other ranks' "
      "processes through CUDA IPC handles.")
      .def(py::init<KernelSpec, int, int, double, std::string, std::vector<std::shared_ptr<DeviceHeap>>>(),
           py::arg("spec"), py::arg("rank"), py::arg("device"), py::arg("timeout"), py::arg("name"),
           py::arg("heaps") = std::vector<std::shared_ptr<DeviceHeap>>{},
           "A symmetric kernel's buffers lie in `heaps`, connected CudaDeviceHeaps of this rank.")
      .def(
          "ipc_handle", [](const ProcessCommunicator& c) { return py::bytes(c.ipc_handle()); },
          "This rank's handle, for every rank's connect().")
      .def("connect", &ProcessCommunicator::connect, py::arg("handles"),
           "Map the peers' memory: every rank's ipc_handle() in rank order, this rank's included.")
      .def("run", &ProcessCommunicator::run, py::arg("input"), py::arg("output"), py::arg("stream"),
           py::arg("counts") = 0, py::arg("recv_counts") = 0,
           "Launch this rank's kernel on the stream (device pointers and a cudaStream_t as ints); no host sync. "
           "Device counts: this rank's int64 counts and where its received counts go (0: nowhere).")
      .def(
          "specialise",
          &specialise<ProcessCommunicator>,
          py::arg("cubins"), py::arg("name"),
          "Launch kernel `name` of `cubins[0]` (the same kernel with this rank's tables compiled in) from the "
          "next call on; this rank's launches of the calls before must have been issued.")
      .def("add_binding", &ProcessCommunicator::add_binding, py::arg("tables"), py::arg("input_bytes"), py::arg("output_bytes"),
           py::arg("smem"), py::call_guard<py::gil_scoped_release>(),
           "Another binding of the kernel's counts (every rank's tables and buffer bytes, the kernel's shared "
           "memory for them); this rank's tables uploaded now. Returns its number (the spec's own is 0).")
      .def("use_binding", &ProcessCommunicator::use_binding, py::arg("id"),
           "Launch with binding `id` from the next call on.")
      .def("synchronize", &ProcessCommunicator::synchronize, py::call_guard<py::gil_scoped_release>(),
           "Wait for this rank's GPU; raise CudaTimeoutError for recorded timeouts.")
      .def("epoch", &ProcessCommunicator::epoch, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("rank", &ProcessCommunicator::rank)
      .def_property_readonly("programmatic", &ProcessCommunicator::programmatic, kProgrammaticDoc)
      .def("allow_programmatic", &ProcessCommunicator::allow_programmatic, py::arg("allow"), kAllowProgrammaticDoc)
      .def_property_readonly("world", &ProcessCommunicator::world);
  m.def(
      "cuda_device_count",
      [] {
        int n = 0;
        // No driver or no device both mean: nothing to run on.
        return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
      },
      "Number of visible CUDA devices (0 when there is no usable driver).");
  m.def(
      "cuda_device_sms",
      [](int device) {
        int sms = 0;
        if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
          cudaGetLastError();
          throw std::invalid_argument("device " + std::to_string(device) + " does not exist");
        }
        return sms;
      },
      py::arg("device"), "Multiprocessors of CUDA device `device`.");
}

}  // namespace purlin::cuda
