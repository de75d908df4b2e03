/*
 * cortex_m::quantized_mul.out -- int8 product of two quantized tensors, either one
 * broadcast along the channels if need be.
 *
 * Arithmetic (operators.quantized_mul_impl), in int32 as torch computes it:
 *   product = (a - a_zp) * (b - b_zp)                                         (wraps modulo 2^32)
 *   out = clamp(requantize_cmsis(product, out_m, out_s) + out_zp, -128, 127)
 * The zero points may lie outside the int8 range (hardswish's shifted one does): the operands' within
 * +-(2^31 - 128), so a - a_zp is exact; the output's |zp| <= 2^24.
 */
#include "../arith.h"
#include "../broadcast_walk.h"
#include "kernels_c.h"

static void mul_row(const void *params, const trt_run *r) {
    const trt_mul_params *p = params;
    const int8_t *a = p->a + r->a, *b = p->b + r->b;
    int8_t *out = p->output + r->out;
    for (int32_t i = 0; i < r->n; i++) {
        int32_t product = trt_mul_wrap(a[(size_t)i * r->a_step] - p->a_zero_point, b[(size_t)i * r->b_step] - p->b_zero_point);
        out[i] = trt_output_s8(product, p->output_multiplier, p->output_shift, p->output_zero_point, -128, 127);
    }
}

void trt_quantized_mul_c(const trt_mul_params *p) { trt_broadcast_walk(&p->shape, p, mul_row); }
