/*
 * Integer helpers shared by the kernels: CMSIS-NN requantization as ExecuTorch's
 * Python reference defines it (passes_utils.requantize_cmsis), modular int32
 * arithmetic (torch's int32 tensors wrap), int8 sums and dot products.
 *
 * Everything is written without signed overflow and without shifting negative
 * numbers, so the results are defined C11 and clean under UBSan.
 */
#ifndef TINYRPS_ARITH_H
#define TINYRPS_ARITH_H

#include <stdint.h>

/* Two's complement reinterpretation, without implementation-defined conversions. */
static inline int32_t trt_wrap32(uint32_t u) { return u <= INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1; }
static inline int64_t trt_wrap64(uint64_t u) { return u <= INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1; }

/* a + b as torch computes it on int32 tensors: modulo 2^32. */
static inline int32_t trt_add_wrap(int32_t a, int32_t b) { return trt_wrap32((uint32_t)a + (uint32_t)b); }

/* Right shifts of negative int64 values are arithmetic (flooring) on every compiler this code
 * supports; C leaves it implementation-defined, so check it at compile time (in C99's terms:
 * a negative array size fails the build). */
typedef char trt_arithmetic_right_shift_required[(-1 >> 1) == -1 && ((int64_t)-3 >> 1) == -2 ? 1 : -1];

/* Rounding right shift by n in [1, 31], half away from zero, of an int32 value (the same
 * steps as the int64 form below, in 32 bits: what every exported program's layers need). */
static inline int32_t trt_round_shift32(int32_t v, int32_t n) {
    const int32_t mask = (int32_t)((1u << n) - 1u);
    const int32_t remainder = v & mask, threshold = (mask >> 1) + (v < 0 ? 1 : 0);
    return (v >> n) + (remainder > threshold ? 1 : 0);
}

/*
 * requantize_cmsis(acc, multiplier, shift), with torch's int64 semantics:
 *   v = acc << max(shift, 0)                       (int64, wraps)
 *   v = (v * multiplier + 2^30) >> 31              (doubling high multiply, no saturation)
 *   if shift < 0: n = -shift, mask = 2^n - 1, r = v & mask, v >>= n,
 *                 v += r > (mask >> 1) + (v < 0)   (round half away from zero)
 *   return (int32) v                               (wraps)
 * shift is validated to [-31, 31] at load.
 */
static inline int32_t trt_requantize(int64_t acc, int32_t multiplier, int32_t shift) {
    if (shift <= 0 && multiplier != INT32_MIN && acc >= INT32_MIN && acc <= INT32_MAX) {
        /* the usual case: |acc * multiplier| < 2^62, exact in int64 (one 32x32->64 multiply),
         * and the doubled high half fits int32 (only INT32_MIN * INT32_MIN would not) */
        const int32_t high = (int32_t)((acc * multiplier + ((int64_t)1 << 30)) >> 31);
        return shift == 0 ? high : trt_round_shift32(high, -shift);
    }
    /* torch's int64 shift and multiply wrap: do the same in uint64 */
    uint64_t value = (uint64_t)acc << (shift > 0 ? shift : 0);
    int64_t result = trt_wrap64(value * (uint64_t)(int64_t)multiplier + ((uint64_t)1 << 30)) >> 31;
    if (shift < 0) {
        int right = -shift;
        int64_t mask = ((int64_t)1 << right) - 1;
        int64_t remainder = result & mask;
        result >>= right;
        int64_t threshold = (mask >> 1) + (result < 0 ? 1 : 0);
        result += remainder > threshold ? 1 : 0;
    }
    return trt_wrap32((uint32_t)result);
}

static inline int32_t trt_clamp(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* Requantized accumulator -> int8 output: add the output offset (int32, wraps), clamp. */
static inline int8_t trt_output_s8(int64_t acc, int32_t multiplier, int32_t shift, int32_t output_offset,
                                   int32_t act_min, int32_t act_max) {
    int32_t v = trt_add_wrap(trt_requantize(acc, multiplier, shift), output_offset);
    return (int8_t)trt_clamp(v, act_min, act_max);
}

/* Left shift of an int32 as torch's int32 `<<` computes it: modulo 2^32 (n in [0, 31]). */
static inline int32_t trt_shl_wrap(int32_t v, int32_t n) { return trt_wrap32((uint32_t)v << n); }

/* a * b as torch computes it on int32 tensors: modulo 2^32. */
static inline int32_t trt_mul_wrap(int32_t a, int32_t b) { return trt_wrap32((uint32_t)a * (uint32_t)b); }

/*
 * One operand of quantized_add (operators.quantized_add_impl), in int32 as torch computes it:
 *   requantize_cmsis((x - zero_point) << 20, multiplier, shift)
 * |zero_point| <= 2^24 (checked at load), so x - zero_point is exact; the shift wraps.
 */
#define TRT_ADD_LEFT_SHIFT 20
static inline int32_t trt_add_term(int32_t x, int32_t zero_point, int32_t multiplier, int32_t shift) {
    return trt_requantize(trt_shl_wrap(x - zero_point, TRT_ADD_LEFT_SHIFT), multiplier, shift);
}

/* int8 dot products (dot_s8.c). Kept out of line on purpose: inlined into the large conv
 * loops, GCC runs out of registers and spills the accumulators on every MAC. */
int32_t trt_dot_s8(const int8_t *a, const int8_t *b, int32_t n);
void trt_dot4_s8(const int8_t *x, const int8_t *w, int32_t stride, int32_t n, int32_t acc[4]);

static inline int32_t trt_sum_s8(const int8_t *a, int32_t n) {
    int32_t s = 0;
    for (int32_t i = 0; i < n; i++) s += a[i];
    return s;
}

/* sum of |a[i]| over n values `stride` bytes apart (load time: bounds of accumulators) */
static inline int64_t trt_abs_sum_s8(const int8_t *a, int32_t n, int32_t stride) {
    int64_t s = 0;
    for (int32_t i = 0; i < n; i++, a += stride) s += *a < 0 ? -(int64_t)*a : *a;
    return s;
}

#endif
