/*
 * cortex_m::quantized_mul.out with Helium -- int8 product, four lanes of int32 per step, the
 * tail predicated.
 *
 * Arithmetic: as kernels/c/quantized_mul.c: VSUB of the zero points, VMUL (wraps like torch's
 * int32), then mve_requantize.h's output step (VQRDMULH and the rounding shift: exact for
 * shift <= 0 and multiplier != INT32_MIN, which accepts requires; the rest runs on plain C),
 * clamped to [-128, 127]. A broadcast operand (step 0 along the row) is one value per row.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "../broadcast_walk.h"
#include "kernels_mve.h"
#include "mve_requantize.h"

int trt_quantized_mul_mve_accepts(const trt_mul_params *p) {
    const int32_t sa = p->shape.a_steps[3], sb = p->shape.b_steps[3];
    return trt_mve_requant_is_vector(p->output_multiplier, p->output_shift) && (sa == 0 || sa == 1) &&
           (sb == 0 || sb == 1);
}

/* The parameters are locals: the stores may alias anything, so they would be read again for every step. */
static void mul_row(const void *params, const trt_run *r) {
    const trt_mul_params *p = params;
    const int8_t *a = p->a + r->a, *b = p->b + r->b;
    int8_t *out = p->output + r->out;
    const int32_t a_step = r->a_step, b_step = r->b_step, a_zp = p->a_zero_point, b_zp = p->b_zero_point;
    const int32_t out_zp = p->output_zero_point, out_m = p->output_multiplier, out_s = p->output_shift;
    const int32x4_t a_fixed = vdupq_n_s32(*a - a_zp), b_fixed = vdupq_n_s32(*b - b_zp);
    for (int32_t i = 0, n = r->n; i < n; i += 4) {
        const mve_pred16_t pred = vctp32q((uint32_t)(n - i));
        const int32x4_t va = a_step ? vsubq_n_s32(vldrbq_z_s32(a + i, pred), a_zp) : a_fixed;
        const int32x4_t vb = b_step ? vsubq_n_s32(vldrbq_z_s32(b + i, pred), b_zp) : b_fixed;
        vstrbq_p_s32(out + i, trt_mve_output_vector_s32(vmulq_s32(va, vb), out_m, out_s, out_zp, -128, 127), pred);
    }
}

void trt_quantized_mul_mve(const trt_mul_params *p) { trt_broadcast_walk(&p->shape, p, mul_row); }

#endif
