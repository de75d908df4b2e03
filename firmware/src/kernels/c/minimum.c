/*
 * cortex_m::minimum.out -- the smaller of two int8 (or int32) tensors, element by element, with
 * torch's broadcasting (a 0-dim or [1] operand, or any other broadcast shape): minmax_rows.h.
 */
#include "minmax_rows.h"

static void row_s8(const void *params, const trt_run *r) { trt_minmax_row_s8(params, r, 0); }
static void row_s32(const void *params, const trt_run *r) { trt_minmax_row_s32(params, r, 0); }

void trt_minimum_c(const trt_minmax_params *p) {
    if (p->elem_size == 1) trt_broadcast_walk(&p->shape, p, row_s8);
    else trt_broadcast_walk(&p->shape, p, row_s32);
}
