/*
 * cortex_m::quantized_activation.out -- an int8 activation function (sigmoid, tanh, silu, gelu,
 * log, sqrt, ...) as a table the exporter computed for the layer's quantization.
 *
 * Arithmetic (operators.quantized_activation_impl): out = lut[x + 128], element by element.
 */
#include "kernels_c.h"

void trt_quantized_activation_c(const trt_lut_params *p) {
    const int8_t *in = p->input, *lut = p->lut + 128;   /* locals: the stores may alias */
    int8_t *out = p->output;
    for (uint32_t i = 0, n = p->count; i < n; i++) out[i] = lut[in[i]];
}
