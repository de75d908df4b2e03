/*
 * cortex_m::quantized_conv2d.out with the DSP extension -- NHWC int8 convolution, OHWI
 * weights read in place, per-channel requantization.
 *
 * Arithmetic (operators.quantized_conv2d_impl, arith.h), as kernels/mve/conv2d.c:
 *   acc[oc] = sum over the window of x * w + folded_bias[oc]    (int32, wraps)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * with a padded copy of the image (kernels/padding.h) so every window is whole and
 * folded_bias = bias + input_offset * sum(w) (weight_sums.h) is exact for every pixel.
 *
 * Each output pixel's window is widened once to 16 bits, each group of four bytes stored
 * as the halfword pairs (x0, x2), (x1, x3) -- the order SXTB16 gives the weights -- so the
 * hot loop reads a weight word, splits it with two SXTB16 and feeds SMLAD: two pixels and
 * two output channels at once, 16 MACs per 2 weight loads, 4 SXTB16, 4 input loads and
 * 8 SMLAD. A reduction not a multiple of four ends with plain multiplies.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../arith.h"
#include "../padding.h"
#include "dsp_intrinsics.h"
#include "kernels_dsp.h"

static int32_t window_len(const trt_conv_params *p) { return p->kernel_h * p->kernel_w * p->in_c; }
static int32_t column_len(const trt_conv_params *p) { return (window_len(p) + 3) & ~3; }   /* int16 elements */
static int has_padding(const trt_conv_params *p) { return p->pad_h > 0 || p->pad_w > 0; }
static size_t padded_bytes(const trt_conv_params *p) {
    size_t bytes = (size_t)(p->in_h + 2 * p->pad_h) * (size_t)(p->in_w + 2 * p->pad_w) * (size_t)p->in_c;
    return (bytes + 3) & ~(size_t)3;
}
/* kernel_w * in_c not a multiple of 4: the window is gathered into one byte run first */
static int needs_staging(const trt_conv_params *p) { return (p->kernel_w * p->in_c) % 4 != 0; }

int trt_conv2d_dsp_accepts(const trt_conv_params *p) {
    return p->groups == 1 && p->dilation_h == 1 && p->dilation_w == 1 && trt_pad_value_fits(p->input_offset);
}

/* temp: [padded image][two columns of int16][staging bytes] */
size_t trt_conv2d_dsp_temp_bytes(const trt_conv_params *p) {
    size_t bytes = has_padding(p) ? padded_bytes(p) : 0;
    bytes += 2 * (size_t)column_len(p) * sizeof(int16_t);
    if (needs_staging(p)) bytes += (size_t)column_len(p);
    return bytes;
}

/* n bytes to int16: groups of four as (x0, x2), (x1, x3); the last n % 4 plainly. */
static void widen(const int8_t *src, int32_t n, int16_t *dst) {
    for (; n >= 4; n -= 4, src += 4, dst += 4) {
        uint32_t v = trt_read32(src);
        uint32_t even = trt_sxtb16(v), odd = trt_sxtb16_ror8(v);
        memcpy(dst, &even, sizeof even);
        memcpy(dst + 2, &odd, sizeof odd);
    }
    for (int32_t i = 0; i < n; i++) dst[i] = src[i];
}

typedef struct {
    const int8_t *image;       /* padded (or the input when there is no padding) */
    int32_t pitch;             /* bytes per image row */
    int16_t *columns[2];
    int8_t *staging;
} workspace;

static void window_to_column(const trt_conv_params *p, const workspace *ws, int32_t pixel, int16_t *column) {
    const int32_t oy = pixel / p->out_w, ox = pixel % p->out_w, row_len = p->kernel_w * p->in_c;
    const int8_t *x = ws->image + (size_t)oy * p->stride_h * ws->pitch + (size_t)ox * p->stride_w * p->in_c;
    if (!needs_staging(p)) {
        for (int32_t ky = 0; ky < p->kernel_h; ky++) widen(x + (size_t)ky * ws->pitch, row_len, column + ky * row_len);
        return;
    }
    for (int32_t ky = 0; ky < p->kernel_h; ky++) memcpy(ws->staging + ky * row_len, x + (size_t)ky * ws->pitch, (size_t)row_len);
    widen(ws->staging, window_len(p), column);
}

