/*
 * cortex_m::quantize_per_tensor.out on the DSP cores (Cortex-M4, M33: single-precision FPU) --
 * float32 -> int8.
 *
 * Arithmetic: as kernels/c/quantize_per_tensor.c, out = clamp(round_half_even(x * inv_scale) +
 * zero_point, quant_min, quant_max), in an order that needs no rounding function: the clamp
 * comes first, to [quant_min - zero_point, quant_max - zero_point] (integers: clamping and
 * rounding to an integer commute; NaN becomes the lower bound, as in the C kernel: it fails
 * both comparisons, and VMAXNM, on the Cortex-M33, returns the number), then the rounding, on
 * a value within +-510:
 *   on the core, VCVTR.S32.F32 (the rounding mode of FPSCR: to nearest, ties to even, the
 *   reset default, which nothing here changes);
 *   elsewhere, (v + 1.5 * 2^23) - 1.5 * 2^23 (float32, to nearest even: exact for |v| < 2^22),
 *   then an exact conversion;
 * and the zero point is added in int32 (exact, as the reference's float32 add of integers
 * this small is).
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "dsp_intrinsics.h"
#include "kernels_dsp.h"

#if defined(__ARM_FP) && (__ARM_FP & 4)
static inline int32_t round_to_int(float v) {
    float r;
    int32_t i;
    __asm__("vcvtr.s32.f32 %0, %1" : "=t"(r) : "t"(v));
    __builtin_memcpy(&i, &r, sizeof i);
    return i;
}
static inline int32_t saturating_add(int32_t a, int32_t b) { return __qadd(a, b); }
#else
static inline int32_t round_to_int(float v) {
    const float magic = 12582912.0f;   /* 1.5 * 2^23: the sum's last bit is the units */
    if (!(v < 2147483648.0f)) return INT32_MAX;   /* as VCVTR saturates */
    if (v >= 4194304.0f) {   /* 2^22 and up: whole or half numbers, to even */
        const int32_t whole = (int32_t)v;
        return whole + (v - (float)whole == 0.5f && (whole & 1));
    }
    return (int32_t)((v + magic) - magic);   /* here v >= -2^22 too: the callers clamped it below */
}
static inline int32_t saturating_add(int32_t a, int32_t b) {
    const int64_t sum = (int64_t)a + b;
    return sum > INT32_MAX ? INT32_MAX : (sum < INT32_MIN ? INT32_MIN : (int32_t)sum);
}
#endif

/* Clamping to [lo, hi], NaN to lo: VMAXNM/VMINNM (Armv8-M's FPU: maxNum returns the number of a
 * NaN and a number) where the core has them, else the C kernel's two comparisons. */
#if defined(__ARM_FP) && (__ARM_FP & 4) && defined(__ARM_ARCH_8M_MAIN__)
#define TRT_QUANTIZE_MAXNM 1
static inline float clamp_to(float v, float lo, float hi) {
    __asm__("vmaxnm.f32 %0, %0, %1\n\tvminnm.f32 %0, %0, %2" : "+t"(v) : "t"(lo), "t"(hi));
    return v;
}
#else
#define TRT_QUANTIZE_MAXNM 0
static inline float clamp_to(float v, float lo, float hi) {
    if (!(v >= lo)) v = lo;   /* NaN too */
    if (v > hi) v = hi;
    return v;
}
#endif

void trt_quantize_dsp(const trt_quantize_params *p) {
    const float lo = p->quant_min - p->zero_point, hi = p->quant_max - p->zero_point, inv_scale = p->inv_scale;
    const int32_t zero_point = (int32_t)p->zero_point;
    const float *x = p->input, *end = p->input + p->count;   /* read once: the stores could alias p */
    int8_t *out = p->output;
    if (!TRT_QUANTIZE_MAXNM && p->quant_min == -128.0f && p->quant_max == 127.0f) {
        /* the whole int8 range without VMAXNM: only the lower comparison (NaN to lo too); VCVTR
         * saturates a larger value at INT32_MAX, QADD adds the zero point saturating, SSAT
         * clamps above (clamp(round(v) + zp, -128, 127) with round(v) >= -128 - zp) */
        for (; x != end; x++, out++) {
            float v = *x * inv_scale;
            if (!(v >= lo)) v = lo;
            *out = (int8_t)trt_ssat8(saturating_add(round_to_int(v), zero_point));
        }
        return;
    }
    for (; x != end; x++, out++) *out = (int8_t)(round_to_int(clamp_to(*x * inv_scale, lo, hi)) + zero_point);
}

#endif
