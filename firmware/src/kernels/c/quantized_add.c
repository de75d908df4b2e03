/*
 * cortex_m::quantized_add.out -- int8 addition (and subtraction: a negative second multiplier)
 * of two quantized tensors, either one broadcast along the channels if need be.
 *
 * Arithmetic (operators.quantized_add_impl), in int32 as torch computes it:
 *   term(x, zp, m, s) = requantize_cmsis((x - zp) << 20, m, s)               (arith.h: trt_add_term)
 *   sum = term(a, a_zp, a_m, a_s) + term(b, b_zp, b_m, b_s)                   (wraps modulo 2^32)
 *   out = clamp(requantize_cmsis(sum, out_m, out_s) + out_zp, activation_min, activation_max)
 */
#include "../arith.h"
#include "../broadcast_walk.h"
#include "kernels_c.h"

static void add_row(const void *params, const trt_run *r) {
    const trt_add_params *p = params;
    const int8_t *a = p->a + r->a, *b = p->b + r->b;
    int8_t *out = p->output + r->out;
    for (int32_t i = 0; i < r->n; i++) {
        const int32_t x = a[(size_t)i * r->a_step], y = b[(size_t)i * r->b_step];
        int32_t sum = trt_add_wrap(trt_add_term(x, p->a_zero_point, p->a_multiplier, p->a_shift),
                                   trt_add_term(y, p->b_zero_point, p->b_multiplier, p->b_shift));
        out[i] = trt_output_s8(sum, p->output_multiplier, p->output_shift, p->output_zero_point, p->activation_min,
                               p->activation_max);
    }
}

void trt_quantized_add_c(const trt_add_params *p) { trt_broadcast_walk(&p->shape, p, add_row); }
