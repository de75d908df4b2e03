/*
 * dim_order_ops::_clone_dim_order.out -- the same tensor in another memory layout.
 *
 * Arithmetic: none; out[logical index] = in[logical index], where each side's element
 * position is sum(index[d] * stride[d]) with strides from its dim_order. Used by the
 * Cortex-M programs to turn the channels-last feature map into the contiguous order
 * the flatten before the first linear layer expects.
 */
#include <string.h>

#include "kernels_c.h"

void trt_clone_dim_order_c(const trt_copy_params *p) {
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
