// fastdiv.h — division by a divisor fixed for a launch, as one 32x32->64-bit
// multiply and a shift; plain C++ (host and device) so the host compiler checks
// it (tests/test_fastdiv.py).
//
// Why: a device-side integer division is a ~20-instruction dependent chain
// (I2F, MUFU.RCP, F2I, corrections), ~100 SM clocks. The decode kernel's
// set-up had a dozen of them in line before its first table lookup; with the
// divisors built on the host its set-up is a few multiplies.
//
// Method (Granlund & Montgomery, PLDI 1994, the round-up variant): for d >= 1,
// l = ceil(log2 d), s = 31 + l, m = ceil(2^s / d) < 2^32. For 0 <= n < 2^31,
// floor(n * m / 2^s) = floor(n / d): with m d = 2^s + e, 0 <= e < d, the
// quotient's error term n e / (d 2^s) < 2^-l <= 1 / d, which cannot carry past
// the next multiple of 1/d.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define KBIT_HD __host__ __device__ __forceinline__
#else
#define KBIT_HD inline
#endif

namespace kbit {

struct FastDiv {
  uint32_t d;       // the divisor (>= 1)
  uint32_t mul;     // ceil(2^shift / d)
  uint32_t shift;   // 31 + ceil(log2 d)

  // Built where d is known (the host, or a device set-up that cannot avoid it).
  KBIT_HD static FastDiv of(uint32_t d) {
    FastDiv f;
    f.d = d;
#if defined(__CUDA_ARCH__)
    const uint32_t l = d > 1 ? 32 - __clz(d - 1) : 0;   // ceil(log2 d), one instruction
    f.shift = 31 + l;
    // m without a 64-bit integer division, which is a subroutine call on the
    // GPU: one thread building two divisors with it took ~0.8 us in the
    // grouped decode set-up (docs/results.md v21). The double-precision
    // quotient (inline: a reciprocal and a few DFMAs) is the exact one, which
    // lies below 2^32, rounded to nearest: it cannot pass an integer (integers
    // there are doubles), but it can land on the integer just below a
    // fractional quotient. Its ceiling is then m - 1, and one 64-bit multiply
    // tells. (Directed rounding, __ddiv_ru, is a subroutine call again.)
    const uint64_t num = uint64_t(1) << f.shift;
    uint64_t m = __double2ull_rz(ceil(double(num) / double(d)));
    if (m * d < num) ++m;
    f.mul = uint32_t(m);
#else
    uint32_t l = 0;
    while ((uint64_t(1) << l) < d) ++l;
    f.shift = 31 + l;
    f.mul = uint32_t(((uint64_t(1) << f.shift) + d - 1) / d);
#endif
    return f;
  }
  // floor(n / d) for 0 <= n < 2^31.
  KBIT_HD uint32_t div(uint32_t n) const { return uint32_t((uint64_t(n) * mul) >> shift); }
};

}  // namespace kbit
