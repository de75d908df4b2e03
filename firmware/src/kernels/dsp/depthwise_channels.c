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
 * arith.h's otherwise. On the first path the weights and folded biases are stored doubled, so
 * the accumulator is already the 2 acc that SMMULR takes (|2 acc| < 2^31; 2 w fits a halfword).
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
    if (p->small_accumulators) {   /* doubled for SMMULR (see the top of the file): one shift less per output */
        for (size_t i = 0; i < pairs_words(p); i++)
            pairs[i] = trt_pack16((pairs[i] & 0xFFFFu) << 1, (pairs[i] >> 16) << 1);
        for (int32_t oc = 0; oc < p->out_c; oc++) k[oc].folded = (int32_t)((uint32_t)k[oc].folded << 1);
    }
    p->packed_weights = (const int8_t *)pairs;
}

/* 3x3 windows with dilation_w 1 and multiplier 1 keep their input rows as halfword planes
 * instead (see row_planar). */
static int planar(const trt_conv_params *p) {
    /* rows of fewer than four output pixels run faster on the pair rows: the planes' work per
     * channel and row outweighs their shared loads there */
    return p->kernel_h == 3 && p->kernel_w == 3 && p->dilation_w == 1 && p->depth_multiplier == 1 && p->out_w >= 4;
}
static size_t plane_row_halfwords(const trt_conv_params *p) { return (size_t)p->in_c * padded_width(p); }

/* temp: the ring of pair rows, then one pair row of padding; or (planar) the ring of halfword
 * rows and two halfwords that a window's last word may read past the last plane */
size_t trt_depthwise_channels_dsp_temp_bytes(const trt_conv_params *p) {
    if (planar(p)) return ((size_t)span(p) * plane_row_halfwords(p) + 2) * sizeof(int16_t);
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
            const int32_t v = trt_smmulr(acc, k->multiplier);
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
                const int32_t v = trt_smmulr(acc, k->multiplier);
                out[oc] = (int8_t)trt_clamp((v + k->rounding + (v >> 31)) >> k->right, k->lo, k->hi);
            } else {
                out[oc] = trt_output_s8(acc, k->multiplier, -k->right, p->output_offset, k->lo, k->hi);
            }
        }
    }
}

/* ---- 3x3 windows, dilation_w 1, depth multiplier 1: halfword planes ----
 * Each input row a row of output pixels reads is converted once into one plane per channel of
 * sign-extended halfwords, H[c][col] (col in padded columns, pads -input_offset, rows above and
 * below the image all pads). Then any two horizontally adjacent taps of a channel are one word
 * load, H[c][col .. col + 1], wherever col starts (an unaligned LDR), and a window row is
 *   SMLAD(H[c][x .. x + 1], (w0, w1)) + SMLABB(H[c][x + 2 ..], (w2, 0))
 * against the weight pairs of the pair rows' layout. Channel by channel, two output pixels at a
 * time share their loads: with stride 1 the second's row is SMLAD(H[x + 1 .. x + 2], (w0, w1)) +
 * SMLATB(H[x + 2 .. x + 3], (w2, 0)): three loads and four multiplies for two pixels' row; with
 * stride 2 the first's second word is the second's first. */
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
static inline int32_t smlabb(uint32_t a, uint32_t b, int32_t acc) { return __smlabb((int32_t)a, (int32_t)b, acc); }
static inline int32_t smlatb(uint32_t a, uint32_t b, int32_t acc) { return __smlatb((int32_t)a, (int32_t)b, acc); }
#else
/* SMLABB, SMLATB: acc + a's bottom (top) halfword * b's bottom halfword, modulo 2^32 */
static inline int32_t smlabb(uint32_t a, uint32_t b, int32_t acc) {
    return trt_smlad(a & 0xFFFFu, b & 0xFFFFu, acc);
}
static inline int32_t smlatb(uint32_t a, uint32_t b, int32_t acc) { return trt_smlad(a >> 16, b & 0xFFFFu, acc); }
#endif

/* Input row `row` (NULL: above or below the image) into its planes: dst[c][pad_w + col]. The
 * pad columns were filled when the ring was. */
