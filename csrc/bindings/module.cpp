// purlin._runtime: the plan decoder and the CPU backend; the CUDA backend
// registers itself here when the module is built with it.
#include <array>
#include <atomic>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "cpu/communicator.h"
#include "cpu/stream.h"
#include "cpu/process.h"
#include "jax_ffi.h"
#include "purlin/counts_tables.h"
#include "purlin/plan.h"

#ifdef PURLIN_WITH_CUDA
#include "cuda_bindings.h"
#define PURLIN_CUDA_BACKEND 1
#endif

namespace py = pybind11;

namespace {

const char* dtype_name(purlin::DType d) {
  switch (d) {
    case purlin::DType::BF16: return "bf16";
    case purlin::DType::F16: return "f16";
    case purlin::DType::F32: return "f32";
    case purlin::DType::FP8E4M3: return "fp8e4m3";
    case purlin::DType::FP8E5M2: return "fp8e5m2";
    case purlin::DType::I8: return "i8";
    case purlin::DType::UI8: return "ui8";
    case purlin::DType::I32: return "i32";
    case purlin::DType::UI32: return "ui32";
    case purlin::DType::I64: return "i64";
    case purlin::DType::UI64: return "ui64";
    case purlin::DType::F64: return "f64";
  }
  return "?";
}

purlin::Plan decode(const py::array& words) {
  if (!words.dtype().is(py::dtype::of<int64_t>()) || words.ndim() != 1)
    throw py::type_error("a binary plan is a 1-D numpy int64 array, got " + std::to_string(words.ndim()) +
                         "-D " + py::str(words.dtype()).cast<std::string>());
  auto flat = py::array_t<int64_t, py::array::c_style>::ensure(words);
  return purlin::decode_plan(flat.data(), flat.size());
}

// Pointers to the per-rank arrays, each C-contiguous and at least `bytes[r]` long.
template <class Ptr>
std::vector<Ptr> rank_pointers(const py::list& arrays, const std::vector<int64_t>& bytes, bool writable,
                               const char* what) {
  if (arrays.size() != bytes.size())
    throw py::value_error("the plan is for world " + std::to_string(bytes.size()) + ", got " +
                          std::to_string(arrays.size()) + " " + what + "s (one array per rank expected)");
  std::vector<Ptr> out;
  for (size_t r = 0; r < arrays.size(); ++r) {
    auto a = py::reinterpret_borrow<py::object>(arrays[r]);
    if (!py::isinstance<py::array>(a))
      throw py::type_error(std::string(what) + " of rank " + std::to_string(r) + " is not a numpy array");
    auto arr = py::reinterpret_borrow<py::array>(a);
    const std::string where = std::string(what) + " of rank " + std::to_string(r);
    if (!(arr.flags() & py::array::c_style)) throw py::value_error(where + " is not C-contiguous");
    if (writable && !arr.writeable()) throw py::value_error(where + " is read-only");
    if (arr.nbytes() < bytes[r])
      throw py::value_error(where + " has " + std::to_string(arr.nbytes()) + " bytes, the plan needs at least " +
                            std::to_string(bytes[r]) + " for rank " + std::to_string(r));
    out.push_back(static_cast<Ptr>(writable ? arr.mutable_data() : const_cast<void*>(arr.data())));
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "purlin's C++ runtime: binary plan decoding and the CPU (and CUDA) backends";

  py::register_exception<purlin::cpu::CollectiveTimeout>(m, "CollectiveTimeout", PyExc_TimeoutError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const purlin::PlanError& e) {
      PyErr_SetString(PyExc_ValueError, (std::string("invalid plan: ") + e.what()).c_str());
    }
  });

  py::class_<purlin::Plan>(m, "Plan", "A decoded, bounds-checked binary plan")
      .def_readonly("world", &purlin::Plan::world)
      .def_readonly("input_elems", &purlin::Plan::input_elems)
      .def_readonly("output_elems", &purlin::Plan::output_elems)
      .def_readonly("input_extent", &purlin::Plan::input_extent, "per rank: input elements the plan touches")
      .def_readonly("output_extent", &purlin::Plan::output_extent, "per rank: output elements the plan touches")
      .def_readonly("advance", &purlin::Plan::advance)
      .def_property_readonly("dtype", [](const purlin::Plan& p) { return dtype_name(p.dtype); })
      .def_property_readonly("roles", [](const purlin::Plan& p) { return p.roles.size(); })
      .def_property_readonly("instructions", [](const purlin::Plan& p) { return p.instrs.size(); });

