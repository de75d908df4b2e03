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
 * Two output pixels at a time: each window is widened once to 16 bits, each group of four
 * bytes stored as the halfword pairs (x0, x2), (x1, x3) -- the order SXTB16 gives the
 * weights -- and the two windows interleaved group by group. The hot loop, two output
 * channels at a time, reads a weight word per channel, splits it with two SXTB16 and feeds
 * eight SMLAD from four window words: 16 MACs in about 20 instructions. A reduction not a
 * multiple of four ends with plain multiplies.
 *
 * Groups and dilation: each window is first gathered tap by tap (kernel_c bytes of its group's
 * channels per tap, taps dilation apart) into one byte run, then widened, group by group, each
 * group against its own output channels (OHWI weights: contiguous per group). The same code
 * runs the convolutions other operators reduce to (transposed convolution, a one-input-channel
 * depthwise layer): trt_conv2d_dsp_on_image takes an image already padded or prepared.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../arith.h"
#include "../padding.h"
#include "../weight_sums.h"
#include "dsp_intrinsics.h"
#include "dsp_requantize.h"
#include "kernels_dsp.h"

static int32_t window_len(const trt_conv_params *p) { return p->kernel_h * p->kernel_w * p->kernel_c; }
static int is_general(const trt_conv_params *p) { return p->groups != 1 || p->dilation_h != 1 || p->dilation_w != 1; }
static int has_padding(const trt_conv_params *p) { return p->pad_h > 0 || p->pad_w > 0; }
static size_t padded_bytes(const trt_conv_params *p) {
    if (!has_padding(p)) return 0;
    size_t bytes = (size_t)(p->in_h + 2 * p->pad_h) * (size_t)(p->in_w + 2 * p->pad_w) * (size_t)p->in_c;
    return (bytes + 3) & ~(size_t)3;
}
/* the two interleaved windows: 4 words per group of four bytes, then 2 x 4 plain halfwords */
static size_t columns_bytes(const trt_conv_params *p) { return (size_t)(window_len(p) / 4) * 16 + 16; }
/* kernel_w * in_c not a multiple of 4, groups or dilation: a window is gathered into one byte run first */
static int needs_staging(const trt_conv_params *p) { return is_general(p) || (p->kernel_w * p->in_c) % 4 != 0; }

int trt_conv2d_dsp_accepts(const trt_conv_params *p) { return trt_pad_value_fits(p->input_offset); }

size_t trt_conv2d_dsp_scratch_bytes(const trt_conv_params *p) { return trt_conv_sums_bytes(p); }

/* The weight sums (weight_sums.h), and whether every channel takes the short requantization. */
void trt_conv2d_dsp_prepare(trt_conv_params *p, void *scratch) {
    const int32_t n = window_len(p);
    trt_conv_prepare_sums(p, scratch);
    p->small_accumulators = 1;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const int64_t abs_sum = trt_abs_sum_s8(p->weights + (size_t)oc * n, n, 1);
        if (!trt_dsp_accumulator_fits(abs_sum, 128, p->folded_bias[oc], p->shifts[oc])) p->small_accumulators = 0;
    }
}

/* The working memory of a call on a prepared image: the interleaved windows, the staging bytes. */
size_t trt_conv2d_dsp_block_bytes(const trt_conv_params *p) {
    size_t bytes = columns_bytes(p);
    if (needs_staging(p)) bytes += ((size_t)window_len(p) + 3) & ~(size_t)3;
    return bytes;
}

/* temp: [padded image][interleaved windows][staging bytes] */
size_t trt_conv2d_dsp_temp_bytes(const trt_conv_params *p) { return padded_bytes(p) + trt_conv2d_dsp_block_bytes(p); }

typedef struct {
    const int8_t *image;       /* padded (or the input when there is no padding) */
    int32_t pitch;             /* bytes per image row */
    uint32_t *columns;
    int8_t *staging;
} workspace;