static void convert_planes(const trt_conv_params *p, const int8_t *row, int16_t *dst) {
    const int32_t c = p->in_c, width = padded_width(p), w = p->in_w;
    const int16_t pad = (int16_t)-p->input_offset;
    if (!row) {
        for (size_t i = 0; i < plane_row_halfwords(p); i++) dst[i] = pad;
        return;
    }
    int32_t ch = 0;
    for (; ch + 4 <= c; ch += 4) {   /* four channels per word: SXTB16 gives (c0, c2) and (c1, c3) */
        int16_t *d = dst + (size_t)ch * width + p->pad_w;
        const int8_t *x = row + ch;
        for (int32_t col = 0; col < w; col++, x += c, d++) {
            const uint32_t v = trt_read32(x), even = trt_sxtb16(v), odd = trt_sxtb16_ror8(v);
            d[0] = (int16_t)even;
            d[width] = (int16_t)odd;
            d[2 * width] = (int16_t)(even >> 16);
            d[3 * width] = (int16_t)(odd >> 16);
        }
    }
    for (; ch < c; ch++) {
        int16_t *d = dst + (size_t)ch * width + p->pad_w;
        const int8_t *x = row + ch;
        for (int32_t col = 0; col < w; col++, x += c) d[col] = *x;
    }
}

/* The requantized output of one channel: the short requantization (the output offset in its
 * rounding term) and a clamp (an SSAT alone when the bounds are int8's), or arith.h's. */
static inline int32_t planar_output(const trt_conv_params *p, int32_t acc, const channel_constants *k, const int fast,
                                    const int whole) {
    if (!fast) return trt_output_s8(acc, k->multiplier, -k->right, p->output_offset, k->lo, k->hi);
    const int32_t v = trt_smmulr(acc, k->multiplier);
    const int32_t y = (v + k->rounding + (v >> 31)) >> k->right;
    return whole ? trt_ssat8(y) : trt_clamp(y, k->lo, k->hi);
}

/* A window row of four, two or one output pixels into acc0 .. acc3 (h: the row's first tap,
 * wq: the channel's weight pairs, off: the row's pair in bytes). On the core they are written out
 * (the compiler otherwise reloads the weights before every multiply and spills), with the same
 * arithmetic in C elsewhere:
 *   ROW4_S1  stride 1, four pixels: the row's two weight words, five loads, eight multiplies
 *   ROW2_S1  stride 1, two pixels: (x0, x1), (x1, x2), (x2, x3): three loads, four multiplies
 *   ROW2_S2  stride 2, two pixels: (x0, x1), (x2, x3), (x4, x5): three loads, four multiplies
 *   ROW1     one pixel: two loads, two multiplies
 * The ROW4 and ROW2 forms step h on past their pixels. */
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#define PLANAR_ASM(code, h, wq)                                                                                \
    do {                                                                                                       \
        uint32_t wa, wb, t;                                                                                    \
        __asm__(code                                                                                           \
                : [a0] "+r"(acc0), [a1] "+r"(acc1), [a2] "+r"(acc2), [a3] "+r"(acc3), [hp] "+r"(h),           \
                  [wa] "=&r"(wa), [wb] "=&r"(wb), [t] "=&r"(t)                                                 \
                : [wp] "r"(wq), "m"(*(const uint32_t(*)[6])(wq)), "m"(*(const int16_t(*)[10])(h)));      \
    } while (0)
#define ROW4_S1(h, wq, off)                                                                                    \
    PLANAR_ASM("ldrd %[wa], %[wb], [%[wp], #" #off "]\n\t"                                                    \
               "ldr %[t], [%[hp]]\n\tsmlad %[a0], %[t], %[wa], %[a0]\n\t"                                     \
               "ldr %[t], [%[hp], #2]\n\tsmlad %[a1], %[t], %[wa], %[a1]\n\t"                                 \
               "ldr %[t], [%[hp], #4]\n\tsmlabb %[a0], %[t], %[wb], %[a0]\n\t"                                \
               "smlatb %[a1], %[t], %[wb], %[a1]\n\tsmlad %[a2], %[t], %[wa], %[a2]\n\t"                      \
               "ldr %[t], [%[hp], #6]\n\tsmlad %[a3], %[t], %[wa], %[a3]\n\t"                                 \
               "ldr %[t], [%[hp], #8]!\n\tsmlabb %[a2], %[t], %[wb], %[a2]\n\t"                               \
               "smlatb %[a3], %[t], %[wb], %[a3]", h, wq)
#define ROW2_S1(h, wq, off)                                                                                    \
    PLANAR_ASM("ldrd %[wa], %[wb], [%[wp], #" #off "]\n\t"                                                    \
               "ldr %[t], [%[hp]], #4\n\tsmlad %[a0], %[t], %[wa], %[a0]\n\t"                                 \
               "ldr %[t], [%[hp], #-2]\n\tsmlad %[a1], %[t], %[wa], %[a1]\n\t"                                \
               "ldr %[t], [%[hp]]\n\tsmlabb %[a0], %[t], %[wb], %[a0]\n\t"                                    \
               "smlatb %[a1], %[t], %[wb], %[a1]", h, wq)
