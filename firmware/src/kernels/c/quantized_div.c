/*
 * cortex_m::quantized_div.out -- int8 quotient of two quantized tensors of the same shape.
 *
 * Arithmetic (operators.quantized_div_impl), in float32 as torch computes it:
 *   q = (float)(b - b_zp) != 0 ? (float)(a - a_zp) / (float)(b - b_zp) : 0
 *   out = (int8) clamp(round_half_even(q * (float)output_scale) + (float)out_zp, -128, 127)
 * The clamp comes before the conversion, so an infinite product (a huge scale) is the rail.
 */
#include "../broadcast_walk.h"
#include "../float_round.h"
#include "kernels_c.h"

static void div_row(const void *params, const trt_run *r) {
    const trt_div_params *p = params;
    const int8_t *a = p->a + r->a, *b = p->b + r->b;
    int8_t *out = p->output + r->out;
    const int32_t n = r->n, a_step = r->a_step, b_step = r->b_step;   /* locals: the stores may alias */
    const int32_t a_zp = p->a_zero_point, b_zp = p->b_zero_point;
    const float scale = p->scale, out_zp = p->output_zero_point;
    for (int32_t i = 0; i < n; i++) {
        const float num = (float)(a[(size_t)i * a_step] - a_zp), den = (float)(b[(size_t)i * b_step] - b_zp);
        const float q = den != 0.0f ? num / den : 0.0f;
        float v = trt_round_half_even(q * scale) + out_zp;
        if (v < -128.0f) v = -128.0f;
        if (v > 127.0f) v = 127.0f;
        out[i] = (int8_t)(int32_t)v;
    }
}

void trt_quantized_div_c(const trt_div_params *p) { trt_broadcast_walk(&p->shape, p, div_row); }
