/*
 * aten::clamp.out on int8 -- what the Cortex-M passes leave of a relu, hardtanh or clamp they
 * could not fuse into the layer before it, with the bounds quantized.
 *
 * Arithmetic (ATen's clamp on an integral tensor): out = min(max(x, lo), hi), a missing bound
 * being the int8 rail; when lo > hi every element is hi.
 */
#include "kernels_c.h"

void trt_clamp_c(const trt_clamp_params *p) {
    for (uint32_t i = 0; i < p->count; i++) {
        int32_t v = p->input[i] < p->lo ? p->lo : p->input[i];
        p->output[i] = (int8_t)(v > p->hi ? p->hi : v);
    }
}
