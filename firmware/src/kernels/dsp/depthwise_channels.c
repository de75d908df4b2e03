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
 * products must belong to the same output: two taps of one channel. The input rows a row of
 * output pixels reads are therefore kept channel-planar in 16 bits, Q[c][column], each input row
 * converted once into a ring of such rows (with its left and right padding; rows above and
 * below the image read a row of padding). Pad values are -input_offset, so every window is
 * whole and folded_bias (prepared at load) is exact. Two horizontally adjacent taps of a channel
 * are then one (unaligned) word of Q, against the pair of their weights packed at load: one
 * load and one SMLAD per two taps; an odd last tap of a kernel row is paired with a zero
 * weight. Channel by channel, so that a 3x3 window's six weight pairs stay in registers and the
 * channel's requantization constants are read once per row of output pixels. With dilation
 * the pairs are assembled from two halfwords (PKHBT).
 * Requantization: dsp_requantize.h when every channel's accumulator stays below 2^30 (checked
 * at load), arith.h's otherwise.
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
/* Q row length in halfwords: the padded width, then one pad column for an odd last tap's pair
 * (dilation_w columns for a dilated one), rounded up to even. */
static int32_t q_width(const trt_conv_params *p) {
    return (p->in_w + 2 * p->pad_w + p->dilation_w + 1) & ~1;
}
static size_t q_row_bytes(const trt_conv_params *p) { return (size_t)p->in_c * q_width(p) * sizeof(int16_t); }

int trt_depthwise_channels_dsp_accepts(const trt_conv_params *p) { return span(p) <= MAX_SPAN; }

/* scratch: folded bias [out_c], weight pairs [out_c][kernel_h][pairs_per_row] */
size_t trt_depthwise_channels_dsp_scratch_bytes(const trt_conv_params *p) {
    return (size_t)p->out_c * sizeof(int32_t) + (size_t)p->out_c * p->kernel_h * pairs_per_row(p) * sizeof(uint32_t);
}

void trt_depthwise_channels_dsp_prepare(trt_conv_params *p, void *scratch) {
    const int32_t ppr = pairs_per_row(p), taps = p->kernel_h * p->kernel_w;
    const int32_t x_max = p->input_offset < -128 || p->input_offset > 128 ? (p->input_offset < 0 ? -p->input_offset : p->input_offset) : 128;
    int32_t *folded = scratch;
    uint32_t *pairs = (uint32_t *)(folded + p->out_c);
    p->small_accumulators = 1;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const int8_t *w = p->weights + oc;
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            for (int32_t j = 0; j < ppr; j++) {
                const int32_t k0 = 2 * j, k1 = 2 * j + 1;
                const int32_t lo = w[(size_t)(ky * p->kernel_w + k0) * p->out_c];
                const int32_t hi = k1 < p->kernel_w ? w[(size_t)(ky * p->kernel_w + k1) * p->out_c] : 0;
                pairs[((size_t)oc * p->kernel_h + ky) * ppr + j] = trt_pack16((uint32_t)lo, (uint32_t)hi);
            }
        uint32_t sum = 0;
        for (int32_t t = 0; t < taps; t++) sum += (uint32_t)(int32_t)w[(size_t)t * p->out_c];
        folded[oc] = trt_wrap32(sum * (uint32_t)p->input_offset + (uint32_t)(p->bias ? p->bias[oc] : 0));
        if (!trt_dsp_accumulator_fits(trt_abs_sum_s8(w, taps, p->out_c), x_max, folded[oc], p->shifts[oc]))
            p->small_accumulators = 0;
    }
    p->folded_bias = folded;
    p->packed_weights = (const int8_t *)pairs;
}

/* temp: the ring of Q rows, one Q row of padding, the accumulators of one output row */
size_t trt_depthwise_channels_dsp_temp_bytes(const trt_conv_params *p) {
    return (size_t)(span(p) + 1) * q_row_bytes(p) + (size_t)p->out_w * sizeof(int32_t);
}

typedef struct {
    const int8_t *image;
    int16_t *ring, *pad_row;
    int32_t held[MAX_SPAN];         /* the input row each ring slot holds, -1: none */
} rows_state;

static void fill16(int16_t *dst, int32_t n, int16_t v) {
    for (int32_t i = 0; i < n; i++) dst[i] = v;
}

