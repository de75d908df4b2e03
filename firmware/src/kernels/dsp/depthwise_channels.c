/*
 * cortex_m::quantized_depthwise_conv2d.out with the DSP extension for any channel count, depth
 * multiplier, stride, dilation and padding -- NHWC int8, 1HWO weights.
 *
 * Arithmetic (operators.quantized_depthwise_conv2d_impl, arith.h):
 *   acc[oc] = bias[oc] + sum over the window of (x[.., oc / depth_multiplier] + input_offset) * w[ky, kx, oc]
 *           = sum(x * w) + folded_bias[oc],  folded_bias = bias + input_offset * sum(w)   (int32, wraps)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 *
 * SMLAD multiplies two pairs of halfwords and adds both products to one accumulator, so the two
 * products must belong to the same output: two taps of one channel. Each input row a row of
 * output pixels reads is therefore converted once (into a ring of such rows) into pairs
 *   P[col][c] = (x[col][c], x[col + dilation_w][c])      (16-bit halves, col in padded columns)
 * -- the two horizontally adjacent taps of channel c -- with its left and right padding; rows
 * above and below the image read a row of pad pairs. Pad values are -input_offset, so every
 * window is whole and folded_bias (prepared at load) is exact. A window row of kernel_w taps is
 * then (kernel_w + 1) / 2 words P[ox * stride + 2 j * dilation][c], each one SMLAD against the
 * channel's pair of weights packed at load (an odd last tap paired with a zero weight).
 * Pixel by pixel, channel by channel: consecutive channels are consecutive words, so each of a
 * 3x3 window's six pair pointers steps by one word, and a channel's weights and requantization
 * constants are two short runs of words. When the stride divides 2 * dilation_w (stride 2 with
 * dilation 1) only every stride-th column starts a pair, and only those columns are converted.
 * Requantization: dsp_requantize.h when every channel's accumulator stays below 2^30 and its
 * right shift is 1..21 (checked at load; the output offset is folded into the rounding term),
 * arith.h's otherwise.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../arith.h"
#include "dsp_intrinsics.h"
#include "dsp_requantize.h"
#include "kernels_dsp.h"

/* The most input rows one output row reads ((kernel_h - 1) * dilation_h + 1) this variant keeps. */
#define MAX_SPAN 64

static int32_t span(const trt_conv_params *p) { return (p->kernel_h - 1) * p->dilation_h + 1; }
static int32_t pairs_per_row(const trt_conv_params *p) { return (p->kernel_w + 1) / 2; }
static int32_t padded_width(const trt_conv_params *p) { return p->in_w + 2 * p->pad_w; }
/* Windows start every stride columns and their pairs 2 dilation columns apart: when the stride
 * divides 2 dilation, only every stride-th column starts a pair, and only those are kept. */
static int32_t column_step(const trt_conv_params *p) {
    return (2 * p->dilation_w) % p->stride_w == 0 ? p->stride_w : 1;
}
static int32_t kept_columns(const trt_conv_params *p) {
    return (padded_width(p) + column_step(p) - 1) / column_step(p);
}
static size_t pair_row_words(const trt_conv_params *p) { return (size_t)kept_columns(p) * p->in_c; }

int trt_depthwise_channels_dsp_accepts(const trt_conv_params *p) { return span(p) <= MAX_SPAN; }

/* Per output channel, prepared at load: folded bias, multiplier, right shift, rounding term
 * (2^(right - 1) + output_offset * 2^right), activation bounds. */
typedef struct {
    int32_t folded, multiplier, right, rounding, lo, hi;
} channel_constants;

/* The short requantization with the output offset in the rounding term: for 1 <= right <= 21,
 * |v| + 2^(right-1) + 255 * 2^right < 2^31. */
static int short_requant_fits(int32_t shift) { return shift <= -1 && shift >= -21; }

/* scratch (p->packed_weights): weight pairs [out_c][kernel_h][pairs_per_row], then the channel
 * constants [out_c] */
static size_t pairs_words(const trt_conv_params *p) { return (size_t)p->out_c * p->kernel_h * pairs_per_row(p); }

size_t trt_depthwise_channels_dsp_scratch_bytes(const trt_conv_params *p) {
    return pairs_words(p) * sizeof(uint32_t) + (size_t)p->out_c * sizeof(channel_constants);
}

static const uint32_t *pairs_of(const trt_conv_params *p) { return (const uint32_t *)(const void *)p->packed_weights; }
static const channel_constants *constants_of(const trt_conv_params *p) {
    return (const channel_constants *)(const void *)(pairs_of(p) + pairs_words(p));
}

