/*
 * cortex_m::minimum.out -- the smaller of two int8 (or int32) tensors, element by element, with
 * torch's broadcasting (a 0-dim or [1] operand, or any other broadcast shape).
 *
 * Arithmetic (operators.minimum_impl: torch.minimum): out = a < b ? a : b, exactly.
 */
#include "../broadcast_walk.h"
#include "kernels_c.h"

static void row_s8(const void *params, const trt_run *r) {
    const trt_minmax_params *p = params;
    const int8_t *a = (const int8_t *)p->a + r->a, *b = (const int8_t *)p->b + r->b;
    int8_t *out = (int8_t *)p->output + r->out;
    for (int32_t i = 0; i < r->n; i++) {
        const int8_t x = a[(size_t)i * r->a_step], y = b[(size_t)i * r->b_step];
        out[i] = x < y ? x : y;
    }
}

static void row_s32(const void *params, const trt_run *r) {
    const trt_minmax_params *p = params;
    const int32_t *a = (const int32_t *)p->a + r->a, *b = (const int32_t *)p->b + r->b;
    int32_t *out = (int32_t *)p->output + r->out;
    for (int32_t i = 0; i < r->n; i++) {
        const int32_t x = a[(size_t)i * r->a_step], y = b[(size_t)i * r->b_step];
        out[i] = x < y ? x : y;
    }
}

void trt_minimum_c(const trt_minmax_params *p) {
    if (p->elem_size == 1) trt_broadcast_walk(&p->shape, p, row_s8);
    else trt_broadcast_walk(&p->shape, p, row_s32);
}
