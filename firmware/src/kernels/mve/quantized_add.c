/*
 * cortex_m::quantized_add.out with Helium -- int8 addition, four lanes of int32 per step, the
 * tail predicated.
 *
 * Arithmetic: as kernels/c/quantized_add.c. Each operand's term, requantize((x - zp) << 20, m, s),
 * is VSUB, VSHL #20 (both wrap, like torch's int32), VQRDMULH and the rounding right shift of
 * mve_requantize.h -- exact for shift <= 0 and m != INT32_MIN, which accepts requires of both
 * operands and the output (every exported program: the operand scales are at most half the
 * larger one, so their shifts are negative). A broadcast operand (step 0 along the row: the
 * channels of a [1, C, 1, 1] tensor are the rows of the NHWC map) is one term per row.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "../broadcast_walk.h"
#include "kernels_mve.h"
#include "mve_requantize.h"

static int unit_or_broadcast(int32_t a_step, int32_t b_step) {
    return (a_step == 1 || a_step == 0) && (b_step == 1 || b_step == 0);
}

int trt_quantized_add_mve_accepts(const trt_add_params *p) {
    return trt_mve_requant_is_vector(p->a_multiplier, p->a_shift) && trt_mve_requant_is_vector(p->b_multiplier, p->b_shift) &&
           trt_mve_requant_is_vector(p->output_multiplier, p->output_shift) &&
           unit_or_broadcast(p->shape.a_steps[3], p->shape.b_steps[3]);
}

static inline int32x4_t term(int32x4_t x, int32_t zero_point, int32_t multiplier, int32_t shift) {
    return trt_mve_requantize_s32(vshlq_n_s32(vsubq_n_s32(x, zero_point), TRT_ADD_LEFT_SHIFT), multiplier, shift);
}

/* The parameters are locals: the stores may alias anything, so they would be read again for every step. */
static void add_row(const void *params, const trt_run *r) {
    const trt_add_params *p = params;
    const int8_t *a = p->a + r->a, *b = p->b + r->b;
    int8_t *out = p->output + r->out;
    const int32_t a_step = r->a_step, b_step = r->b_step;
    const int32_t a_zp = p->a_zero_point, a_m = p->a_multiplier, a_s = p->a_shift;
    const int32_t b_zp = p->b_zero_point, b_m = p->b_multiplier, b_s = p->b_shift;
    const int32_t out_zp = p->output_zero_point, out_m = p->output_multiplier, out_s = p->output_shift;
    const int32_t lo = p->activation_min, hi = p->activation_max;
    const int32x4_t a_fixed = vdupq_n_s32(a_step ? 0 : trt_add_term(*a, a_zp, a_m, a_s));
    const int32x4_t b_fixed = vdupq_n_s32(b_step ? 0 : trt_add_term(*b, b_zp, b_m, b_s));
    for (int32_t i = 0, n = r->n; i < n; i += 4) {
        const mve_pred16_t pred = vctp32q((uint32_t)(n - i));
        const int32x4_t ta = a_step ? term(vldrbq_z_s32(a + i, pred), a_zp, a_m, a_s) : a_fixed;
        const int32x4_t tb = b_step ? term(vldrbq_z_s32(b + i, pred), b_zp, b_m, b_s) : b_fixed;
        vstrbq_p_s32(out + i, trt_mve_output_vector_s32(vaddq_s32(ta, tb), out_m, out_s, out_zp, lo, hi), pred);
    }
}

void trt_quantized_add_mve(const trt_add_params *p) { trt_broadcast_walk(&p->shape, p, add_row); }

#endif
