/*
 * Requantization (arith.h's trt_output_s8) on four int32 lanes with Helium, bit for bit:
 *
 *   (acc * multiplier + 2^30) >> 31   is VQRDMULH: (2 * acc * multiplier + 2^31) >> 32, which
 *                                     saturates only when both are INT32_MIN;
 *   rounding right shift by n = -shift, half away from zero: negative values first step down
 *   by one (saturating: INT32_MIN is exact anyway), then VRSHL rounds half up.
 *
 * The vector path covers shift <= 0 and multiplier != INT32_MIN (every exported program:
 * CMSIS multipliers lie in [2^30, 2^31)); anything else is requantized lane by lane with the
 * scalar reference, so every input gives the contract's result.
 */
#ifndef TINYRPS_MVE_REQUANTIZE_H
#define TINYRPS_MVE_REQUANTIZE_H

#include <arm_mve.h>
#include <stdint.h>

#include "../arith.h"

static inline int trt_mve_requant_is_vector(int32_t multiplier, int32_t shift) {
    return shift <= 0 && multiplier != INT32_MIN;
}

/* requantize (arith.h) of four lanes on the vector path alone: the caller checked
 * trt_mve_requant_is_vector(multiplier, shift). No offset, no clamp. Branch-free (the step down
 * of negative values happens only for a right shift: the sign bit of v & shift), so a kernel's
 * loop is not copied once per shift case. */
static inline int32x4_t trt_mve_requantize_s32(int32x4_t acc, int32_t multiplier, int32_t shift) {
    const int32x4_t shifts = vdupq_n_s32(shift);
    int32x4_t v = vqrdmulhq_n_s32(acc, multiplier);
    v = vqaddq_s32(v, vshrq_n_s32(vandq_s32(v, shifts), 31));
    return vrshlq_s32(v, shifts);
}

/* trt_mve_requantize_s32, then the output offset and the clamp: trt_output_s8 of four lanes on
 * the vector path alone. */
static inline int32x4_t trt_mve_output_vector_s32(int32x4_t acc, int32_t multiplier, int32_t shift,
                                                  int32_t output_offset, int32_t act_min, int32_t act_max) {
    int32x4_t v = vaddq_n_s32(trt_mve_requantize_s32(acc, multiplier, shift), output_offset);
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(act_min)), vdupq_n_s32(act_max));
}

/* One multiplier and shift for all four lanes (a conv's output channel, a linear layer). */
static inline int32x4_t trt_mve_output_s32(int32x4_t acc, int32_t multiplier, int32_t shift, int32_t output_offset,
                                           int32_t act_min, int32_t act_max) {
    if (!trt_mve_requant_is_vector(multiplier, shift)) {
        int32_t lanes[4];
        vst1q_s32(lanes, acc);
        for (int k = 0; k < 4; k++)
            lanes[k] = trt_output_s8(lanes[k], multiplier, shift, output_offset, act_min, act_max);
        return vld1q_s32(lanes);
    }
    int32x4_t v = vqrdmulhq_n_s32(acc, multiplier);
    if (shift < 0) {
        v = vqaddq_s32(v, vshrq_n_s32(v, 31));
        v = vrshlq_n_s32(v, shift);
    }
    v = vaddq_n_s32(v, output_offset);
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(act_min)), vdupq_n_s32(act_max));
}

/* Per-lane multipliers and shifts (four output channels), all on the vector path (the
 * caller checked trt_mve_requant_is_vector for each). */
static inline int32x4_t trt_mve_output_per_lane(int32x4_t acc, int32x4_t multipliers, int32x4_t shifts,
                                                int32_t output_offset, int32_t act_min, int32_t act_max) {
    int32x4_t v = vqrdmulhq_s32(acc, multipliers);
    /* negative lanes with a right shift step down by one: sign bit of (v & shifts), shifts < 0 */
    v = vqaddq_s32(v, vshrq_n_s32(vandq_s32(v, shifts), 31));
    v = vrshlq_s32(v, shifts);
    v = vaddq_n_s32(v, output_offset);
    return vminq_s32(vmaxq_s32(v, vdupq_n_s32(act_min)), vdupq_n_s32(act_max));
}

#endif
