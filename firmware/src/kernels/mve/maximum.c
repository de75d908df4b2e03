/*
 * cortex_m::maximum.out with Helium -- the larger of two int8 or int32 tensors: minmax_rows.h.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include "minmax_rows.h"

static void row_s8(const void *params, const trt_run *r) { trt_minmax_mve_row_s8(params, r, 1); }
static void row_s32(const void *params, const trt_run *r) { trt_minmax_mve_row_s32(params, r, 1); }

void trt_maximum_mve(const trt_minmax_params *p) {
    if (p->elem_size == 1) trt_broadcast_walk(&p->shape, p, row_s8);
    else trt_broadcast_walk(&p->shape, p, row_s32);
}

#endif
