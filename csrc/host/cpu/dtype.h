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

// Load element i of an array of `dtype` as f32.
inline float load_f32(DType dtype, const unsigned char* p, int64_t i) {
  switch (dtype) {
    case DType::F32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case DType::BF16: {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      return bf16_to_f32(b);
    }
    case DType::F16: {
      uint16_t b;
      std::memcpy(&b, p + 2 * i, 2);
      return F16::to_f32(b);
    }
    case DType::FP8E4M3:
      return E4M3::to_f32(p[i]);
    case DType::FP8E5M2:
      return E5M2::to_f32(p[i]);
    default:
      break;
  }
  return 0.0f;
}

// Store f32 `v` rounded to `dtype` into element i.
inline void store_f32(DType dtype, unsigned char* p, int64_t i, float v) {
  switch (dtype) {
    case DType::F32:
      std::memcpy(p + 4 * i, &v, 4);
      return;
    case DType::BF16: {
      uint16_t b = f32_to_bf16(v);
      std::memcpy(p + 2 * i, &b, 2);
      return;
    }
    case DType::F16: {
      uint16_t b = static_cast<uint16_t>(F16::from_f32(v));
      std::memcpy(p + 2 * i, &b, 2);
      return;
    }
    case DType::FP8E4M3:
      p[i] = static_cast<unsigned char>(E4M3::from_f32(v));
      return;
    case DType::FP8E5M2:
      p[i] = static_cast<unsigned char>(E5M2::from_f32(v));
      return;
    default:
      return;
  }
}

// Whether `dtype` reduces through f32 accumulators (the narrow floats and f32).
inline bool reduces_via_f32(DType dtype) { return static_cast<int>(dtype) <= static_cast<int>(DType::FP8E5M2); }

// a op b in T: integers in their unsigned counterpart, so overflow wraps
// (signed overflow would be undefined). As numpy's maximum/minimum in the
// reference: NaN propagates, and of equal values (+0 and -0) the later source wins.
template <class T>
T combine(RedOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case RedOp::Sum: return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case RedOp::Prod: return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case RedOp::Max: return a > b ? a : b;
      case RedOp::Min: return a < b ? a : b;
      case RedOp::And: return static_cast<T>(a & b);
      case RedOp::Or: return static_cast<T>(a | b);
      case RedOp::Xor: return static_cast<T>(a ^ b);
      case RedOp::Avg:  // floating point only (check_programs)
      case RedOp::None: break;
    }
  } else {
    switch (op) {
      case RedOp::Sum:
      case RedOp::Avg: return a + b;  // an average is a sum, divided once at the end
      case RedOp::Prod: return a * b;
      case RedOp::Max: return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
      case RedOp::Min: return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
      default: break;
    }
  }
  return a;
}

template <class T>
void combine_into_as(RedOp op, unsigned char* acc, const unsigned char* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, acc + i * sizeof(T), sizeof(T));
    std::memcpy(&b, x + i * sizeof(T), sizeof(T));
    a = combine<T>(op, a, b);
    std::memcpy(acc + i * sizeof(T), &a, sizeof(T));
  }
}

// acc[i] /= contributions for n f64 elements: an average's end (the other
// dtypes that reduce exactly are integers, which take no average).
inline void finish_average_f64(unsigned char* acc, int64_t n, int64_t contributions) {
  for (int64_t i = 0; i < n; ++i) {
    double a;
    std::memcpy(&a, acc + i * sizeof(double), sizeof(double));
    a /= static_cast<double>(contributions);
    std::memcpy(acc + i * sizeof(double), &a, sizeof(double));
  }
}

// acc[i] = acc[i] op x[i] for n elements of a dtype that reduces exactly.
inline void combine_into(DType dtype, RedOp op, unsigned char* acc, const unsigned char* x, int64_t n) {
  switch (dtype) {
    case DType::I8: return combine_into_as<int8_t>(op, acc, x, n);
    case DType::UI8: return combine_into_as<uint8_t>(op, acc, x, n);
    case DType::I32: return combine_into_as<int32_t>(op, acc, x, n);
    case DType::UI32: return combine_into_as<uint32_t>(op, acc, x, n);
    case DType::I64: return combine_into_as<int64_t>(op, acc, x, n);
    case DType::UI64: return combine_into_as<uint64_t>(op, acc, x, n);
    case DType::F64: return combine_into_as<double>(op, acc, x, n);
    default: return;
  }
}

}  // namespace purlin::cpu
