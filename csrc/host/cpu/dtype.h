// Element types of the CPU backend. The narrow floats reduce through f32:
// conversion to f32 (exact) and back with round-to-nearest-even, bit for bit
// as ml_dtypes/numpy for finite values. f64 and the integers reduce exactly in
// their own type (integers wrap as two's complement), as numpy does.
// Overflow gives inf, except for fp8 e4m3fn, which has none and gives NaN
// (ml_dtypes' non-saturating conversion). NaN becomes the type's quiet NaN
// with the sign kept.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "purlin/plan.h"

namespace purlin::cpu {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A narrow binary float: E exponent bits, M mantissa bits, IEEE bias.
// `ieee`: all-ones exponent means inf/NaN; otherwise (e4m3fn) only S.1111.111
// is NaN and the rest of the top binade is finite.
template <int E, int M, bool ieee>
struct NarrowFloat {
  static constexpr int bias = (1 << (E - 1)) - 1;
  static constexpr uint32_t sign_bit = 1u << (E + M);
  static constexpr uint32_t inf_code = ((1u << E) - 1) << M;
  static constexpr uint32_t nan_code = ieee ? inf_code | (1u << (M - 1)) : (1u << (E + M)) - 1;
  static constexpr uint32_t max_finite = ieee ? inf_code - 1 : nan_code - 1;

  static float to_f32(uint32_t code) {
    const uint32_t sign = (code & sign_bit) ? 0x80000000u : 0;
    const uint32_t exp = (code >> M) & ((1u << E) - 1), mant = code & ((1u << M) - 1);
    const uint32_t mag = code & (sign_bit - 1);
    if (mag > max_finite) {
      if (ieee && mant == 0) return bits_f32(sign | 0x7F800000u);
      return bits_f32(sign | 0x7FC00000u);
    }
    if (exp == 0) {
      // Subnormal: mant * 2^(1 - bias - M), exact in f32.
      float v = static_cast<float>(mant) * bits_f32(static_cast<uint32_t>(127 + 1 - bias - M) << 23);
      return bits_f32(sign | f32_bits(v));
    }
    return bits_f32(sign | ((exp - bias + 127) << 23) | (mant << (23 - M)));
  }

  static uint32_t from_f32(float f) {
    const uint32_t u = f32_bits(f);
    const uint32_t sign = (u >> 31) ? sign_bit : 0;
    const uint32_t f32_exp = (u >> 23) & 0xFF;
    if (f32_exp == 0xFF) {
      if ((u & 0x7FFFFF) == 0) return sign | (ieee ? inf_code : nan_code);
      return sign | nan_code;
    }
    // f32 subnormals lie far below half the smallest subnormal of these types.
    if (f32_exp == 0) return sign;
    const int e = static_cast<int>(f32_exp) - 127;
    const int emin = 1 - bias;
    if (e > bias + 1) return sign | (ieee ? inf_code : nan_code);
    const uint32_t m = (u & 0x7FFFFF) | 0x800000;  // 24 significant bits
    const int shift = (23 - M) + (e < emin ? emin - e : 0);
    uint32_t rounded = 0;
    if (shift < 25) {
      rounded = m >> shift;
      const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
      if (rem > half || (rem == half && (rounded & 1))) ++rounded;
    }
    // Normal: the implicit bit in `rounded` carries the exponent up by one,
    // and a rounding carry moves to the next binade by itself.
    const uint32_t mag = e < emin ? rounded : (static_cast<uint32_t>(e + bias - 1) << M) + rounded;
    if (mag > max_finite) return sign | (ieee ? inf_code : nan_code);
    return sign | mag;
  }
};

using F16 = NarrowFloat<5, 10, true>;
using E4M3 = NarrowFloat<4, 3, false>;
using E5M2 = NarrowFloat<5, 2, true>;

inline float bf16_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  // Round to nearest even on the 16 dropped bits; a carry into the exponent
  // (up to inf) is the right result.
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

// Element type D as stored, and the accumulator it reduces in: f32 for the
// floats up to f32, the type itself for f64 and the integers.
template <DType D>
struct Elem;

#define PURLIN_ELEM(D, Stored, Accum, LOAD, STORE)                                     \
  template <>                                                                          \
  struct Elem<DType::D> {                                                              \
    using Acc = Accum;                                                                 \
    static Acc load(const unsigned char* p, int64_t i) {                               \
      Stored s;                                                                        \
      std::memcpy(&s, p + i * sizeof(Stored), sizeof(Stored));                         \
      return LOAD;                                                                     \
    }                                                                                  \
    static void store(unsigned char* p, int64_t i, Acc v) {                            \
      const Stored s = STORE;                                                          \
      std::memcpy(p + i * sizeof(Stored), &s, sizeof(Stored));                         \
    }                                                                                  \
  };

PURLIN_ELEM(F32, float, float, s, v)
PURLIN_ELEM(BF16, uint16_t, float, bf16_to_f32(s), f32_to_bf16(v))
PURLIN_ELEM(F16, uint16_t, float, F16::to_f32(s), static_cast<uint16_t>(F16::from_f32(v)))
PURLIN_ELEM(FP8E4M3, uint8_t, float, E4M3::to_f32(s), static_cast<uint8_t>(E4M3::from_f32(v)))
PURLIN_ELEM(FP8E5M2, uint8_t, float, E5M2::to_f32(s), static_cast<uint8_t>(E5M2::from_f32(v)))
PURLIN_ELEM(I8, int8_t, int8_t, s, v)
PURLIN_ELEM(UI8, uint8_t, uint8_t, s, v)
PURLIN_ELEM(I32, int32_t, int32_t, s, v)
PURLIN_ELEM(UI32, uint32_t, uint32_t, s, v)
PURLIN_ELEM(I64, int64_t, int64_t, s, v)
PURLIN_ELEM(UI64, uint64_t, uint64_t, s, v)
PURLIN_ELEM(F64, double, double, s, v)
#undef PURLIN_ELEM

// a op b in T: integers in their unsigned counterpart, so overflow wraps
// (signed overflow would be undefined). As numpy's maximum/minimum in the
// reference: NaN propagates, and of equal values (+0 and -0) the later source
// wins. An op the dtype does not take (check_programs refuses it) keeps `a`.
template <RedOp op, class T>
T combine(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    if constexpr (op == RedOp::Sum) return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    if constexpr (op == RedOp::Prod) return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    if constexpr (op == RedOp::Max) return a > b ? a : b;
    if constexpr (op == RedOp::Min) return a < b ? a : b;
    if constexpr (op == RedOp::And) return static_cast<T>(a & b);
    if constexpr (op == RedOp::Or) return static_cast<T>(a | b);
    if constexpr (op == RedOp::Xor) return static_cast<T>(a ^ b);
  } else {
    // An average is a sum, divided once at the end.
    if constexpr (op == RedOp::Sum || op == RedOp::Avg) return a + b;
    if constexpr (op == RedOp::Prod) return a * b;
    if constexpr (op == RedOp::Max) return std::isnan(a) || std::isnan(b) ? T(NAN) : (a > b ? a : b);
    if constexpr (op == RedOp::Min) return std::isnan(a) || std::isnan(b) ? T(NAN) : (a < b ? a : b);
  }
  return a;
}