void trt_depthwise_channels_dsp_prepare(trt_conv_params *p, void *scratch) {
    const int32_t ppr = pairs_per_row(p), taps = p->kernel_h * p->kernel_w;
    const int32_t off = p->input_offset;
    const int32_t x_max = off < -128 || off > 128 ? (off < 0 ? -off : off) : 128;   /* pads are -input_offset */
    uint32_t *pairs = scratch;
    channel_constants *k = (channel_constants *)(void *)(pairs + pairs_words(p));
    p->small_accumulators = 1;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const int8_t *w = p->weights + oc;
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            for (int32_t j = 0; j < ppr; j++) {
                const int32_t lo = w[(size_t)(ky * p->kernel_w + 2 * j) * p->out_c];
                const int32_t hi = 2 * j + 1 < p->kernel_w ? w[(size_t)(ky * p->kernel_w + 2 * j + 1) * p->out_c] : 0;
                pairs[((size_t)oc * p->kernel_h + ky) * ppr + j] = trt_pack16((uint32_t)lo, (uint32_t)hi);
            }
        uint32_t sum = 0;
        for (int32_t t = 0; t < taps; t++) sum += (uint32_t)(int32_t)w[(size_t)t * p->out_c];
        const int32_t folded = trt_wrap32(sum * (uint32_t)off + (uint32_t)(p->bias ? p->bias[oc] : 0));
        const int32_t shift = p->shifts[oc], right = -shift;
        k[oc].folded = folded;
        k[oc].multiplier = p->multipliers[oc];
        k[oc].right = right;
        k[oc].rounding = short_requant_fits(shift) ? (int32_t)(1u << (right - 1)) +
                                                         trt_wrap32((uint32_t)p->output_offset << right)
                                                   : 0;
        k[oc].lo = p->activation_min;
        k[oc].hi = p->activation_max;
        if (!short_requant_fits(shift) ||
            !trt_dsp_accumulator_fits(trt_abs_sum_s8(w, taps, p->out_c), x_max, folded, shift))
            p->small_accumulators = 0;
    }
    p->packed_weights = (const int8_t *)pairs;
}

/* temp: the ring of pair rows, then one pair row of padding */
size_t trt_depthwise_channels_dsp_temp_bytes(const trt_conv_params *p) {
    return (size_t)(span(p) + 1) * pair_row_words(p) * sizeof(uint32_t);
}

/* Input row `row` (NULL: above or below the image) as pairs: dst[(col / column_step) * c + ch]. */
static void convert_row(const trt_conv_params *p, const int8_t *row, uint32_t *dst) {
    const int32_t c = p->in_c, width = padded_width(p), left = p->pad_w, d = p->dilation_w, step = column_step(p);
    const uint32_t pad = (uint32_t)(-p->input_offset) & 0xFFFFu;
    for (int32_t col = 0; col < width; col += step, dst += c) {
        const int32_t a = col - left, b = col + d - left;   /* the two taps' input columns */
        const int a_in = row && a >= 0 && a < p->in_w, b_in = row && b >= 0 && b < p->in_w;
        int32_t ch = 0;
        if (a_in && b_in) {   /* four channels per pair of words: SXTB16 gives (c0, c2) and (c1, c3) */
            const int8_t *xa = row + (size_t)a * c, *xb = row + (size_t)b * c;
            for (; ch + 4 <= c; ch += 4) {
                const uint32_t va = trt_read32(xa + ch), vb = trt_read32(xb + ch);
                const uint32_t ae = trt_sxtb16(va), be = trt_sxtb16(vb), ao = trt_sxtb16_ror8(va), bo = trt_sxtb16_ror8(vb);
                dst[ch] = trt_pack16(ae, be);
                dst[ch + 1] = trt_pack16(ao, bo);
                dst[ch + 2] = trt_pack16(ae >> 16, be >> 16);
                dst[ch + 3] = trt_pack16(ao >> 16, bo >> 16);
            }
        }
        for (; ch < c; ch++) {
            const uint32_t lo = a_in ? (uint32_t)(int32_t)row[(size_t)a * c + ch] : pad;
            const uint32_t hi = b_in ? (uint32_t)(int32_t)row[(size_t)b * c + ch] : pad;
            dst[ch] = trt_pack16(lo, hi);
        }
    }
}

typedef struct {
    const int8_t *image;
    uint32_t *ring, *pad_row;
    int32_t held[MAX_SPAN];         /* the input row each ring slot holds, -1: none */
} rows_state;

