/*
 * torch.round on float32, half to even, without libm (the Cortex-M4's FPU has no VRINT).
 */
#ifndef TINYRPS_FLOAT_ROUND_H
#define TINYRPS_FLOAT_ROUND_H

#include <stdint.h>

/* |v| >= 2^23 (and infinities, NaN) is already an integer: returned as it is. */
static inline float trt_round_half_even(float v) {
    const float two23 = 8388608.0f;
    if (!(v < two23 && v > -two23)) return v;
    float whole = (float)(int32_t)v;         /* truncated toward zero, exact */
    float frac = v - whole;                  /* exact: both share v's binade or below */
    int32_t odd = (int32_t)whole & 1;
    if (frac > 0.5f || (frac == 0.5f && odd)) return whole + 1.0f;
    if (frac < -0.5f || (frac == -0.5f && odd)) return whole - 1.0f;
    return whole;
}

#endif
