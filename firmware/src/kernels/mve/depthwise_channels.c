/*
 * cortex_m::quantized_depthwise_conv2d.out with Helium for any channel count, depth multiplier,
 * stride, dilation and padding -- NHWC int8, 1HWO weights.
 *
 * Arithmetic (operators.quantized_depthwise_conv2d_impl, arith.h):
 *   acc[oc] = bias[oc] + sum over the window of (x[.., oc / depth_multiplier] + input_offset) * w[ky, kx, oc]
 *           = sum(x * w) + folded_bias[oc],  folded_bias = bias + input_offset * sum(w)   (int32, wraps)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * Padding: the input rows one row of output pixels reads are copied with their left and right
 * padding into a ring of rows (each input row once), rows above and below the image read a row
 * of pad bytes; pad bytes hold -input_offset (mve_padding.h), so every window is whole and
 * folded_bias (prepared at load) is exact for every pixel. Without horizontal padding the
 * input rows are read in place.
 *
 * Eight output channels per vector in 16-bit lanes (Helium's integer multiply-accumulate takes
 * a scalar, not a vector, operand): per tap, eight inputs (VLDRB.S16; a byte gather when the
 * depth multiplier is above 1: output channel oc reads input channel oc / multiplier) times the
 * tap's eight weights with VMUL.I16. The weights are stored negated and in 16 bits (-w lies in
 * [-127, 128]), so that a product x * -w lies in [-16384, 16256] and two horizontally adjacent
 * taps' products add up without leaving int16; the sum is widened and subtracted from two int32
 * accumulators, the even and the odd lanes (VMOVLB, VMOVLT): 16 MACs in about 13 instructions.
 * Each pixel's channels are requantized four per vector with per-lane multipliers and shifts
 * arranged in that even/odd order (mve_requantize.h), and stored with byte scatters. The 16-bit
 * weights and the arranged constants are packed at the start of each call into the working
 * memory (pack_blocks), not kept per layer: the program holds no second copy of its weights. The last block of channels is tail-predicated.
 * 3x3 windows with depth multiplier 1 (MobileNet's and DS-CNN's depthwise layers) run a loop of
 * their own (block_row_3x3): the nine taps in four pairs and one, and the requantized lanes
 * narrowed back into channel order and stored as one 8-byte run.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"
#include "mve_padding.h"
#include "mve_requantize.h"

/* The most input rows one output row reads ((kernel_h - 1) * dilation_h + 1) this variant keeps. */
#define MAX_SPAN 64
#define LANES 8

static int32_t span(const trt_conv_params *p) { return (p->kernel_h - 1) * p->dilation_h + 1; }
static int32_t padded_row(const trt_conv_params *p) { return (p->in_w + 2 * p->pad_w) * p->in_c; }
static int32_t aligned_row(const trt_conv_params *p) { return (padded_row(p) + 15) & ~15; }
static int32_t blocks(const trt_conv_params *p) { return (p->out_c + LANES - 1) / LANES; }
static int32_t taps(const trt_conv_params *p) { return p->kernel_h * p->kernel_w; }

int trt_depthwise_channels_mve_accepts(const trt_conv_params *p) {
    if (span(p) > MAX_SPAN || !trt_mve_pad_value_fits(p->input_offset)) return 0;
    for (int32_t oc = 0; oc < p->out_c; oc++)
        if (!trt_mve_requant_is_vector(p->multipliers[oc], p->shifts[oc])) return 0;
    return 1;
}

/* Per block of eight channels: the even lanes' (channels 0, 2, 4, 6) and the odd lanes' folded
 * biases, multipliers and shifts, then the block's weights [tap][8] in 16 bits. */
typedef struct {
    int32_t bias[2][4], multiplier[2][4], shift[2][4];
} block_constants;

static size_t block_bytes(const trt_conv_params *p) {
    return sizeof(block_constants) + (size_t)taps(p) * LANES * sizeof(int16_t);
}

/* No workspace: the blocks are packed at the start of each call into the working memory all
 * calls share (pack_blocks), so the program keeps no copy of the weights beside its own. */
size_t trt_depthwise_channels_mve_scratch_bytes(const trt_conv_params *p) {
    (void)p;
    return 0;
}

void trt_depthwise_channels_mve_prepare(trt_conv_params *p, void *scratch) {
    (void)p;
    (void)scratch;
}

static size_t packed_bytes(const trt_conv_params *p) { return (size_t)blocks(p) * block_bytes(p); }

/* temp: the packed blocks, then the ring of padded input rows and one row of pad bytes (with
 * horizontal padding), or the pad row alone (vertical padding only) */
