/*
 * The one row loop of cortex_m::minimum and cortex_m::maximum with Helium (mve/minimum.c,
 * mve/maximum.c): int8 (16 lanes) or int32 (4 lanes), the tail predicated; a broadcast operand (step
 * 0 along the row) is one value per row. `larger` chooses the operator (vmaxq or vminq): each file
 * passes a constant, so each keeps a loop of its own.
 *
 * Arithmetic: as kernels/c/minmax_rows.h, exactly.
 */
#ifndef TINYRPS_MINMAX_ROWS_MVE_H
#define TINYRPS_MINMAX_ROWS_MVE_H

#include <arm_mve.h>

#include "../broadcast_walk.h"
#include "kernels_mve.h"

static inline __attribute__((always_inline)) void trt_minmax_mve_row_s8(const void *params, const trt_run *r,
                                                                        const int larger) {
    const trt_minmax_params *p = params;
    const int8_t *a = (const int8_t *)p->a + r->a, *b = (const int8_t *)p->b + r->b;
    int8_t *out = (int8_t *)p->output + r->out;
    const int8x16_t a_fixed = vdupq_n_s8(*a), b_fixed = vdupq_n_s8(*b);
    const int32_t a_step = r->a_step, b_step = r->b_step;   /* locals: the stores may alias */
    for (int32_t i = 0, n = r->n; i < n; i += 16) {
        const mve_pred16_t pred = vctp8q((uint32_t)(n - i));
        const int8x16_t va = a_step ? vldrbq_z_s8(a + i, pred) : a_fixed, vb = b_step ? vldrbq_z_s8(b + i, pred) : b_fixed;
        vstrbq_p_s8(out + i, larger ? vmaxq_s8(va, vb) : vminq_s8(va, vb), pred);
    }
}

static inline __attribute__((always_inline)) void trt_minmax_mve_row_s32(const void *params, const trt_run *r,
                                                                         const int larger) {
    const trt_minmax_params *p = params;
    const int32_t *a = (const int32_t *)p->a + r->a, *b = (const int32_t *)p->b + r->b;
    int32_t *out = (int32_t *)p->output + r->out;
    const int32x4_t a_fixed = vdupq_n_s32(*a), b_fixed = vdupq_n_s32(*b);
    const int32_t a_step = r->a_step, b_step = r->b_step;
    for (int32_t i = 0, n = r->n; i < n; i += 4) {
        const mve_pred16_t pred = vctp32q((uint32_t)(n - i));
        const int32x4_t va = a_step ? vldrwq_z_s32(a + i, pred) : a_fixed, vb = b_step ? vldrwq_z_s32(b + i, pred) : b_fixed;
        vstrwq_p_s32(out + i, larger ? vmaxq_s32(va, vb) : vminq_s32(va, vb), pred);
    }
}

#endif
