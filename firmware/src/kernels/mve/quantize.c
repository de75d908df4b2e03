/*
 * cortex_m::quantize_per_tensor.out with Helium -- float32 -> int8, four values per step.
 *
 * Arithmetic: as kernels/c/quantize_per_tensor.c, in the same float32 operations:
 *   out = clamp(round_half_even(x * inv_scale) + zero_point, quant_min, quant_max)
 * VRINTN rounds half to even; VMAXNM/VMINNM clamp, and like fmaxf they turn NaN into
 * quant_min (the contract's choice); the clamped value is integral, so VCVT is exact.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"

void trt_quantize_mve(const trt_quantize_params *p) {
    const float32x4_t lo = vdupq_n_f32(p->quant_min), hi = vdupq_n_f32(p->quant_max);
    const float *x = p->input;
    int8_t *out = p->output;
    for (int32_t n = (int32_t)p->count; n > 0; n -= 4, x += 4, out += 4) {
        const mve_pred16_t pred = vctp32q((uint32_t)n);
        float32x4_t v = vmulq_n_f32(vld1q_z_f32(x, pred), p->inv_scale);
        v = vaddq_n_f32(vrndnq_f32(v), p->zero_point);
        v = vminnmq_f32(vmaxnmq_f32(v, lo), hi);
        vstrbq_p_s32(out, vcvtq_s32_f32(v), pred);
    }
}

#endif