size_t trt_depthwise_channels_mve_temp_bytes(const trt_conv_params *p) {
    if (p->pad_w == 0 && p->pad_h == 0) return packed_bytes(p);
    return packed_bytes(p) + (size_t)(p->pad_w > 0 ? span(p) + 1 : 1) * aligned_row(p);
}

/* One block of eight channels: block_constants, then the negated 16-bit weights [tap][8], from
 * the block's first channel of the program's 1HWO weights (rows of `pitch` bytes, one per tap),
 * biases, multipliers and shifts. `left`: the channels from there (lanes past them are zero when
 * `tail`). The weight sums stay in 16 bits (at most 121 taps of 128). */
static inline __attribute__((always_inline)) void pack_block(const int8_t *src, const int32_t *bias, const int32_t *mult,
                                                            const int32_t *shift, int32_t pitch, int32_t taps_n,
                                                            int32_t input_offset, int32_t left, int32_t *out,
                                                            const int tail) {
    const uint32x4_t even_lanes = vmulq_n_u32(vidupq_n_u32(0, 1), 2), odd_lanes = vaddq_n_u32(even_lanes, 1);
    const mve_pred16_t pred = vctp16q((uint32_t)left), even = vctp32q((uint32_t)(left + 1) / 2),
                       odd = vctp32q((uint32_t)left / 2);
    int16_t *w = (int16_t *)(void *)(out + sizeof(block_constants) / sizeof(int32_t));
    int16x8_t sum = vdupq_n_s16(0);
    for (int32_t t = 0; t < taps_n; t++, src += pitch, w += LANES) {
        const int16x8_t v = tail ? vldrbq_z_s16(src, pred) : vldrbq_s16(src);
        sum = vaddq_s16(sum, v);
        vstrhq_s16(w, vnegq_s16(v));   /* negated: see the top of the file */
    }
#define GATHER(array, lanes, p) (tail ? vldrwq_gather_shifted_offset_z_s32(array, lanes, p) \
                                      : vldrwq_gather_shifted_offset_s32(array, lanes))
    int32x4_t bias_e = vdupq_n_s32(0), bias_o = bias_e;
    if (bias) {
        bias_e = GATHER(bias, even_lanes, even);
        bias_o = GATHER(bias, odd_lanes, odd);
    }
    /* block_constants in order: bias[2][4], multiplier[2][4], shift[2][4]; the sums' products wrap, as the reference */
    vstrwq_s32(out, vmlaq_n_s32(bias_e, vmovlbq_s16(sum), input_offset));
    vstrwq_s32(out + 4, vmlaq_n_s32(bias_o, vmovltq_s16(sum), input_offset));
    vstrwq_s32(out + 8, GATHER(mult, even_lanes, even));
    vstrwq_s32(out + 12, GATHER(mult, odd_lanes, odd));
    vstrwq_s32(out + 16, GATHER(shift, even_lanes, even));
    vstrwq_s32(out + 20, GATHER(shift, odd_lanes, odd));
#undef GATHER
}

/* `count` whole blocks of eight channels, then a part block of `tail` channels if any. */
static __attribute__((noinline)) void pack_run(const int8_t *weights, const int32_t *bias, const int32_t *mult,
                                               const int32_t *shift, int32_t out_c, int32_t taps_n, int32_t input_offset,
                                               int32_t *out, int32_t block_words) {
    int32_t oc = 0;
    for (; oc + LANES <= out_c; oc += LANES, out += block_words)
        pack_block(weights + oc, bias ? bias + oc : NULL, mult + oc, shift + oc, out_c, taps_n, input_offset, LANES,
                   out, 0);
    if (oc < out_c)
        pack_block(weights + oc, bias ? bias + oc : NULL, mult + oc, shift + oc, out_c, taps_n, input_offset,
                   out_c - oc, out, 1);
}

/* Every block of the layer, packed at the start of each call: about six instructions per tap
 * and block, against a copy of every depthwise layer's weights kept for the program's lifetime. */
static void pack_blocks(const trt_conv_params *p, int8_t *packed) {
    _Static_assert(sizeof(block_constants) == 24 * sizeof(int32_t), "block_constants is six vectors");
    pack_run(p->weights, p->bias, p->multipliers, p->shifts, p->out_c, taps(p), p->input_offset,
             (int32_t *)(void *)packed, (int32_t)(block_bytes(p) / sizeof(int32_t)));
}

typedef struct {
    const int8_t *image;
    int8_t *ring, *pad_row;
    int32_t held[MAX_SPAN];         /* the input row each ring slot holds, -1: none */
} rows_state;

/* Pointers to the kernel_h input rows (padded rows: their first byte is the left padding's) of
 * output row oy. */