/* n bytes (n % 4 == 0) of pixel k's window, from window position pos, into its column slots. */
static void widen_groups(const int8_t *src, int32_t n, uint32_t *columns, int32_t pos, int32_t k) {
    uint32_t *slot = columns + (size_t)(pos / 4) * 4 + 2 * k;
    for (; n > 0; n -= 4, src += 4, slot += 4) {
        uint32_t v = trt_read32(src);
        slot[0] = trt_sxtb16(v);
        slot[1] = trt_sxtb16_ror8(v);
    }
}

/* Pixel k's window, group g. */
static void window_to_columns(const trt_conv_params *p, const workspace *ws, int32_t pixel, int32_t k, int32_t g) {
    const int32_t oy = pixel / p->out_w, ox = pixel % p->out_w, row_len = p->kernel_w * p->in_c;
    const int32_t window = window_len(p), whole = window & ~3;
    const int8_t *x = ws->image + (size_t)oy * p->stride_h * ws->pitch + (size_t)ox * p->stride_w * p->in_c;
    const int8_t *flat = x;
    if (is_general(p)) {
        const int32_t kc = p->kernel_c;
        const size_t row_step = (size_t)p->dilation_h * ws->pitch, tap_step = (size_t)p->dilation_w * p->in_c;
        int8_t *dst = ws->staging;
        x += (size_t)g * kc;
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            for (int32_t kx = 0; kx < p->kernel_w; kx++, dst += kc) memcpy(dst, x + ky * row_step + kx * tap_step, (size_t)kc);
        flat = ws->staging;
        widen_groups(flat, whole, ws->columns, 0, k);
    } else if (needs_staging(p)) {
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            memcpy(ws->staging + ky * row_len, x + (size_t)ky * ws->pitch, (size_t)row_len);
        flat = ws->staging;
        widen_groups(flat, whole, ws->columns, 0, k);
    } else {
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            widen_groups(x + (size_t)ky * ws->pitch, row_len, ws->columns, ky * row_len, k);
    }
    /* the last window % 4 bytes, plainly (only with staging: otherwise window % 4 == 0) */
    int16_t *tail = (int16_t *)(void *)(ws->columns + (size_t)(window / 4) * 4) + 4 * k;
    for (int32_t i = 0; i < window - whole; i++) tail[i] = flat[whole + i];
}

