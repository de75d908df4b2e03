/*
 * cortex_m::dequantize_per_tensor.out -- int8 -> float32.
 *
 * Arithmetic (quantized_decomposed.dequantize_per_tensor, in float32):
 *   out = ((float)q - (float)zero_point) * (float)scale
 * torch subtracts the integer zero point from the float32 tensor, then multiplies by
 * the double scale rounded to float32.
 */
#include "kernels_c.h"

void trt_dequantize_c(const trt_dequantize_params *p) {
    for (uint32_t i = 0; i < p->count; i++) p->output[i] = ((float)p->input[i] - p->zero_point) * p->scale;
}