static void input_rows(const trt_conv_params *p, rows_state *st, int32_t oy, const int8_t **rows) {
    const int32_t n = span(p), line = p->in_w * p->in_c, side = p->pad_w * p->in_c;
    const int8x16_t pad = vdupq_n_s8((int8_t)-p->input_offset);
    for (int32_t ky = 0; ky < p->kernel_h; ky++) {
        const int32_t r = oy * p->stride_h - p->pad_h + ky * p->dilation_h;
        if (r < 0 || r >= p->in_h) {
            rows[ky] = st->pad_row;
        } else if (p->pad_w == 0) {
            rows[ky] = st->image + (size_t)r * line;
        } else {
            int8_t *slot = st->ring + (size_t)(r % n) * aligned_row(p);
            if (st->held[r % n] != r) {
                trt_mve_fill(slot, side, pad);
                trt_mve_copy(slot + side, st->image + (size_t)r * line, line);
                trt_mve_fill(slot + side + line, side, pad);
                st->held[r % n] = r;
            }
            rows[ky] = slot;
        }
    }
}

/* Eight inputs of the block's channels at x, in 16-bit lanes. */
static inline __attribute__((always_inline)) int16x8_t load_x(const int8_t *x, uint16x8_t offsets, mve_pred16_t pred,
                                                             const int gather, const int tail) {
    if (gather) return tail ? vldrbq_gather_offset_z_s16(x, offsets, pred) : vldrbq_gather_offset_s16(x, offsets);
    return tail ? vldrbq_z_s16(x, pred) : vldrbq_s16(x);
}

typedef struct {
    const int8_t *const *rows;      /* kernel_h input rows */
    const block_constants *k;       /* this block's constants, then its weights */
    int8_t *out;                    /* this block's channels in the output row's first pixel */
    int32_t in_channel;             /* the block's first input channel */
    uint16x8_t offsets;             /* input channel of each lane, from in_channel */
    mve_pred16_t pred;              /* lanes of channels that exist (tail) */
    mve_pred16_t even, odd;         /* the same for the even and the odd 32-bit lanes */
} block;

/* acc_e, acc_o -= the even and odd lanes of the 16-bit sum s */
#define SUBTRACT_WIDENED(s)                                                                                    \
    do {                                                                                                       \
        acc_e = vsubq_s32(acc_e, vmovlbq_s16(s));                                                              \
        acc_o = vsubq_s32(acc_o, vmovltq_s16(s));                                                              \
    } while (0)

/* One block of eight channels along the output row; `three`: kernel_w is 3 (one pair and one
 * tap a row, unrolled). */
static inline __attribute__((always_inline)) void block_row(const trt_conv_params *p, const block *b, const int three,
                                                           const int gather, const int tail) {
    const int32_t c = p->in_c, step = p->stride_w * c, tap_step = p->dilation_w * c, kw = p->kernel_w;
    const uint32x4_t even_lanes = vmulq_n_u32(vidupq_n_u32(0, 1), 2), odd_lanes = vaddq_n_u32(even_lanes, 1);
    const block_constants *k = b->k;
    const int16_t *weights = (const int16_t *)(const void *)(k + 1);
    int8_t *out = b->out;
    for (int32_t ox = 0; ox < p->out_w; ox++, out += p->out_c) {
        int32x4_t acc_e = vldrwq_s32(k->bias[0]), acc_o = vldrwq_s32(k->bias[1]);
        const int16_t *w = weights;
        for (int32_t ky = 0; ky < p->kernel_h; ky++) {
            const int8_t *x = b->rows[ky] + (size_t)ox * step + b->in_channel;
            if (three) {
                int16x8_t s = vmulq_s16(load_x(x, b->offsets, b->pred, gather, tail), vldrhq_s16(w));
                s = vaddq_s16(s, vmulq_s16(load_x(x + tap_step, b->offsets, b->pred, gather, tail), vldrhq_s16(w + LANES)));
                SUBTRACT_WIDENED(s);
                s = vmulq_s16(load_x(x + 2 * tap_step, b->offsets, b->pred, gather, tail), vldrhq_s16(w + 2 * LANES));
                SUBTRACT_WIDENED(s);
                w += 3 * LANES;
                continue;
            }
            int32_t kx = 0;
            for (; kx + 2 <= kw; kx += 2, x += 2 * tap_step, w += 2 * LANES) {
                int16x8_t s = vmulq_s16(load_x(x, b->offsets, b->pred, gather, tail), vldrhq_s16(w));
                s = vaddq_s16(s, vmulq_s16(load_x(x + tap_step, b->offsets, b->pred, gather, tail), vldrhq_s16(w + LANES)));
                SUBTRACT_WIDENED(s);
            }
            if (kx < kw) {
                const int16x8_t s = vmulq_s16(load_x(x, b->offsets, b->pred, gather, tail), vldrhq_s16(w));
                SUBTRACT_WIDENED(s);
                w += LANES;
            }
        }
        const int32x4_t ve = trt_mve_output_per_lane(acc_e, vldrwq_s32(k->multiplier[0]), vldrwq_s32(k->shift[0]),
                                                     p->output_offset, p->activation_min, p->activation_max);
        const int32x4_t vo = trt_mve_output_per_lane(acc_o, vldrwq_s32(k->multiplier[1]), vldrwq_s32(k->shift[1]),
                                                     p->output_offset, p->activation_min, p->activation_max);
        if (tail) {
            vstrbq_scatter_offset_p_s32(out, even_lanes, ve, b->even);
            vstrbq_scatter_offset_p_s32(out, odd_lanes, vo, b->odd);
        } else {
            vstrbq_scatter_offset_s32(out, even_lanes, ve);
            vstrbq_scatter_offset_s32(out, odd_lanes, vo);
        }
    }
}

