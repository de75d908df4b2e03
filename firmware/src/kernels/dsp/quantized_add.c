/*
 * cortex_m::quantized_add.out with the DSP extension -- int8 addition, the operands' terms looked
 * up and the sum requantized with SMMULR.
 *
 * Arithmetic: as kernels/c/quantized_add.c,
 *   sum = term_a(a) + term_b(b); out = clamp(requantize(sum, out_m, out_s) + out_zp, min, max).
 * An operand's term depends on its int8 value alone: the 256 terms of each operand are computed
 * into the working memory first (with the reference function) and each element looks its two up. The output requantization is SMMULR(2 * sum, m)
 * = (sum * m + 2^30) >> 31, exact when |2 * sum| < 2^31 (accepts checks the largest terms), then a
 * rounding right shift, half away from zero: (v + 2^(n-1) - (v < 0)) >> n, which cannot overflow
 * there. Other parameters run on the plain-C kernel.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../arith.h"
#include "../broadcast_walk.h"
#include "dsp_intrinsics.h"
#include "kernels_dsp.h"

#define TERMS 256

static int32_t largest_term(int32_t zero_point, int32_t multiplier, int32_t shift) {
    int64_t largest = 0;
    for (int32_t x = -128; x <= 127; x++) {
        int64_t t = trt_add_term(x, zero_point, multiplier, shift);
        if (t < 0) t = -t;
        if (t > largest) largest = t;
    }
    return (int32_t)(largest > INT32_MAX ? INT32_MAX : largest);
}

int trt_quantized_add_dsp_accepts(const trt_add_params *p) {
    if (p->output_shift > 0 || p->output_multiplier == INT32_MIN) return 0;
    int64_t bound = (int64_t)largest_term(p->a_zero_point, p->a_multiplier, p->a_shift) +
                    largest_term(p->b_zero_point, p->b_multiplier, p->b_shift);
    return bound < ((int64_t)1 << 30);
}

size_t trt_quantized_add_dsp_temp_bytes(const trt_add_params *p) {
    (void)p;
    return 2 * TERMS * sizeof(int32_t);
}

typedef struct {
    const trt_add_params *p;
    const int32_t *a_terms, *b_terms;     /* [256] each, indexed by the byte */
} add_job;

/* requantize(sum, m, shift <= 0) + zero point, clamped, for |sum| < 2^30: SMMULR and a rounding
 * shift by n = -shift (half = 2^(n-1)) when n > 0. The parameters are locals of the caller:
 * the int8 stores may alias anything, so they would be read again for every element. */
static void add_row(const void *job_ptr, const trt_run *r) {
    const add_job *job = job_ptr;
    const trt_add_params *p = job->p;
    const int8_t *a = p->a + r->a, *b = p->b + r->b;
    const uint8_t *ua = (const uint8_t *)a, *ub = (const uint8_t *)b;   /* the bytes index the terms */
    int8_t *out = p->output + r->out;
    const int32_t *ta = job->a_terms, *tb = job->b_terms;
    const int32_t count = r->n, a_step = r->a_step, b_step = r->b_step;
    const int32_t m = p->output_multiplier, n = -p->output_shift, half = n > 0 ? (int32_t)(1u << (n - 1)) : 0;
    const int32_t zp = p->output_zero_point, lo = p->activation_min, hi = p->activation_max;
    for (int32_t i = 0; i < count; i++) {
        int32_t v = trt_smmulr((ta[ua[(size_t)i * a_step]] + tb[ub[(size_t)i * b_step]]) * 2, m);
        if (n > 0) v = (v + half - (int32_t)((uint32_t)v >> 31)) >> n;
        out[i] = (int8_t)trt_clamp(v + zp, lo, hi);
    }
}

void trt_quantized_add_dsp(const trt_add_params *p, void *temp) {
    int32_t *terms = temp;
    for (int32_t x = -128; x <= 127; x++) {
        terms[(uint8_t)x] = trt_add_term(x, p->a_zero_point, p->a_multiplier, p->a_shift);
        terms[TERMS + (uint8_t)x] = trt_add_term(x, p->b_zero_point, p->b_multiplier, p->b_shift);
    }
    const add_job job = {p, terms, terms + TERMS};
    trt_broadcast_walk(&p->shape, &job, add_row);
}

#endif
