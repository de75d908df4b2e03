/*
 * aten::squeeze_copy, aten::unsqueeze_copy -- the same elements in another shape.
 *
 * Arithmetic: none; element i of the input's row-major flattening is element i of the
 * output's. Where both sides keep their elements in that order (`dense`: every dim order of
 * a tensor whose non-1 dims are in logical order) it is one copy; otherwise each element is
 * moved by a multi-index on each side, last dimension fastest.
 */
#include <string.h>

#include "kernels_c.h"

typedef struct {
    int32_t rank;
    const int32_t *sizes, *strides;
    int32_t index[TRT_RESHAPE_MAX_RANK];
    size_t pos;
} odometer;

static void advance(odometer *o) {
    for (int32_t d = o->rank - 1; d >= 0; d--) {
        o->pos += (size_t)o->strides[d];
        if (++o->index[d] < o->sizes[d]) return;
        o->pos -= (size_t)o->strides[d] * (size_t)o->sizes[d];
        o->index[d] = 0;
    }
}

void trt_reshape_copy_c(const trt_reshape_params *p) {
    const size_t elem = (size_t)p->elem_size;
    if (p->dense) {
        memcpy(p->output, p->input, (size_t)p->count * elem);
        return;
    }
    odometer in = {p->in_rank, p->in_sizes, p->in_strides, {0}, 0};
    odometer out = {p->out_rank, p->out_sizes, p->out_strides, {0}, 0};
    for (uint32_t n = 0; n < p->count; n++, advance(&in), advance(&out))
        memcpy(p->output + out.pos * elem, p->input + in.pos * elem, elem);
}