/* Input row r into a Q row: channel c's columns at dst + c * q_width. */
static void convert_row(const trt_conv_params *p, const int8_t *row, int16_t *dst) {
    const int32_t c = p->in_c, qw = q_width(p), w = p->in_w, left = p->pad_w;
    const int16_t pad = (int16_t)-p->input_offset;
    for (int32_t ch = 0; ch < c; ch++) {
        int16_t *q = dst + (size_t)ch * qw;
        fill16(q, left, pad);
        fill16(q + left + w, qw - left - w, pad);
    }
    int32_t ch = 0;
    for (; ch + 4 <= c; ch += 4) {   /* four channels per word: SXTB16 gives (c0, c2) and (c1, c3) */
        int16_t *q0 = dst + (size_t)ch * qw + left, *q1 = q0 + qw, *q2 = q1 + qw, *q3 = q2 + qw;
        const int8_t *x = row + ch;
        for (int32_t col = 0; col < w; col++, x += c) {
            const uint32_t v = trt_read32(x), even = trt_sxtb16(v), odd = trt_sxtb16_ror8(v);
            q0[col] = (int16_t)(even & 0xFFFFu);
            q2[col] = (int16_t)(even >> 16);
            q1[col] = (int16_t)(odd & 0xFFFFu);
            q3[col] = (int16_t)(odd >> 16);
        }
    }
    for (; ch < c; ch++) {
        int16_t *q = dst + (size_t)ch * qw + left;
        const int8_t *x = row + ch;
        for (int32_t col = 0; col < w; col++, x += c) q[col] = *x;
    }
}

static void input_rows(const trt_conv_params *p, rows_state *st, int32_t oy, const int16_t **rows) {
    const int32_t n = span(p);
    for (int32_t ky = 0; ky < p->kernel_h; ky++) {
        const int32_t r = oy * p->stride_h - p->pad_h + ky * p->dilation_h;
        if (r < 0 || r >= p->in_h) {
            rows[ky] = st->pad_row;
            continue;
        }
        int16_t *slot = st->ring + (size_t)(r % n) * (q_row_bytes(p) / sizeof(int16_t));
        if (st->held[r % n] != r) {
            convert_row(p, st->image + (size_t)r * p->in_w * p->in_c, slot);
            st->held[r % n] = r;
        }
        rows[ky] = slot;
    }
}

/* One output value: acc of the window starting at column `col` of the rows (each at channel ic). */
static inline __attribute__((always_inline)) int32_t window_sum(const trt_conv_params *p, const int16_t *const *rows,
                                                               const uint32_t *pairs, int32_t col, int32_t acc,
                                                               const int32_t kh, const int32_t ppr, const int dilated) {
    for (int32_t ky = 0; ky < kh; ky++, pairs += ppr) {
        const int16_t *q = rows[ky] + col;
        for (int32_t j = 0; j < ppr; j++) {
            uint32_t x;
            if (dilated) {
                const int32_t d = p->dilation_w;
                x = trt_pack16((uint32_t)(int32_t)q[2 * j * d], (uint32_t)(int32_t)q[(2 * j + 1) * d]);
            } else {
                x = trt_read32(q + 2 * j);
            }
            acc = trt_smlad(x, pairs[j], acc);
        }
    }
    return acc;
}

typedef struct {
    const int16_t *rows[TRT_MAX_DEPTHWISE_TAPS];   /* the kernel rows, at this channel */
    const uint32_t *pairs;                          /* this channel's weight pairs */
    int32_t folded, multiplier, shift;
    trt_dsp_requant requant;                        /* small_accumulators: the short form's constants */
    int8_t *out;                                    /* this channel in the first pixel of the output row */
} channel_row;

/* One output row of one channel. */
static inline __attribute__((always_inline)) void row_of_channel(const trt_conv_params *p, const channel_row *cr,
                                                                const int32_t kh, const int32_t ppr,
                                                                const int dilated, const int fast) {
    const int32_t step = p->stride_w, out_c = p->out_c, offset = p->output_offset;
    const int32_t lo = p->activation_min, hi = p->activation_max;
    const trt_dsp_requant r = cr->requant;
    int8_t *out = cr->out;
    for (int32_t ox = 0, col = 0; ox < p->out_w; ox++, col += step, out += out_c) {
        const int32_t acc = window_sum(p, cr->rows, cr->pairs, col, cr->folded, kh, ppr, dilated);
        *out = fast ? trt_dsp_output_s8(acc, &r, offset, lo, hi)
                    : trt_output_s8(acc, cr->multiplier, cr->shift, offset, lo, hi);
    }
}

/* Windows of at most 4 columns (two pairs a row), dilation 1, the short requantization: the row
 * is computed in passes over the output row, each with few enough values to stay in registers
 * (the byte stores could alias anything, so little else would): acc[ox] gathers two kernel rows
 * per pass in the working memory, the last pass adds the last row(s) and requantizes. */
static __attribute__((noinline)) void two_rows(const int16_t *qa, const int16_t *qb, const uint32_t *wa,
                                               const uint32_t *wb, int32_t *acc, int32_t n, int32_t step, int first,
                                               int32_t folded) {
    const uint32_t a0 = wa[0], a1 = wa[1], b0 = wb[0], b1 = wb[1];
    for (int32_t ox = 0; ox < n; ox++, qa += step, qb += step) {
        int32_t v = first ? folded : acc[ox];
        v = trt_smlad(trt_read32(qa), a0, v);
        v = trt_smlad(trt_read32(qa + 2), a1, v);
        v = trt_smlad(trt_read32(qb), b0, v);
        v = trt_smlad(trt_read32(qb + 2), b1, v);
        acc[ox] = v;
    }
}