/* acc = {pixel 0 . w0, pixel 0 . w1, pixel 1 . w0, pixel 1 . w1} over `groups` groups of four. */
static __attribute__((noinline)) void dot2x2(const uint32_t *columns, int32_t groups, const int8_t *w0,
                                            const int8_t *w1, int32_t acc[4]) {
    int32_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
    for (int32_t g = groups; g > 0; g--) {
        const uint32_t v0 = trt_read32(w0), v1 = trt_read32(w1);
        w0 += 4;
        w1 += 4;
        const uint32_t w0e = trt_sxtb16(v0), w0o = trt_sxtb16_ror8(v0);
        const uint32_t w1e = trt_sxtb16(v1), w1o = trt_sxtb16_ror8(v1);
        uint32_t xe = columns[0], xo = columns[1];
        a0 = trt_smlad(xe, w0e, a0);
        a0 = trt_smlad(xo, w0o, a0);
        a1 = trt_smlad(xe, w1e, a1);
        a1 = trt_smlad(xo, w1o, a1);
        xe = columns[2];
        xo = columns[3];
        columns += 4;
        b0 = trt_smlad(xe, w0e, b0);
        b0 = trt_smlad(xo, w0o, b0);
        b1 = trt_smlad(xe, w1e, b1);
        b1 = trt_smlad(xo, w1o, b1);
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = b0;
    acc[3] = b1;
}

/* What the finishing of every output channel reads, copied out of the parameters once per call
 * (the output's byte stores could alias them: GCC would reload each one per channel). */
typedef struct {
    const int32_t *folded, *multipliers, *shifts;
    int32_t offset, lo, hi, small;
} finish_constants;

static finish_constants finish_constants_of(const trt_conv_params *p) {
    const finish_constants k = {p->folded_bias, p->multipliers, p->shifts,        p->output_offset,
                                p->activation_min, p->activation_max, p->small_accumulators};
    return k;
}

/* Output channel oc of two pixels, whose parameters are read once. */
static inline __attribute__((always_inline)) void finish_channel(const finish_constants *k, int32_t oc, int32_t acc_a,
                                                                int32_t acc_b, int8_t *out_a, int8_t *out_b) {
    const int32_t folded = k->folded[oc], mult = k->multipliers[oc], shift = k->shifts[oc];
    if (k->small) {   /* |acc + folded| < 2^30: no wrap, the short requantization */
        const trt_dsp_requant r = trt_dsp_requant_of(mult, shift);
        out_a[oc] = trt_dsp_output_s8(acc_a + folded, &r, k->offset, k->lo, k->hi);
        out_b[oc] = trt_dsp_output_s8(acc_b + folded, &r, k->offset, k->lo, k->hi);
        return;
    }
    out_a[oc] = trt_output_s8(trt_add_wrap(acc_a, folded), mult, shift, k->offset, k->lo, k->hi);
    out_b[oc] = trt_output_s8(trt_add_wrap(acc_b, folded), mult, shift, k->offset, k->lo, k->hi);
}

/* Output channels [oc0, oc1) of pixels a and b (b == a for a last, odd one: computed once more,
 * stored once more). */
static void conv_pair(const trt_conv_params *p, const workspace *ws, int32_t oc0, int32_t oc1, int8_t *out_a,
                      int8_t *out_b) {
    const int32_t n = window_len(p), groups = n / 4, rest = n % 4;
    const int16_t *tail = (const int16_t *)(const void *)(ws->columns + (size_t)groups * 4);
    const uint32_t *columns = ws->columns;
    const int8_t *weights = p->weights;
    const finish_constants k = finish_constants_of(p);
    for (int32_t oc = oc0; oc < oc1; oc += 2) {
        const int8_t *w0 = weights + (size_t)oc * n;
        const int8_t *w1 = oc + 1 < oc1 ? w0 + n : w0;
        int32_t acc[4];
        dot2x2(columns, groups, w0, w1, acc);
        for (int32_t i = 0; i < rest; i++) {
            const int32_t x = tail[i], y = tail[4 + i], u = w0[4 * groups + i], v = w1[4 * groups + i];
            acc[0] += x * u;
            acc[1] += x * v;
            acc[2] += y * u;
            acc[3] += y * v;
        }
        finish_channel(&k, oc, acc[0], acc[2], out_a, out_b);
        if (oc + 1 < oc1) finish_channel(&k, oc + 1, acc[1], acc[3], out_a, out_b);
    }
}

void trt_conv2d_dsp_on_image(const trt_conv_params *p, const int8_t *image, int32_t pitch, int8_t *out, void *temp) {
    const int32_t pixels = p->out_h * p->out_w, per_group = p->out_c / p->groups;
    workspace ws = {image, pitch, temp, (int8_t *)temp + columns_bytes(p)};
    for (int32_t i = 0; i < pixels; i += 2) {
        const int32_t j = i + 1 < pixels ? i + 1 : i;
        for (int32_t g = 0; g < p->groups; g++) {
            window_to_columns(p, &ws, i, 0, g);
            window_to_columns(p, &ws, j, 1, g);
            conv_pair(p, &ws, g * per_group, (g + 1) * per_group, out + (size_t)i * p->out_c, out + (size_t)j * p->out_c);
        }
    }
}

void trt_conv2d_dsp(const trt_conv_params *p, void *temp) {
    const int32_t pitch = (p->in_w + 2 * p->pad_w) * p->in_c;
    int8_t *padded = temp;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * p->in_h * p->in_w * p->in_c;
        if (has_padding(p)) {
            trt_pad_image(image, padded, p->in_h, p->in_w, p->in_c, p->pad_h, p->pad_w, p->input_offset);
            image = padded;
        }
        trt_conv2d_dsp_on_image(p, image, pitch, p->output + (size_t)b * p->out_h * p->out_w * p->out_c,
                                padded + padded_bytes(p));
    }
}

#endif
