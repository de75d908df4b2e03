/*
 * The one row loop of cortex_m::minimum and cortex_m::maximum in plain C (c/minimum.c, c/maximum.c):
 * int8 or int32 elements, each operand stepping along the row by its own step (0: broadcast).
 * `larger` chooses the operator: each file passes a constant, so each keeps a loop of its own.
 *
 * Arithmetic (operators.minimum_impl / maximum_impl: torch.minimum / torch.maximum): out = the
 * smaller / the larger of a and b, exactly.
 */
#ifndef TINYRPS_MINMAX_ROWS_C_H
#define TINYRPS_MINMAX_ROWS_C_H

#include "../broadcast_walk.h"
#include "kernels_c.h"

static inline int32_t trt_minmax_pick(int32_t x, int32_t y, const int larger) {
    return larger ? (x > y ? x : y) : (x < y ? x : y);
}

static inline void trt_minmax_row_s8(const void *params, const trt_run *r, const int larger) {
    const trt_minmax_params *p = params;
    const int8_t *a = (const int8_t *)p->a + r->a, *b = (const int8_t *)p->b + r->b;
    int8_t *out = (int8_t *)p->output + r->out;
    for (int32_t i = 0; i < r->n; i++)
        out[i] = (int8_t)trt_minmax_pick(a[(size_t)i * r->a_step], b[(size_t)i * r->b_step], larger);
}

static inline void trt_minmax_row_s32(const void *params, const trt_run *r, const int larger) {
    const trt_minmax_params *p = params;
    const int32_t *a = (const int32_t *)p->a + r->a, *b = (const int32_t *)p->b + r->b;
    int32_t *out = (int32_t *)p->output + r->out;
    for (int32_t i = 0; i < r->n; i++) out[i] = trt_minmax_pick(a[(size_t)i * r->a_step], b[(size_t)i * r->b_step], larger);
}

#endif