  m.def("decode", &decode, py::arg("words"), "Decode and check a binary plan (ValueError when it is invalid)");

  m.def(
      "counts_tables",
      [](const std::vector<std::array<purlin::i64, 7>>& shapes, int64_t world, int64_t row,
         const std::vector<purlin::i64>& counts, int64_t rank, int64_t eb, std::vector<purlin::i64> tables,
         int64_t input_elems, int64_t output_elems, const std::vector<purlin::i64>& buffer_elems) {
        if (int64_t(counts.size()) != world * row || buffer_elems.size() != shapes.size() || rank < 0 ||
            rank >= world || eb < 1 || eb > purlin::kPacketDataBytes || int64_t(tables.size()) < purlin::abi::kGlobalWords)
          throw std::invalid_argument("counts_tables: inconsistent arguments");
        std::vector<purlin::counts::PhaseShape> phases;
        for (const auto& a : shapes) phases.push_back({a[0], a[1], a[2], a[3], a[4], a[5], a[6]});
        const purlin::counts::Counts n{counts.data(), world, row};
        const int64_t align = purlin::kPacketDataBytes / eb;
        std::vector<purlin::i64> scratch(phases.size() * purlin::counts::index_words(world));
        std::vector<purlin::counts::Index> index;
        for (size_t k = 0; k < phases.size(); ++k) {
          index.push_back({scratch.data() + k * purlin::counts::index_words(world), world});
          purlin::counts::prepare(n, phases[k], align, index[k], 0, 1);
        }
        purlin::counts::Problem p = purlin::counts::check(n, phases.data(), int64_t(phases.size()), input_elems,
                                                          output_elems, buffer_elems.data(), index.data());
        const int64_t capacity = tables[purlin::abi::kTableCapacity];
        int64_t at = int64_t(tables.size());
        tables.resize(size_t(capacity > at ? capacity : at));
        for (size_t k = 0; k < phases.size() && p.code == 0; ++k) {
          at = purlin::counts::build_phase(n, phases[k], index[k], int64_t(k), rank, eb, align, tables.data(), at,
                                           capacity);
          if (at < 0) p = {int64_t(purlin::abi::CountsError::Tables), rank, 0, capacity};
        }
        tables.resize(p.code == 0 ? size_t(at) : 0);
        return py::make_tuple(py::make_tuple(p.code, p.rank, p.need, p.have), tables);
      },
      py::arg("shapes"), py::arg("world"), py::arg("row"), py::arg("counts"), py::arg("rank"), py::arg("eb"),
      py::arg("tables"), py::arg("input_elems"), py::arg("output_elems"), py::arg("buffer_elems"),
      "What a device-counts kernel computes in each block (purlin/counts_tables.h), on the host: "
      "((CountsError, rank, need, have), rank's tables: `tables`, its static words, with the records after them).");

  py::class_<purlin::cpu::Communicator>(m, "CpuCommunicator",
                                        "A plan run by one thread per (rank, role) over shared host memory")
      .def(py::init([](const purlin::Plan& plan, double timeout_s, std::string name,
                       std::vector<std::string> signal_names, std::vector<std::string> buffer_names,
                       int64_t cache_bypass_bytes) {
             return new purlin::cpu::Communicator(plan, {timeout_s, std::move(name), std::move(signal_names),
                                                         std::move(buffer_names), cache_bypass_bytes});
           }),
           py::arg("plan"), py::arg("timeout_s") = 10.0, py::arg("name") = "collective",
           py::arg("signal_names") = std::vector<std::string>{}, py::arg("buffer_names") = std::vector<std::string>{},
           py::arg("cache_bypass_bytes") = -1,
           "cache_bypass_bytes: from how many bytes of the call's buffers (every rank's) large copies bypass the "
           "cache; -1, half the last-level cache")
      .def(
          "run",
          [](purlin::cpu::Communicator& c, const py::list& inputs, const py::list& outputs) {
            std::vector<int64_t> in_bytes, out_bytes;
            for (int64_t r = 0; r < c.world(); ++r) {
              in_bytes.push_back(c.input_bytes(r));
              out_bytes.push_back(c.output_bytes(r));
            }
            auto in = rank_pointers<const void*>(inputs, in_bytes, false, "input");
            auto out = rank_pointers<void*>(outputs, out_bytes, true, "output");
            py::gil_scoped_release release;
            c.run(in, out);
          },
          py::arg("inputs"), py::arg("outputs"),
          "One call on all ranks: one array per rank, raw bytes (the caller checks the dtype)")
      .def("epoch", &purlin::cpu::Communicator::epoch, py::arg("rank"))
      .def("rebind", &purlin::cpu::Communicator::rebind, py::arg("plan"),
           "Run `plan` from the next call on: another binding of this plan's kernel, laid out alike")
      .def_property_readonly("bypasses_cache", &purlin::cpu::Communicator::bypasses_cache)
      .def_property_readonly("world", &purlin::cpu::Communicator::world);

