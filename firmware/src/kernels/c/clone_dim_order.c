/*
 * dim_order_ops::_clone_dim_order.out -- the same tensor in another memory layout.
 *
 * Arithmetic: none; out[logical index] = in[logical index], where each side's element
 * position is sum(index[d] * stride[d]) with strides from its dim_order. Used by the
 * Cortex-M programs to turn the channels-last feature map into the contiguous order
 * the flatten before the first linear layer expects: that case (one-byte elements, dim
 * order 0, 2, 3, 1 to contiguous) is a plain transpose of [H*W][C] to [C][H*W] per batch and
 * runs as two nested loops; any other copy walks the odometer below.
 */
#include <string.h>

#include "kernels_c.h"

static int is_channels_last_to_contiguous(const trt_copy_params *p) {
    if (p->elem_size != 1 || p->rank != 4) return 0;
    const int32_t c = p->sizes[1], h = p->sizes[2], w = p->sizes[3];
    return p->in_strides[3] == c && p->in_strides[2] == w * c && p->in_strides[1] == 1 &&
           p->in_strides[0] == h * w * c && p->out_strides[3] == 1 && p->out_strides[2] == w &&
           p->out_strides[1] == h * w && p->out_strides[0] == c * h * w;
}

static void transpose_channels(const trt_copy_params *p) {
    const int32_t c = p->sizes[1], pixels = p->sizes[2] * p->sizes[3];
    const uint8_t *in = p->input;
    uint8_t *out = p->output;
    for (int32_t b = 0; b < p->sizes[0]; b++, in += (size_t)pixels * c)
        for (int32_t ch = 0; ch < c; ch++) {
            const uint8_t *src = in + ch;
            for (int32_t i = 0; i < pixels; i++, src += c) *out++ = *src;
        }
}

void trt_clone_dim_order_c(const trt_copy_params *p) {
    if (is_channels_last_to_contiguous(p)) {
        transpose_channels(p);
        return;
    }
    int32_t index[TRT_COPY_MAX_RANK] = {0};
    uint32_t count = 1;
    for (int32_t d = 0; d < p->rank; d++) count *= (uint32_t)p->sizes[d];
    int32_t in_pos = 0, out_pos = 0;
    for (uint32_t n = 0; n < count; n++) {
        memcpy(p->output + (size_t)out_pos * (size_t)p->elem_size,
               p->input + (size_t)in_pos * (size_t)p->elem_size, (size_t)p->elem_size);
        /* odometer over the logical index, last dimension fastest */
        for (int32_t d = p->rank - 1; d >= 0; d--) {
            in_pos += p->in_strides[d];
            out_pos += p->out_strides[d];
            if (++index[d] < p->sizes[d]) break;
            in_pos -= p->in_strides[d] * p->sizes[d];
            out_pos -= p->out_strides[d] * p->sizes[d];
            index[d] = 0;
        }
    }
}