#define ROW2_S2(h, wq, off)                                                                                    \
    PLANAR_ASM("ldrd %[wa], %[wb], [%[wp], #" #off "]\n\t"                                                    \
               "ldr %[t], [%[hp]], #8\n\tsmlad %[a0], %[t], %[wa], %[a0]\n\t"                                 \
               "ldr %[t], [%[hp], #-4]\n\tsmlabb %[a0], %[t], %[wb], %[a0]\n\t"                               \
               "smlad %[a1], %[t], %[wa], %[a1]\n\t"                                                          \
               "ldr %[t], [%[hp]]\n\tsmlabb %[a1], %[t], %[wb], %[a1]", h, wq)
#define ROW1(h, wq, off)                                                                                       \
    PLANAR_ASM("ldrd %[wa], %[wb], [%[wp], #" #off "]\n\t"                                                    \
               "ldr %[t], [%[hp]]\n\tsmlad %[a0], %[t], %[wa], %[a0]\n\t"                                     \
               "ldr %[t], [%[hp], #4]\n\tsmlabb %[a0], %[t], %[wb], %[a0]", h, wq)
#else
#define ROW4_S1(h, wq, off)                                                                                    \
    do {                                                                                                       \
        const uint32_t wa = (wq)[(off) / 4], wb = (wq)[(off) / 4 + 1];                                         \
        const uint32_t x23 = trt_read32((h) + 2), x45 = trt_read32((h) + 4);                                   \
        acc0 = smlabb(x23, wb, trt_smlad(trt_read32(h), wa, acc0));                                            \
        acc1 = smlatb(x23, wb, trt_smlad(trt_read32((h) + 1), wa, acc1));                                      \
        acc2 = smlabb(x45, wb, trt_smlad(x23, wa, acc2));                                                      \
        acc3 = smlatb(x45, wb, trt_smlad(trt_read32((h) + 3), wa, acc3));                                      \
        (h) += 4;                                                                                              \
    } while (0)
#define ROW2_S1(h, wq, off)                                                                                    \
    do {                                                                                                       \
        const uint32_t wa = (wq)[(off) / 4], wb = (wq)[(off) / 4 + 1], x2 = trt_read32((h) + 2);               \
        acc0 = smlabb(x2, wb, trt_smlad(trt_read32(h), wa, acc0));                                             \
        acc1 = smlatb(x2, wb, trt_smlad(trt_read32((h) + 1), wa, acc1));                                       \
        (h) += 2;                                                                                              \
    } while (0)
#define ROW2_S2(h, wq, off)                                                                                    \
    do {                                                                                                       \
        const uint32_t wa = (wq)[(off) / 4], wb = (wq)[(off) / 4 + 1], x2 = trt_read32((h) + 2);               \
        acc0 = smlabb(x2, wb, trt_smlad(trt_read32(h), wa, acc0));                                             \
        acc1 = smlabb(trt_read32((h) + 4), wb, trt_smlad(x2, wa, acc1));                                       \
        (h) += 4;                                                                                              \
    } while (0)
#define ROW1(h, wq, off)                                                                                       \
    (acc0 = smlabb(trt_read32((h) + 2), (wq)[(off) / 4 + 1], trt_smlad(trt_read32(h), (wq)[(off) / 4], acc0)))
#endif

/* The same in C for any stride (s), two pixels and one. */
#define ROW2_ANY(h, wq, off)                                                                                   \
    do {                                                                                                       \
        const uint32_t wa = (wq)[(off) / 4], wb = (wq)[(off) / 4 + 1];                                         \
        acc0 = smlabb(trt_read32((h) + 2), wb, trt_smlad(trt_read32(h), wa, acc0));                            \
        acc1 = smlabb(trt_read32((h) + s + 2), wb, trt_smlad(trt_read32((h) + s), wa, acc1));                  \
        (h) += 2 * s;                                                                                          \
    } while (0)

/* Output pixels ox .. ox + n - 1 of one channel, n <= 4: all requantized before any store (a byte
 * store could alias the constants, which would then be loaded again for each output). */
#define STORE(n)                                                                                               \
    do {                                                                                                       \
        const int32_t y0 = planar_output(p, acc0, k, fast, whole);                                             \
        const int32_t y1 = (n) > 1 ? planar_output(p, acc1, k, fast, whole) : 0;                               \
        const int32_t y2 = (n) > 2 ? planar_output(p, acc2, k, fast, whole) : 0;                               \
        const int32_t y3 = (n) > 3 ? planar_output(p, acc3, k, fast, whole) : 0;                               \
        o[0] = (int8_t)y0;                                                                                     \
        if ((n) > 1) o[c] = (int8_t)y1;                                                                        \
        if ((n) > 2) o[2 * c] = (int8_t)y2;                                                                    \
        if ((n) > 3) o[3 * c] = (int8_t)y3;                                                                    \
        o += (n) * c;                                                                                          \
    } while (0)

