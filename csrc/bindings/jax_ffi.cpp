#include "jax_ffi.h"

#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>

#include "cpu/ranks.h"
#include "purlin_jax_api.h"

#ifdef PURLIN_WITH_CUDA
#include <cuda_runtime.h>

#include "cuda/context.h"
#endif

namespace py = pybind11;

namespace purlin::jax {

namespace {

// One device's part of a site: its group's communicator and its rank there.
// Python keeps the communicators alive for as long as the process runs.
struct Member {
  cpu::RankCommunicator* cpu = nullptr;
#ifdef PURLIN_WITH_CUDA
  cuda::Communicator* cuda = nullptr;
#endif
  int64_t rank = 0;
  int64_t input_bytes = 0, output_bytes = 0;
  std::mutex busy;  // a rank's calls one at a time
};

using Site = std::unordered_map<int64_t, std::unique_ptr<Member>>;  // by device

// Sites are added while programs are lowered and looked up by XLA's threads;
// never removed (a compiled program may run again at any time).
struct Registry {
  std::shared_mutex mutex;
  std::unordered_map<int64_t, Site> sites;
};

Registry& registry() {
  static Registry* r = new Registry;  // outlives every thread still running a call at exit
  return *r;
}

Member& lookup(int64_t site, int64_t device) {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  auto s = r.sites.find(site);
  if (s == r.sites.end())
    throw std::invalid_argument("purlin.jax: no collective is registered as site " + std::to_string(site) +
                                " (a program lowered in another process, or by another purlin._runtime?)");
  auto m = s->second.find(device);
  if (m == s->second.end())
    throw std::invalid_argument("purlin.jax: site " + std::to_string(site) + " has no rank on device " +
                                std::to_string(device) + " (the program runs on devices it was not lowered for)");
  return *m->second;
}

void check_sizes(const Member& m, int64_t site, int64_t device, int64_t input_bytes, int64_t output_bytes) {
  if (input_bytes < m.input_bytes || output_bytes < m.output_bytes)
    throw std::invalid_argument("purlin.jax: site " + std::to_string(site) + " on device " + std::to_string(device) +
                                " got buffers of " + std::to_string(input_bytes) + " and " +
                                std::to_string(output_bytes) + " bytes, its rank needs " +
                                std::to_string(m.input_bytes) + " and " + std::to_string(m.output_bytes));
}

void cpu_start(int64_t site, int64_t device, const void* input, int64_t input_bytes, void* output,
               int64_t output_bytes, purlin_jax_done done, void* context) {
  Member* m = nullptr;
  try {
    m = &lookup(site, device);
    if (!m->cpu) throw std::invalid_argument("purlin.jax: site " + std::to_string(site) + " is not a CPU collective");
    check_sizes(*m, site, device, input_bytes, output_bytes);
    // Its own thread: XLA's thread goes on with the program's other work, and
    // no rank's wait holds a thread XLA needs for a peer.
    std::thread([=] {
      std::string error;
      try {
        std::lock_guard<std::mutex> one(m->busy);
        std::memset(static_cast<unsigned char*>(output) + m->output_bytes, 0, size_t(output_bytes - m->output_bytes));
        m->cpu->run(m->rank, input, output);
      } catch (const std::exception& e) {
        error = e.what();
      }
      done(context, error.empty() ? nullptr : error.c_str());
    }).detach();
  } catch (const std::exception& e) {
    done(context, e.what());
  }
}

const char* cuda_launch(int64_t site, int64_t device, const void* input, int64_t input_bytes, void* output,
                        int64_t output_bytes, void* stream) {
  thread_local std::string error;
  try {
    Member& m = lookup(site, device);
#ifdef PURLIN_WITH_CUDA
    if (!m.cuda) throw std::invalid_argument("purlin.jax: site " + std::to_string(site) + " is not a CUDA collective");
    check_sizes(m, site, device, input_bytes, output_bytes);
    if (output_bytes > m.output_bytes) {
      int current = 0;
      cudaGetDevice(&current);
      cudaSetDevice(int(device));
      const cudaError_t e = cudaMemsetAsync(static_cast<char*>(output) + m.output_bytes, 0,
                                            size_t(output_bytes - m.output_bytes), static_cast<cudaStream_t>(stream));
      cudaSetDevice(current);
      if (e != cudaSuccess) throw std::runtime_error(std::string("purlin.jax: cudaMemsetAsync: ") + cudaGetErrorString(e));
    }
    m.cuda->run_rank(int(m.rank), reinterpret_cast<uintptr_t>(input), reinterpret_cast<uintptr_t>(output),
                     reinterpret_cast<uintptr_t>(stream));
    return nullptr;
#else
    (void)m, (void)input, (void)input_bytes, (void)output, (void)output_bytes, (void)stream;
    throw std::runtime_error("purlin.jax: purlin._runtime was built without CUDA");
#endif
  } catch (const std::exception& e) {
    error = e.what();
    return error.c_str();
  }
}

const purlin_jax_api kApi{PURLIN_JAX_API_VERSION, &cpu_start, &cuda_launch};

}  // namespace

void register_bindings(py::module_& m) {
  using cpu::RankCommunicator;
  py::class_<RankCommunicator>(m, "CpuRankCommunicator",
                               "Every rank of a plan in this process, each called on its own by a thread of the "
                               "caller's (one per device); the ranks meet in shared host memory")
      .def(py::init([](const Plan& plan, double timeout_s, std::string name, std::vector<std::string> signal_names,
                       std::vector<std::string> buffer_names) {
             return new RankCommunicator(
                 plan, {timeout_s, std::move(name), std::move(signal_names), std::move(buffer_names)});
           }),
           py::arg("plan"), py::arg("timeout_s") = 10.0, py::arg("name") = "collective",
           py::arg("signal_names") = std::vector<std::string>{}, py::arg("buffer_names") = std::vector<std::string>{})
      .def(
          "run",
          [](RankCommunicator& c, int64_t rank, uintptr_t input, uintptr_t output) {
            py::gil_scoped_release release;
            c.run(rank, reinterpret_cast<const void*>(input), reinterpret_cast<void*>(output));
          },
          py::arg("rank"), py::arg("input"), py::arg("output"),
          "One call of rank `rank` on host addresses holding input_bytes / output_bytes (the caller checks them); "
          "blocks until the rank is done")
      .def("input_bytes", &RankCommunicator::input_bytes, py::arg("rank"))
      .def("output_bytes", &RankCommunicator::output_bytes, py::arg("rank"))
      .def("epoch", &RankCommunicator::epoch, py::arg("rank"))
      .def_property_readonly("world", &RankCommunicator::world);

  m.def(
      "jax_register",
      [](int64_t site, const std::vector<std::tuple<int64_t, py::object, int64_t, int64_t, int64_t>>& members) {
        Site s;
        for (const auto& [device, comm, rank, input_bytes, output_bytes] : members) {
          auto member = std::make_unique<Member>();
          member->rank = rank;
          member->input_bytes = input_bytes;
          member->output_bytes = output_bytes;
          if (py::isinstance<RankCommunicator>(comm)) {
            member->cpu = comm.cast<RankCommunicator*>();
            if (member->cpu->input_bytes(rank) != input_bytes || member->cpu->output_bytes(rank) != output_bytes)
              throw py::value_error("jax_register: rank " + std::to_string(rank) + "'s buffers hold " +
                                    std::to_string(member->cpu->input_bytes(rank)) + " and " +
                                    std::to_string(member->cpu->output_bytes(rank)) + " bytes, not the " +
                                    std::to_string(input_bytes) + " and " + std::to_string(output_bytes) + " given");
          }
#ifdef PURLIN_WITH_CUDA
          else if (py::isinstance<cuda::Communicator>(comm)) {
            member->cuda = comm.cast<cuda::Communicator*>();
          }
#endif
          else {
            throw py::type_error("jax_register: a member's communicator is a CpuRankCommunicator or a "
                                 "CudaCommunicator, got " + py::str(py::type::of(comm)).cast<std::string>());
          }
          if (!s.emplace(device, std::move(member)).second)
            throw py::value_error("jax_register: device " + std::to_string(device) + " is listed twice");
        }
        Registry& r = registry();
        std::unique_lock<std::shared_mutex> lock(r.mutex);
        if (!r.sites.emplace(site, std::move(s)).second)
          throw py::value_error("jax_register: site " + std::to_string(site) + " is registered already");
      },
      py::arg("site"), py::arg("members"),
      "Register the collective XLA calls as `site`: (device, communicator, rank, input bytes, output bytes) for "
      "every device that runs it; the caller keeps the communicators alive");
  m.def(
      "jax_api", [] { return py::capsule(static_cast<const void*>(&kApi), "purlin_jax_api"); },
      "The C table (purlin_jax_api.h) the FFI handlers of purlin.jax call");
}

}  // namespace purlin::jax
