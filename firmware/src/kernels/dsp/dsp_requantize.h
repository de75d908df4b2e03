/*
 * Requantization (arith.h's trt_output_s8) in a few DSP instructions, for accumulators known
 * at load to stay below 2^30 in magnitude, with shift <= 0 (every exported layer):
 *
 *   (acc * multiplier + 2^30) >> 31   = SMMULR(2 * acc, multiplier): (2 acc m + 2^31) >> 32 is
 *                                       the same floor; 2 * acc fits int32 when |acc| < 2^30;
 *   rounding right shift by n, half away from zero, of that v (|v| < 2^30 + 1):
 *                                     = (v + 2^(n-1) - (v < 0)) >> n for n >= 1, v for n = 0
 *                                       (no overflow: |v| + 2^(n-1) < 2^31).
 * The bound is checked once per layer (trt_dsp_accumulators_fit); a layer that misses it runs
 * the general requantization of arith.h.
 */
#ifndef TINYRPS_DSP_REQUANTIZE_H
#define TINYRPS_DSP_REQUANTIZE_H

#include <stdint.h>

#include "../arith.h"
#include "dsp_intrinsics.h"

#define TRT_DSP_ACC_LIMIT ((int64_t)1 << 30)

/* One output channel's requantization constants. */
typedef struct {
    int32_t multiplier, right, half, negative;   /* right = -shift; half = 2^(right-1); negative: -1 if right > 0 */
} trt_dsp_requant;

static inline trt_dsp_requant trt_dsp_requant_of(int32_t multiplier, int32_t shift) {
    trt_dsp_requant r;
    r.multiplier = multiplier;
    r.right = -shift;
    r.half = shift < 0 ? (int32_t)(1u << (r.right - 1)) : 0;
    r.negative = shift < 0 ? -1 : 0;
    return r;
}

/* Whether every value a channel's accumulator can take, |sum(x * w)| + |bias| with |x| <= x_max,
 * stays below 2^30, and the shift is <= 0. weight_abs_sum: sum of |w| over the window. */
static inline int trt_dsp_accumulator_fits(int64_t weight_abs_sum, int32_t x_max, int32_t bias, int32_t shift) {
    const int64_t bias_abs = bias < 0 ? -(int64_t)bias : (int64_t)bias;
    return shift <= 0 && x_max * weight_abs_sum + bias_abs < TRT_DSP_ACC_LIMIT;
}

static inline int32_t trt_dsp_requantize(int32_t acc, const trt_dsp_requant *r) {
    const int32_t v = trt_smmulr(acc * 2, r->multiplier);
    return (v + r->half + ((v >> 31) & r->negative)) >> r->right;
}

static inline int8_t trt_dsp_output_s8(int32_t acc, const trt_dsp_requant *r, int32_t output_offset, int32_t act_min,
                                       int32_t act_max) {
    return (int8_t)trt_clamp(trt_dsp_requantize(acc, r) + output_offset, act_min, act_max);
}

#endif