/* A row of output pixels, channel by channel: four pixels at a time (stride 1), then two, then
 * one. */
static inline __attribute__((always_inline)) void row_planar(const trt_conv_params *p, const int16_t *const *rows,
                                                            int8_t *out, const int stride, const int fast,
                                                            const int whole) {
    const int32_t c = p->in_c, width = padded_width(p), s = p->stride_w, ow = p->out_w;
    const uint32_t *w = pairs_of(p);
    const channel_constants *k = constants_of(p);
    for (int32_t ch = 0; ch < c; ch++, w += 6, k++) {
        const int16_t *h0 = rows[0] + (size_t)ch * width, *h1 = rows[1] + (size_t)ch * width;
        const int16_t *h2 = rows[2] + (size_t)ch * width;
        int8_t *o = out + ch;
        int32_t ox = 0;
        int32_t acc0, acc1, acc2, acc3;
        for (; stride == 1 && ox + 4 <= ow; ox += 4) {
            acc0 = acc1 = acc2 = acc3 = k->folded;
            ROW4_S1(h0, w, 0);
            ROW4_S1(h1, w, 8);
            ROW4_S1(h2, w, 16);
            STORE(4);
        }
        for (; ox + 2 <= ow; ox += 2) {
            acc0 = acc1 = k->folded;
            acc2 = acc3 = 0;
            if (stride == 1) {
                ROW2_S1(h0, w, 0);
                ROW2_S1(h1, w, 8);
                ROW2_S1(h2, w, 16);
            } else if (stride == 2) {
                ROW2_S2(h0, w, 0);
                ROW2_S2(h1, w, 8);
                ROW2_S2(h2, w, 16);
            } else {
                ROW2_ANY(h0, w, 0);
                ROW2_ANY(h1, w, 8);
                ROW2_ANY(h2, w, 16);
            }
            STORE(2);
        }
        if (ox < ow) {   /* the last pixel of an odd row */
            acc0 = k->folded;
            acc1 = acc2 = acc3 = 0;
            ROW1(h0, w, 0);
            ROW1(h1, w, 8);
            ROW1(h2, w, 16);
            STORE(1);
        }
        (void)acc2;
        (void)acc3;
    }
}
#undef PLANAR_ASM
#undef ROW4_S1
#undef ROW2_S1
#undef ROW2_S2
#undef ROW1
#undef ROW2_ANY
#undef STORE

/* Kept apart so that each loop nest has its stride and requantization as constants. */
#define PLANAR(name, stride, fast, whole)                                                                      \
    static __attribute__((noinline)) void name(const trt_conv_params *p, const int16_t *const *rows, int8_t *out) { \
        row_planar(p, rows, out, stride, fast, whole);                                                         \
    }
PLANAR(planar_1, 1, 1, 0)
PLANAR(planar_1_whole, 1, 1, 1)
PLANAR(planar_2, 2, 1, 0)
PLANAR(planar_2_whole, 2, 1, 1)
PLANAR(planar_any, 0, 1, 0)
PLANAR(planar_exact, 0, 0, 0)

static void depthwise_planar(const trt_conv_params *p, void *temp) {
    const int32_t n = span(p);
    const size_t plane = plane_row_halfwords(p);
    int16_t *ring = temp;
    int32_t held[MAX_SPAN];
    const int16_t pad = (int16_t)-p->input_offset;
    const int whole = p->activation_min == -128 && p->activation_max == 127;   /* the clamp is an SSAT */
    for (size_t i = 0; i < (size_t)n * plane + 2; i++) ring[i] = pad;   /* the pad columns, once */
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (int32_t i = 0; i < n; i++) held[i] = INT32_MIN;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++, out += (size_t)p->out_w * p->out_c) {
            const int16_t *rows[3];
            for (int32_t ky = 0; ky < 3; ky++) {
                const int32_t r = oy * p->stride_h - p->pad_h + ky * p->dilation_h, slot = ((r % n) + n) % n;
                int16_t *dst = ring + (size_t)slot * plane;
                if (held[slot] != r) {
                    convert_planes(p, r >= 0 && r < p->in_h ? image + (size_t)r * p->in_w * p->in_c : NULL, dst);
                    held[slot] = r;
                }
                rows[ky] = dst;
            }
            if (!p->small_accumulators) planar_exact(p, rows, out);
            else if (p->stride_w == 1) whole ? planar_1_whole(p, rows, out) : planar_1(p, rows, out);
            else if (p->stride_w == 2) whole ? planar_2_whole(p, rows, out) : planar_2(p, rows, out);
            else planar_any(p, rows, out);
        }
    }
}

void trt_depthwise_channels_dsp(const trt_conv_params *p, void *temp) {
    if (planar(p)) {
        depthwise_planar(p, temp);
        return;
    }
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