  py::class_<purlin::cpu::ProcessCommunicator>(
      m, "CpuProcessCommunicator",
      "One rank of a plan in this process, its peers' memory mapped from POSIX shared memory")
      .def(py::init([](const purlin::Plan& plan, int64_t rank, double timeout_s, std::string name,
                       std::vector<std::string> signal_names, std::vector<std::string> buffer_names,
                       size_t heap_bytes, bool buffers_anywhere) {
             return new purlin::cpu::ProcessCommunicator(
                 plan, rank, {timeout_s, std::move(name), std::move(signal_names), std::move(buffer_names)},
                 heap_bytes, buffers_anywhere);
           }),
           py::arg("plan"), py::arg("rank"), py::arg("timeout_s") = 10.0, py::arg("name") = "collective",
           py::arg("signal_names") = std::vector<std::string>{}, py::arg("buffer_names") = std::vector<std::string>{},
           py::arg("heap_bytes") = 0, py::arg("buffers_anywhere") = false)
      .def_property_readonly("shm_name", &purlin::cpu::ProcessCommunicator::shm_name)
      .def_property_readonly(
          "heap", [](const purlin::cpu::ProcessCommunicator& c) { return reinterpret_cast<uintptr_t>(c.heap()); },
          "The address of this rank's shared heap (a symmetric plan's buffers live there)")
      .def_property_readonly("heap_bytes", &purlin::cpu::ProcessCommunicator::heap_bytes)
      .def("connect", &purlin::cpu::ProcessCommunicator::connect, py::arg("names"),
           "Map every peer's region: names[r] is rank r's shm_name")
      .def("unlink", &purlin::cpu::ProcessCommunicator::unlink,
           "Remove this region's name once every peer has mapped it")
      .def(
          "run",
          [](purlin::cpu::ProcessCommunicator& c, uintptr_t input, uintptr_t output) {
            py::gil_scoped_release release;
            c.run(reinterpret_cast<const void*>(input), reinterpret_cast<void*>(output));
          },
          py::arg("input"), py::arg("output"),
          "One call of this rank on host addresses holding input_bytes / output_bytes (the caller checks them)")
      .def("rebind", &purlin::cpu::ProcessCommunicator::rebind, py::arg("plan"),
           "Run `plan` from the next call on: another binding of this plan's kernel, laid out alike")
      .def("stop", &purlin::cpu::ProcessCommunicator::stop,
           "Make the peers' waiting calls on this communicator stop at once, as a failed call of this rank does")
      .def("close", &purlin::cpu::ProcessCommunicator::close)
      .def("epoch", [](const purlin::cpu::ProcessCommunicator& c) { return c.epoch(c.rank()); })
      .def("input_bytes", &purlin::cpu::ProcessCommunicator::input_bytes, py::arg("rank"))
      .def("output_bytes", &purlin::cpu::ProcessCommunicator::output_bytes, py::arg("rank"))
      .def_property_readonly("rank", &purlin::cpu::ProcessCommunicator::rank)
      .def_property_readonly("bypasses_cache", &purlin::cpu::ProcessCommunicator::bypasses_cache)
      .def_property_readonly("world", &purlin::cpu::ProcessCommunicator::world);

  m.def("last_level_cache_bytes", &purlin::cpu::last_level_cache_bytes,
        "The last-level cache the CPU backend sizes its copies by (Linux's report for CPU 0, else 32 MiB)");
  m.def(
      "fence", [] { std::atomic_thread_fence(std::memory_order_seq_cst); },
      "A sequentially consistent fence: this thread's earlier stores are seen before its later loads read");

  purlin::jax::register_bindings(m);

#ifdef PURLIN_CUDA_BACKEND
  purlin::cuda::register_bindings(m);
  m.attr("backends") = py::make_tuple("cpu", "cuda");
#else
  m.attr("backends") = py::make_tuple("cpu");
#endif
}
