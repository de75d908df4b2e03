/*
 * cortex_m::transpose.out -- a tensor with its dimensions permuted (permute_copy), into the
 * output's dim order.
 *
 * Arithmetic: none; out[i_0, ..., i_n] = in[j] with j[perm[k]] = i_k. The bind step gave each
 * output dimension the input's stride along the dimension it takes. Dimensions that stay
 * adjacent on both sides are merged first, so a permutation that only renames the memory
 * order (NHWC as [N, H, W, C] to contiguous) is one copy, and the rest move runs of the
 * innermost dimension.
 */
#include <string.h>

#include "kernels_c.h"

typedef struct {
    int32_t rank;
    int32_t sizes[TRT_COPY_MAX_RANK], in_strides[TRT_COPY_MAX_RANK], out_strides[TRT_COPY_MAX_RANK];
} merged_shape;

/* Drop size-1 dimensions, then merge each dimension into the one before it where both sides
 * continue it without a gap. */
static void merge(const trt_copy_params *p, merged_shape *m) {
    m->rank = 0;
    for (int32_t d = 0; d < p->rank; d++) {
        if (p->sizes[d] == 1) continue;
        int32_t k = m->rank - 1;
        if (k >= 0 && m->in_strides[k] == (int64_t)p->in_strides[d] * p->sizes[d] &&
            m->out_strides[k] == (int64_t)p->out_strides[d] * p->sizes[d]) {
            m->sizes[k] *= p->sizes[d];
            m->in_strides[k] = p->in_strides[d];
            m->out_strides[k] = p->out_strides[d];
            continue;
        }
        m->sizes[m->rank] = p->sizes[d];
        m->in_strides[m->rank] = p->in_strides[d];
        m->out_strides[m->rank] = p->out_strides[d];
        m->rank++;
    }
}

void trt_transpose_c(const trt_copy_params *p) {
    merged_shape m;
    merge(p, &m);
    const size_t elem = (size_t)p->elem_size;
    if (m.rank == 0 || (m.rank == 1 && m.in_strides[0] == 1 && m.out_strides[0] == 1)) {
        size_t count = m.rank ? (size_t)m.sizes[0] : 1;
        memcpy(p->output, p->input, count * elem);
        return;
    }
    /* odometer over the outer dimensions; the innermost one is a run */
    const int32_t last = m.rank - 1, run = m.sizes[last];
    const size_t in_step = (size_t)m.in_strides[last] * elem, out_step = (size_t)m.out_strides[last] * elem;
    int32_t index[TRT_COPY_MAX_RANK] = {0};
    size_t in_pos = 0, out_pos = 0;
    for (;;) {
        const uint8_t *src = p->input + in_pos * elem;
        uint8_t *dst = p->output + out_pos * elem;
        if (in_step == elem && out_step == elem) {
            memcpy(dst, src, (size_t)run * elem);
        } else if (elem == 1) {
            for (int32_t i = 0; i < run; i++, src += in_step, dst += out_step) *dst = *src;
        } else {
            for (int32_t i = 0; i < run; i++, src += in_step, dst += out_step) memcpy(dst, src, elem);
        }
        int32_t d = last - 1;
        for (; d >= 0; d--) {
            in_pos += (size_t)m.in_strides[d];
            out_pos += (size_t)m.out_strides[d];
            if (++index[d] < m.sizes[d]) break;
            in_pos -= (size_t)m.in_strides[d] * (size_t)m.sizes[d];
            out_pos -= (size_t)m.out_strides[d] * (size_t)m.sizes[d];
            index[d] = 0;
        }
        if (d < 0) return;
    }
}
