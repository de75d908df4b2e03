/*
 * aten::cat.out -- tensors joined along one dimension (all in the same dim order).
 *
 * Arithmetic: none. In memory order the output is `outer` rows, each holding the inputs'
 * slabs one after another; the bind step worked out the slabs from the dimension's place in
 * the dim order (channels of an NHWC map: each pixel's channels of every input in turn).
 */
#include <string.h>

#include "kernels_c.h"

void trt_cat_c(const trt_cat_params *p) {
    uint8_t *out = p->output;
    for (int32_t o = 0; o < p->outer; o++)
        for (int32_t i = 0; i < p->inputs; i++) {
            memcpy(out, p->input[i] + (size_t)o * p->slab_bytes[i], p->slab_bytes[i]);
            out += p->slab_bytes[i];
        }
}