/* acc[pixel][channel] += two columns against the weights of two output channels. */
static void dot2x2(const int16_t *ca, const int16_t *cb, const int8_t *w0, const int8_t *w1, int32_t n,
                   int32_t acc[2][2]) {
    int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint32_t v0 = trt_read32(w0 + i), v1 = trt_read32(w1 + i);
        uint32_t w0e = trt_sxtb16(v0), w0o = trt_sxtb16_ror8(v0), w1e = trt_sxtb16(v1), w1o = trt_sxtb16_ror8(v1);
        uint32_t xe = trt_read32(ca + i), xo = trt_read32(ca + i + 2);
        a00 = trt_smlad(xe, w0e, a00);
        a00 = trt_smlad(xo, w0o, a00);
        a01 = trt_smlad(xe, w1e, a01);
        a01 = trt_smlad(xo, w1o, a01);
        xe = trt_read32(cb + i);
        xo = trt_read32(cb + i + 2);
        a10 = trt_smlad(xe, w0e, a10);
        a10 = trt_smlad(xo, w0o, a10);
        a11 = trt_smlad(xe, w1e, a11);
        a11 = trt_smlad(xo, w1o, a11);
    }
    for (; i < n; i++) {
        a00 += ca[i] * w0[i];
        a01 += ca[i] * w1[i];
        a10 += cb[i] * w0[i];
        a11 += cb[i] * w1[i];
    }
    acc[0][0] = a00;
    acc[0][1] = a01;
    acc[1][0] = a10;
    acc[1][1] = a11;
}

static int8_t finish(const trt_conv_params *p, int32_t oc, int32_t acc) {
    return trt_output_s8(trt_add_wrap(acc, p->folded_bias[oc]), p->multipliers[oc], p->shifts[oc], p->output_offset,
                         p->activation_min, p->activation_max);
}

/* Output pixels a and b (b == a when a is the last, odd one: computed once more, stored once). */
static void conv_pair(const trt_conv_params *p, const workspace *ws, int8_t *out_a, int8_t *out_b) {
    const int32_t n = window_len(p);
    for (int32_t oc = 0; oc < p->out_c; oc += 2) {
        const int8_t *w0 = p->weights + (size_t)oc * n;
        const int8_t *w1 = oc + 1 < p->out_c ? w0 + n : w0;
        int32_t acc[2][2];
        dot2x2(ws->columns[0], ws->columns[1], w0, w1, n, acc);
        out_a[oc] = finish(p, oc, acc[0][0]);
        out_b[oc] = finish(p, oc, acc[1][0]);
        if (oc + 1 < p->out_c) {
            out_a[oc + 1] = finish(p, oc + 1, acc[0][1]);
            out_b[oc + 1] = finish(p, oc + 1, acc[1][1]);
        }
    }
}

void trt_conv2d_dsp(const trt_conv_params *p, void *temp) {
    const int32_t pixels = p->out_h * p->out_w;
    int8_t *bytes = temp;
    workspace ws;
    ws.pitch = (p->in_w + 2 * p->pad_w) * p->in_c;
    int8_t *padded = bytes;
    if (has_padding(p)) bytes += padded_bytes(p);
    ws.columns[0] = (int16_t *)(void *)bytes;
    ws.columns[1] = ws.columns[0] + column_len(p);
    ws.staging = (int8_t *)(ws.columns[1] + column_len(p));
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * p->in_h * p->in_w * p->in_c;
        if (has_padding(p)) {
            trt_pad_image(image, padded, p->in_h, p->in_w, p->in_c, p->pad_h, p->pad_w, p->input_offset);
            image = padded;
        }
        ws.image = image;
        int8_t *out = p->output + (size_t)b * pixels * p->out_c;
        for (int32_t i = 0; i < pixels; i += 2) {
            const int32_t j = i + 1 < pixels ? i + 1 : i;
            window_to_column(p, &ws, i, ws.columns[0]);
            window_to_column(p, &ws, j, ws.columns[1]);
            conv_pair(p, &ws, out + (size_t)i * p->out_c, out + (size_t)j * p->out_c);
        }
    }
}

#endif
