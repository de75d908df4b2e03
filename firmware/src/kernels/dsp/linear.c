/*
 * cortex_m::quantized_linear.out with the DSP extension -- int8 fully connected layer,
 * weights read in place.
 *
 * Arithmetic: as kernels/c/linear.c (both forms; linear_finish.h does everything after the
 * dot products). Each input row is widened once to 16 bits in the order SXTB16 gives the
 * weights (groups of four as (x0, x2), (x1, x3)); the hot loop reads one weight word per
 * output row, splits it with two SXTB16 and feeds two SMLAD, two output rows at a time.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../linear_finish.h"
#include "dsp_intrinsics.h"
#include "kernels_dsp.h"

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
            out[o] = trt_linear_finish(p, o, acc[0], input_sum);
            if (o + 1 < p->out_features) out[o + 1] = trt_linear_finish(p, o + 1, acc[1], input_sum);
        }
    }
}

#endif