// out[i] = srcs[0][i] op ... op srcs[count-1][i] for i < n, accumulated in
// `acc` (n elements) one source at a time, in source order; an average
// divides once at the end. One loop per source and dtype, no dispatch inside.
// Vectorised (-O2 leaves these loops scalar): `acc` is apart from every
// source and from `out` (which may be a source: in place).
#pragma GCC push_options
#pragma GCC optimize("tree-vectorize")
template <DType D, RedOp op>
void reduce_run(typename Elem<D>::Acc* __restrict acc, const unsigned char* const* srcs, int64_t count, int64_t n,
                unsigned char* out) {
  using E = Elem<D>;
  using Acc = typename E::Acc;
  const unsigned char* first = srcs[0];
  for (int64_t i = 0; i < n; ++i) acc[i] = E::load(first, i);
  for (int64_t k = 1; k < count; ++k) {
    const unsigned char* src = srcs[k];
    for (int64_t i = 0; i < n; ++i) acc[i] = combine<op>(acc[i], E::load(src, i));
  }
  if constexpr (op == RedOp::Avg && !std::is_integral_v<Acc>) {
    const Acc contributions = static_cast<Acc>(count);
    for (int64_t i = 0; i < n; ++i) acc[i] /= contributions;
  }
  for (int64_t i = 0; i < n; ++i) E::store(out, i, acc[i]);
}
#pragma GCC pop_options

// Calls f(std::integral_constant<DType, D>{}) for `dtype`.
template <class F>
void with_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::F32: return f(std::integral_constant<DType, DType::F32>{});
    case DType::BF16: return f(std::integral_constant<DType, DType::BF16>{});
    case DType::F16: return f(std::integral_constant<DType, DType::F16>{});
    case DType::FP8E4M3: return f(std::integral_constant<DType, DType::FP8E4M3>{});
    case DType::FP8E5M2: return f(std::integral_constant<DType, DType::FP8E5M2>{});
    case DType::I8: return f(std::integral_constant<DType, DType::I8>{});
    case DType::UI8: return f(std::integral_constant<DType, DType::UI8>{});
    case DType::I32: return f(std::integral_constant<DType, DType::I32>{});
    case DType::UI32: return f(std::integral_constant<DType, DType::UI32>{});
    case DType::I64: return f(std::integral_constant<DType, DType::I64>{});
    case DType::UI64: return f(std::integral_constant<DType, DType::UI64>{});
    case DType::F64: return f(std::integral_constant<DType, DType::F64>{});
  }
}

// Calls f(std::integral_constant<RedOp, op>{}) for `redop` (None: Sum, never reached by a Reduce).
template <class F>
void with_redop(RedOp redop, F&& f) {
  switch (redop) {
    case RedOp::Prod: return f(std::integral_constant<RedOp, RedOp::Prod>{});
    case RedOp::Max: return f(std::integral_constant<RedOp, RedOp::Max>{});
    case RedOp::Min: return f(std::integral_constant<RedOp, RedOp::Min>{});
    case RedOp::And: return f(std::integral_constant<RedOp, RedOp::And>{});
    case RedOp::Or: return f(std::integral_constant<RedOp, RedOp::Or>{});
    case RedOp::Xor: return f(std::integral_constant<RedOp, RedOp::Xor>{});
    case RedOp::Avg: return f(std::integral_constant<RedOp, RedOp::Avg>{});
    case RedOp::Sum:
    case RedOp::None: return f(std::integral_constant<RedOp, RedOp::Sum>{});
  }
}

}  // namespace purlin::cpu