typedef struct {
    int32_t multiplier, right, rounding;   /* rounding: 2^(right - 1) + (output_offset << right) */
    int32_t lo, hi;
} short_requant;

/* The last kernel row and the requantization into out. */
static __attribute__((noinline)) void last_row(const int16_t *q, const uint32_t *w, const int32_t *acc, int8_t *out,
                                               int32_t n, int32_t step, int32_t out_c, const short_requant *r) {
    const uint32_t w0 = w[0], w1 = w[1];
    const int32_t mult = r->multiplier, right = r->right, rounding = r->rounding, lo = r->lo, hi = r->hi;
    for (; n > 0; n--, q += step, out += out_c) {
        int32_t v = *acc++;
        v = trt_smlad(trt_read32(q), w0, v);
        v = trt_smlad(trt_read32(q + 2), w1, v);
        v = trt_smmulr(v * 2, mult);
        *out = (int8_t)trt_clamp((v + rounding + (v >> 31)) >> right, lo, hi);
    }
}

/* The short requantization with the output offset folded into the rounding term needs
 * 1 <= right shift <= 21: then |v| + 2^(right-1) + 255 * 2^right < 2^31. */
static int narrow_requant_fits(int32_t shift) { return shift <= -1 && shift >= -21; }

static const uint32_t NO_WEIGHTS[2] = {0, 0};

static void row_narrow(const trt_conv_params *p, const channel_row *cr, int32_t *acc) {
    const int32_t kh = p->kernel_h, n = p->out_w, step = p->stride_w, right = -cr->shift;
    const short_requant r = {cr->multiplier, right,
                             (int32_t)(1u << (right - 1)) + trt_wrap32((uint32_t)p->output_offset << right),
                             p->activation_min, p->activation_max};
    int32_t ky = 0;
    for (; ky + 2 <= kh - 1; ky += 2)   /* the kernel rows before the last, two at a time */
        two_rows(cr->rows[ky], cr->rows[ky + 1], cr->pairs + 2 * ky, cr->pairs + 2 * ky + 2, acc, n, step, ky == 0,
                 cr->folded);
    if (ky < kh - 1 || kh == 1)   /* one row left (an even height), or none (the bias alone): zero weights */
        two_rows(cr->rows[ky], cr->rows[ky], kh == 1 ? NO_WEIGHTS : cr->pairs + 2 * ky, NO_WEIGHTS, acc, n, step,
                 ky == 0, cr->folded);
    last_row(cr->rows[kh - 1], cr->pairs + 2 * (kh - 1), acc, cr->out, n, step, p->out_c, &r);
}

static __attribute__((noinline)) void row_any(const trt_conv_params *p, const channel_row *cr) {
    row_of_channel(p, cr, p->kernel_h, pairs_per_row(p), p->dilation_w != 1, p->small_accumulators);
}

static void output_row(const trt_conv_params *p, const int16_t *const *rows, int8_t *out, int32_t *acc) {
    const int32_t ppr = pairs_per_row(p), qw = q_width(p);
    const int narrow = ppr == 2 && p->dilation_w == 1 && p->small_accumulators;
    const uint32_t *pairs = (const uint32_t *)(const void *)p->packed_weights;
    channel_row cr;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const int32_t ic = oc / p->depth_multiplier;
        for (int32_t ky = 0; ky < p->kernel_h; ky++) cr.rows[ky] = rows[ky] + (size_t)ic * qw;
        cr.pairs = pairs + (size_t)oc * p->kernel_h * ppr;
        cr.folded = p->folded_bias[oc];
        cr.multiplier = p->multipliers[oc];
        cr.shift = p->shifts[oc];
        /* a shift > 0 takes the general form (small_accumulators is 0 then) */
        cr.requant = trt_dsp_requant_of(cr.multiplier, cr.shift > 0 ? 0 : cr.shift);
        cr.out = out + oc;
        if (narrow && narrow_requant_fits(cr.shift)) row_narrow(p, &cr, acc);
        else row_any(p, &cr);
    }
}

void trt_depthwise_channels_dsp(const trt_conv_params *p, void *temp) {
    const int16_t *rows[TRT_MAX_DEPTHWISE_TAPS];
    rows_state st;
    st.ring = temp;
    st.pad_row = (int16_t *)temp + (size_t)span(p) * (q_row_bytes(p) / sizeof(int16_t));
    int32_t *acc = (int32_t *)(void *)(st.pad_row + (size_t)p->in_c * q_width(p));
    fill16(st.pad_row, p->in_c * q_width(p), (int16_t)-p->input_offset);
    for (int32_t b = 0; b < p->batches; b++) {
        st.image = p->input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (int32_t i = 0; i < MAX_SPAN; i++) st.held[i] = -1;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++, out += (size_t)p->out_w * p->out_c) {
            input_rows(p, &st, oy, rows);
            output_row(p, rows, out, acc);
        }
    }
}

#endif
