// The XLA FFI handlers of purlin.jax's collectives, one per platform. Compiled
// on first use against the headers of the jaxlib that runs them
// (purlin/jax/build.py), so nothing here is tied to a jaxlib version at
// purlin's own build; what they run lives in purlin._runtime, reached through
// the C table of purlin_jax_api.h.
#include <cstdint>
#include <string>

#include "purlin_jax_api.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

const purlin_jax_api* api = nullptr;

// CPU: the device's rank runs on a thread of its own, so the thunk returns at
// once and XLA completes it when the rank is done.
ffi::Future CpuCollective(int32_t device, ffi::AnyBuffer input, ffi::Result<ffi::AnyBuffer> output, int64_t site) {
  auto* promise = new ffi::Promise();
  ffi::Future future(*promise);
  api->cpu_start(
      site, device, input.untyped_data(), static_cast<int64_t>(input.size_bytes()), output->untyped_data(),
      static_cast<int64_t>(output->size_bytes()),
      [](void* context, const char* error) {
        auto* p = static_cast<ffi::Promise*>(context);
        if (error)
          p->SetError(ffi::Error(ffi::ErrorCode::kInternal, error));
        else
          p->SetAvailable();
        delete p;
      },
      promise);
  return future;
}

// GPU: the device's rank kernel is launched on XLA's stream for the device.
ffi::Error CudaCollective(void* stream, int32_t device, ffi::AnyBuffer input, ffi::Result<ffi::AnyBuffer> output,
                          int64_t site) {
  if (const char* error = api->cuda_launch(site, device, input.untyped_data(),
                                           static_cast<int64_t>(input.size_bytes()), output->untyped_data(),
                                           static_cast<int64_t>(output->size_bytes()), stream))
    return ffi::Error(ffi::ErrorCode::kInternal, std::string(error));
  return ffi::Error::Success();
}

}  // namespace

extern "C" {

// Takes purlin._runtime's table before XLA calls a handler; 0 on success, else
// the version this file was written for.
int purlin_jax_connect(const purlin_jax_api* table) {
  if (!table || table->version != PURLIN_JAX_API_VERSION) return PURLIN_JAX_API_VERSION;
  api = table;
  return 0;
}

}  // extern "C"

XLA_FFI_DEFINE_HANDLER_SYMBOL(purlin_jax_cpu, CpuCollective,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("site"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(purlin_jax_cuda, CudaCollective,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<void*>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int64_t>("site"));
