/*
 * cortex_m::quantized_linear.out with the DSP extension -- int8 fully connected layer,
 * weights read in place.
 *
 * Arithmetic: as kernels/c/linear.c (both forms; linear_finish.h does everything after the
 * dot products). Each input row is widened once to 16 bits in the order SXTB16 gives the
 * weights (groups of four as (x0, x2), (x1, x3)); the hot loop reads one weight word per
 * output row, splits it with two SXTB16 and feeds two SMLAD, two output rows at a time.
 * Requantization: dsp_requantize.h when no input can take an accumulator to 2^30 (checked at
 * load: then the int32 sum is the exact one of either form), linear_finish.h's otherwise.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../linear_finish.h"
#include "../weight_sums.h"
#include "dsp_intrinsics.h"
#include "dsp_requantize.h"
#include "kernels_dsp.h"

size_t trt_linear_dsp_scratch_bytes(const trt_linear_params *p) { return trt_linear_sums_bytes(p); }

void trt_linear_dsp_prepare(trt_linear_params *p, void *scratch) {
    trt_linear_prepare_sums(p, scratch);
    p->small_accumulators = p->shift <= 0;
    for (int32_t o = 0; o < p->out_features && p->small_accumulators; o++)
        if (trt_linear_accumulator_bound(p, o) >= TRT_DSP_ACC_LIMIT) p->small_accumulators = 0;
}

/* The accumulator of output o in int32 (exact: below 2^30 by the load-time bound). */
static inline int32_t short_accumulator(const trt_linear_params *p, int32_t o, int32_t dot, int32_t input_sum,
                                        int32_t terms) {
    if (p->kernel_sum) return dot + input_sum * p->filter_offset + p->kernel_sum[o];
    int32_t acc = dot + terms;
    if (p->input_offset != 0) acc += p->input_offset * p->weight_sums[o];
    if (p->bias) acc += p->bias[o];
    return acc;
}

size_t trt_linear_dsp_temp_bytes(const trt_linear_params *p) { return (size_t)((p->depth + 3) & ~3) * sizeof(int16_t); }

static int32_t widen(const int8_t *src, int32_t n, int16_t *dst) {
    int32_t sum = 0;
    for (; n >= 4; n -= 4, src += 4, dst += 4) {
        uint32_t v = trt_read32(src);
        uint32_t even = trt_sxtb16(v), odd = trt_sxtb16_ror8(v);
        memcpy(dst, &even, sizeof even);
        memcpy(dst + 2, &odd, sizeof odd);
        sum += src[0] + src[1] + src[2] + src[3];
    }
    for (int32_t i = 0; i < n; i++) {
        dst[i] = src[i];
        sum += src[i];
    }
    return sum;
}

static void dot2(const int16_t *x, const int8_t *w0, const int8_t *w1, int32_t n, int32_t acc[2]) {
    int32_t a0 = 0, a1 = 0, i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t xe = trt_read32(x + i), xo = trt_read32(x + i + 2);
        uint32_t v0 = trt_read32(w0 + i), v1 = trt_read32(w1 + i);
        a0 = trt_smlad(xe, trt_sxtb16(v0), a0);
        a0 = trt_smlad(xo, trt_sxtb16_ror8(v0), a0);
        a1 = trt_smlad(xe, trt_sxtb16(v1), a1);
        a1 = trt_smlad(xo, trt_sxtb16_ror8(v1), a1);
    }
    for (; i < n; i++) {
        a0 += x[i] * w0[i];
        a1 += x[i] * w1[i];
    }
    acc[0] = a0;
    acc[1] = a1;
}

void trt_linear_dsp(const trt_linear_params *p, void *temp) {
    const int32_t n = p->depth;
    int16_t *x = temp;
    for (int32_t r = 0; r < p->rows; r++) {
        const int32_t input_sum = widen(p->input + (size_t)r * n, n, x);
        int8_t *out = p->output + (size_t)r * p->out_features;
        for (int32_t o = 0; o < p->out_features; o += 2) {
            const int8_t *w0 = p->weights + (size_t)o * n;
            const int8_t *w1 = o + 1 < p->out_features ? w0 + n : w0;
            int32_t acc[2];
            dot2(x, w0, w1, n, acc);
            if (p->small_accumulators) {
                /* filter_offset * sum(x) + depth * input_offset * filter_offset: within the bound too */
                const int32_t terms = p->filter_offset * input_sum + p->depth * p->input_offset * p->filter_offset;
                const trt_dsp_requant rq = trt_dsp_requant_of(p->multiplier, p->shift);
                out[o] = trt_dsp_output_s8(short_accumulator(p, o, acc[0], input_sum, terms), &rq, p->output_offset,
                                           p->activation_min, p->activation_max);
                if (o + 1 < p->out_features)
                    out[o + 1] = trt_dsp_output_s8(short_accumulator(p, o + 1, acc[1], input_sum, terms), &rq,
                                                   p->output_offset, p->activation_min, p->activation_max);
                continue;
            }
            out[o] = trt_linear_finish(p, o, acc[0], input_sum);
            if (o + 1 < p->out_features) out[o + 1] = trt_linear_finish(p, o + 1, acc[1], input_sum);
        }
    }
}

#endif
