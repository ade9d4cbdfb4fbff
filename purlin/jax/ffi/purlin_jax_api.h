/* What purlin._runtime offers the XLA FFI handlers of purlin.jax (handlers.cc,
   compiled on first use against the running jaxlib's headers): plain C, so the
   two libraries agree on nothing but this table. purlin._runtime builds it
   (csrc/bindings/jax_ffi.cpp); the handlers take it once, before XLA calls them. */
#ifndef PURLIN_JAX_API_H_
#define PURLIN_JAX_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever the table changes; the handlers refuse another version. */
#define PURLIN_JAX_API_VERSION 1

/* Called once a call has finished: `error` is NULL, or what went wrong (valid
   during the call only). */
typedef void (*purlin_jax_done)(void* context, const char* error);

typedef struct purlin_jax_api {
  uint32_t version;
  /* Device `device`'s part of collective `site` on the CPU backend: started on
     its rank's own thread, `done(context, ...)` called when it ends (at once,
     on this thread, when it cannot start). Bytes are those of the buffers XLA
     passes; output bytes the collective does not write are zeroed. */
  void (*cpu_start)(int64_t site, int64_t device, const void* input, int64_t input_bytes, void* output,
                    int64_t output_bytes, purlin_jax_done done, void* context);
  /* Device `device`'s part of collective `site` on the CUDA backend, launched
     on `stream` (a cudaStream_t); NULL, or what went wrong (valid until this
     thread's next call). */
  const char* (*cuda_launch)(int64_t site, int64_t device, const void* input, int64_t input_bytes, void* output,
                             int64_t output_bytes, void* stream);
} purlin_jax_api;

#ifdef __cplusplus
}
#endif

#endif /* PURLIN_JAX_API_H_ */