/* 3x3 windows, depth multiplier 1: one block of eight channels along the output row, the three
 * rows' pointers held in registers. The nine taps as four pairs and one single product (two
 * taps of any rows add up in int16 as well as two of one row), so five widenings instead of six.
 * Requantized as block_row does, then narrowed with saturation to 16 bits (VQMOVNB/VQMOVNT put
 * the even and the odd lanes back in channel order), the output offset added saturating, the
 * clamp taken and the eight bytes stored at once: a value saturated at +-32767 stays beyond
 * the int8 activation bounds after an offset of at most 255, so the clamp gives the same byte. */
static inline __attribute__((always_inline)) void block_row_3x3(const trt_conv_params *p, const block *b, const int tail) {
    const int32_t step = p->stride_w * p->in_c, d = p->dilation_w * p->in_c;
    const block_constants *constants = b->k;
    const int16_t *weights = (const int16_t *)(const void *)(constants + 1);
    const int8_t *x0 = b->rows[0] + b->in_channel, *x1 = b->rows[1] + b->in_channel, *x2 = b->rows[2] + b->in_channel;
    const int16x8_t lo = vdupq_n_s16((int16_t)p->activation_min), hi = vdupq_n_s16((int16_t)p->activation_max);
    const int16_t offset = (int16_t)p->output_offset;
    const mve_pred16_t pred = b->pred;
    const uint16x8_t none = vdupq_n_u16(0);
    const int32_t width = p->out_w, pitch = p->out_c;
    int8_t *out = b->out;
#define X(ptr) load_x(ptr, none, pred, 0, tail)
#define PAIR(pa, ta, pb, tb)                                                                                   \
    do {                                                                                                       \
        const int16x8_t s = vaddq_s16(vmulq_s16(X(pa), vldrhq_s16(w + (ta) * LANES)),                          \
                                      vmulq_s16(X(pb), vldrhq_s16(w + (tb) * LANES)));                         \
        SUBTRACT_WIDENED(s);                                                                                   \
        __asm__ volatile("" ::: "memory"); /* keeps the next pair's loads after this one (no spills) */        \
    } while (0)
    for (int32_t ox = 0; ox < width; ox++, x0 += step, x1 += step, x2 += step, out += pitch) {
        /* opaque each pixel, so that the compiler addresses the weights and constants with
         * immediate offsets from one register instead of keeping (and spilling) a pointer each */
        const int16_t *w = weights;
        const block_constants *k = constants;
        __asm__("" : "+r"(w), "+r"(k));
        int32x4_t acc_e = vldrwq_s32(k->bias[0]), acc_o = vldrwq_s32(k->bias[1]);
        PAIR(x0, 0, x0 + d, 1);
        PAIR(x0 + 2 * d, 2, x1, 3);
        PAIR(x1 + d, 4, x1 + 2 * d, 5);
        PAIR(x2, 6, x2 + d, 7);
        {
            const int16x8_t s = vmulq_s16(X(x2 + 2 * d), vldrhq_s16(w + 8 * LANES));
            SUBTRACT_WIDENED(s);
        }
        const int32x4_t se = vldrwq_s32(k->shift[0]), so = vldrwq_s32(k->shift[1]);
        int32x4_t ve = vqrdmulhq_s32(acc_e, vldrwq_s32(k->multiplier[0]));
        int32x4_t vo = vqrdmulhq_s32(acc_o, vldrwq_s32(k->multiplier[1]));
        ve = vrshlq_s32(vqaddq_s32(ve, vshrq_n_s32(vandq_s32(ve, se), 31)), se);
        vo = vrshlq_s32(vqaddq_s32(vo, vshrq_n_s32(vandq_s32(vo, so), 31)), so);
        int16x8_t v = vqmovntq_s32(vqmovnbq_s32(vuninitializedq_s16(), ve), vo);
        v = vminq_s16(vmaxq_s16(vqaddq_n_s16(v, offset), lo), hi);
        if (tail) vstrbq_p_s16(out, v, pred);
        else vstrbq_s16(out, v);
    }
#undef PAIR
#undef X
}

