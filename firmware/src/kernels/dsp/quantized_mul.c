/*
 * cortex_m::quantized_mul.out with the DSP extension -- int8 product, requantized with SMMULR and
 * saturated with SSAT.
 *
 * Arithmetic: as kernels/c/quantized_mul.c,
 *   out = clamp(requantize((a - a_zp) * (b - b_zp), out_m, out_s) + out_zp, -128, 127).
 * With |zero points| <= 16383 the product is below 2^30 in magnitude, so SMMULR(2 * product, m) =
 * (product * m + 2^30) >> 31 exactly; then the rounding right shift, half away from zero,
 * (v + 2^(n-1) - (v < 0)) >> n. Other parameters (a left shift, m = INT32_MIN, larger zero
 * points) run on the plain-C kernel.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../broadcast_walk.h"
#include "dsp_intrinsics.h"
#include "kernels_dsp.h"

#define MAX_ZERO_POINT 16383

int trt_quantized_mul_dsp_accepts(const trt_mul_params *p) {
    return p->output_shift <= 0 && p->output_multiplier != INT32_MIN && p->a_zero_point >= -MAX_ZERO_POINT &&
           p->a_zero_point <= MAX_ZERO_POINT && p->b_zero_point >= -MAX_ZERO_POINT && p->b_zero_point <= MAX_ZERO_POINT &&
           p->output_zero_point >= -MAX_ZERO_POINT && p->output_zero_point <= MAX_ZERO_POINT;
}

static void mul_row(const void *params, const trt_run *r) {
    const trt_mul_params *p = params;
    const int8_t *a = p->a + r->a, *b = p->b + r->b;
    int8_t *out = p->output + r->out;
    const int32_t count = r->n, a_step = r->a_step, b_step = r->b_step;   /* locals: the stores may alias */
    const int32_t a_zp = p->a_zero_point, b_zp = p->b_zero_point, zp = p->output_zero_point, m = p->output_multiplier;
    const int32_t n = -p->output_shift, half = n > 0 ? (int32_t)(1u << (n - 1)) : 0;
    for (int32_t i = 0; i < count; i++) {
        int32_t v = trt_smmulr((a[(size_t)i * a_step] - a_zp) * (b[(size_t)i * b_step] - b_zp) * 2, m);
        if (n > 0) v = (v + half - (int32_t)((uint32_t)v >> 31)) >> n;
        out[i] = (int8_t)trt_ssat8(v + zp);
    }
}

void trt_quantized_mul_dsp(const trt_mul_params *p) { trt_broadcast_walk(&p->shape, p, mul_row); }

#endif
