/*
 * cortex_m::quantize_per_tensor.out -- float32 -> int8.
 *
 * Arithmetic (quantized_decomposed.quantize_per_tensor, in float32):
 *   out = (int8) clamp(round_half_even(x * inv_scale) + zero_point, quant_min, quant_max)
 * with inv_scale = (float)(1.0 / scale): torch multiplies the float32 tensor by the
 * double 1/scale rounded to float32, rounds half to even (torch.round), adds the zero
 * point as float32 and clamps before the cast.
 * NaN (only a malformed program can feed one: a constant input) is defined here, as
 * C's fmaxf does: it loses every comparison and becomes quant_min. Every variant agrees.
 */
#include "kernels_c.h"
#include "../float_round.h"

void trt_quantize_c(const trt_quantize_params *p) {
    for (uint32_t i = 0; i < p->count; i++) {
        float v = trt_round_half_even(p->input[i] * p->inv_scale) + p->zero_point;
        if (!(v >= p->quant_min)) v = p->quant_min;   /* NaN too */
        if (v > p->quant_max) v = p->quant_max;
        p->output[i] = (int8_t)(int32_t)v;
    }
}