/* Every whole block of eight channels of the output row in one call (the row's own set-up is a
 * good part of the work when the row is short: DS-CNN's are 5 pixels), the last part block apart. */
static __attribute__((noinline)) void row_3x3(const trt_conv_params *p, const int8_t *packed, const int8_t *const *rows,
                                              int8_t *out) {
    block b;
    b.rows = rows;
    b.pred = vctp16q(LANES);
    for (int32_t oc = 0; oc + LANES <= p->out_c; oc += LANES) {
        b.k = (const block_constants *)(const void *)(packed + (size_t)(oc / LANES) * block_bytes(p));
        b.out = out + oc;
        b.in_channel = oc;
        block_row_3x3(p, &b, 0);
    }
}
static __attribute__((noinline)) void row_3x3_tail(const trt_conv_params *p, const block *b) { block_row_3x3(p, b, 1); }

/* Kept apart so that each loop nest has its flags as constants. */
#define ROW(name, three, gather, tail)                                                                         \
    static __attribute__((noinline)) void name(const trt_conv_params *p, const block *b) {                    \
        block_row(p, b, three, gather, tail);                                                                  \
    }
ROW(row_three, 1, 0, 0)
ROW(row_three_tail, 1, 0, 1)
ROW(row_any, 0, 0, 0)
ROW(row_any_tail, 0, 0, 1)
ROW(row_gather, 0, 1, 0)
ROW(row_gather_tail, 0, 1, 1)

static void output_row(const trt_conv_params *p, const int8_t *packed, const int8_t *const *rows, int8_t *out) {
    const int32_t m = p->depth_multiplier;
    const int gather = m > 1, three = p->kernel_w == 3, nine = !gather && three && p->kernel_h == 3;
    int32_t blk = 0;
    if (nine) {
        row_3x3(p, packed, rows, out);
        blk = p->out_c / LANES;
    }
    for (; blk < blocks(p); blk++) {
        const int32_t oc = blk * LANES, left = p->out_c - oc;
        block b;
        b.rows = rows;
        b.k = (const block_constants *)(const void *)(packed + (size_t)blk * block_bytes(p));
        b.out = out + oc;
        b.in_channel = oc / m;
        uint16_t lanes[LANES] = {0};
        if (gather)
            for (int32_t i = 0; i < LANES; i++) lanes[i] = (uint16_t)((oc + i) / m - oc / m);
        b.offsets = vld1q_u16(lanes);
        b.pred = vctp16q((uint32_t)(left < LANES ? left : LANES));
        b.even = vctp32q((uint32_t)(left < LANES ? (left + 1) / 2 : 4));
        b.odd = vctp32q((uint32_t)(left < LANES ? left / 2 : 4));
        const int tail = left < LANES;
        if (gather) tail ? row_gather_tail(p, &b) : row_gather(p, &b);
        else if (nine) row_3x3_tail(p, &b);
        else if (three) tail ? row_three_tail(p, &b) : row_three(p, &b);
        else tail ? row_any_tail(p, &b) : row_any(p, &b);
    }
}

void trt_depthwise_channels_mve(const trt_conv_params *p, void *temp) {
    const int8_t *rows[TRT_MAX_DEPTHWISE_TAPS];
    int8_t *packed = temp, *after = packed + packed_bytes(p);
    pack_blocks(p, packed);
    rows_state st;
    st.ring = after;
    st.pad_row = p->pad_w > 0 ? after + (size_t)span(p) * aligned_row(p) : after;
    if (p->pad_w > 0 || p->pad_h > 0) trt_mve_fill(st.pad_row, padded_row(p), vdupq_n_s8((int8_t)-p->input_offset));
    for (int32_t b = 0; b < p->batches; b++) {
        st.image = p->input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (int32_t i = 0; i < MAX_SPAN; i++) st.held[i] = -1;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++, out += (size_t)p->out_w * p->out_c) {
            input_rows(p, &st, oy, rows);
            output_row(p, packed, rows, out);
        }
    }
}

#endif