static void input_rows(const trt_conv_params *p, rows_state *st, int32_t oy, const uint32_t **rows) {
    const int32_t n = span(p);
    for (int32_t ky = 0; ky < p->kernel_h; ky++) {
        const int32_t r = oy * p->stride_h - p->pad_h + ky * p->dilation_h;
        if (r < 0 || r >= p->in_h) {
            rows[ky] = st->pad_row;
            continue;
        }
        uint32_t *slot = st->ring + (size_t)(r % n) * pair_row_words(p);
        if (st->held[r % n] != r) {
            convert_row(p, st->image + (size_t)r * p->in_w * p->in_c, slot);
            st->held[r % n] = r;
        }
        rows[ky] = slot;
    }
}

/* 3x3 windows, depth multiplier 1, the short requantization: a row of output pixels, every
 * channel. The six pair pointers, the weights and the constants each step by words. */
static __attribute__((noinline)) void row_3x3(const trt_conv_params *p, const uint32_t *const *rows, int8_t *out) {
    const int32_t c = p->in_c, step = column_step(p);
    const size_t next = (size_t)(p->stride_w / step) * c - c, second = (size_t)(2 * p->dilation_w / step) * c;
    const uint32_t *a0 = rows[0], *a1 = rows[1], *a2 = rows[2];
    const uint32_t *b0 = a0 + second, *b1 = a1 + second, *b2 = a2 + second;
    for (int32_t ox = 0; ox < p->out_w; ox++) {
        const uint32_t *w = pairs_of(p);
        const channel_constants *k = constants_of(p);
        for (int8_t *end = out + c; out != end; out++, k++, w += 6) {
            int32_t acc = trt_smlad(*a0++, w[0], k->folded);
            acc = trt_smlad(*b0++, w[1], acc);
            acc = trt_smlad(*a1++, w[2], acc);
            acc = trt_smlad(*b1++, w[3], acc);
            acc = trt_smlad(*a2++, w[4], acc);
            acc = trt_smlad(*b2++, w[5], acc);
            const int32_t v = trt_smmulr(acc * 2, k->multiplier);
            *out = (int8_t)trt_clamp((v + k->rounding + (v >> 31)) >> k->right, k->lo, k->hi);
        }
        a0 += next;
        a1 += next;
        a2 += next;
        b0 += next;
        b1 += next;
        b2 += next;
    }
}

/* Any window and multiplier: a row of output pixels, every channel. */
static __attribute__((noinline)) void row_any(const trt_conv_params *p, const uint32_t *const *rows, int8_t *out) {
    const int32_t c = p->in_c, ppr = pairs_per_row(p), kh = p->kernel_h, m = p->depth_multiplier, step = column_step(p);
    const size_t pair_step = (size_t)(2 * p->dilation_w / step) * c;
    const int fast = p->small_accumulators;
    for (int32_t ox = 0; ox < p->out_w; ox++, out += p->out_c) {
        const size_t at = (size_t)(ox * p->stride_w / step) * c;
        const uint32_t *w = pairs_of(p);
        const channel_constants *k = constants_of(p);
        for (int32_t oc = 0; oc < p->out_c; oc++, k++) {
            const size_t ic = (size_t)(oc / m);
            int32_t acc = k->folded;
            for (int32_t ky = 0; ky < kh; ky++) {
                const uint32_t *q = rows[ky] + at + ic;
                for (int32_t j = 0; j < ppr; j++, q += pair_step) acc = trt_smlad(*q, *w++, acc);
            }
            if (fast) {
                const int32_t v = trt_smmulr(acc * 2, k->multiplier);
                out[oc] = (int8_t)trt_clamp((v + k->rounding + (v >> 31)) >> k->right, k->lo, k->hi);
            } else {
                out[oc] = trt_output_s8(acc, k->multiplier, -k->right, p->output_offset, k->lo, k->hi);
            }
        }
    }
}

void trt_depthwise_channels_dsp(const trt_conv_params *p, void *temp) {
    const uint32_t *rows[TRT_MAX_DEPTHWISE_TAPS];
    const int three = p->kernel_h == 3 && p->kernel_w == 3 && p->depth_multiplier == 1 && p->small_accumulators;
    rows_state st;
    st.ring = temp;
    st.pad_row = st.ring + (size_t)span(p) * pair_row_words(p);
    convert_row(p, NULL, st.pad_row);
    for (int32_t b = 0; b < p->batches; b++) {
        st.image = p->input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (int32_t i = 0; i < MAX_SPAN; i++) st.held[i] = -1;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++, out += (size_t)p->out_w * p->out_c) {
            input_rows(p, &st, oy, rows);
            if (three) row_3x3(p, rows, out);
            else row_any(p, rows, out);
        }
    }
}

#endif
