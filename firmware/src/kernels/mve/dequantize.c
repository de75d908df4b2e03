/*
 * cortex_m::dequantize_per_tensor.out with Helium -- int8 -> float32, four values per step.
 *
 * Arithmetic: as kernels/c/dequantize_per_tensor.c: out = ((float)q - (float)zero_point) * scale,
 * float32, no fused multiply-add (VSUB then VMUL).
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"

void trt_dequantize_mve(const trt_dequantize_params *p) {
    const int8_t *q = p->input;
    float *out = p->output;
    for (int32_t n = (int32_t)p->count; n > 0; n -= 4, q += 4, out += 4) {
        const mve_pred16_t pred = vctp32q((uint32_t)n);
        float32x4_t v = vcvtq_f32_s32(vldrbq_z_s32(q, pred));
        v = vmulq_n_f32(vsubq_n_f32(v, p->zero_point), p->scale);
        vstrwq_p_f32(out, v, pred);
    }
}

#endif
