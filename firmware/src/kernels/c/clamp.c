/*
 * aten::clamp.out on int8 -- what the Cortex-M passes leave of a relu, hardtanh or clamp they
 * could not fuse into the layer before it, with the bounds quantized.
 *
 * Arithmetic (ATen's clamp on an integral tensor): out = min(max(x, lo), hi), a missing bound
 * being the int8 rail; when lo > hi every element is hi.
 */
#include "kernels_c.h"

void trt_clamp_c(const trt_clamp_params *p) {
    const int8_t *in = p->input;   /* locals: the stores may alias */
    int8_t *out = p->output;
    const int32_t lo = p->lo, hi = p->hi;
    for (uint32_t i = 0, n = p->count; i < n; i++) {
        const int32_t v = in[i] < lo ? lo : in[i];
        out[i] = (int8_t)(v > hi ? hi : v);
    }
}
