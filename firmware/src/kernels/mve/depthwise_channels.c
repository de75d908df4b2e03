/*
 * cortex_m::quantized_depthwise_conv2d.out with Helium for any channel count, depth multiplier,
 * stride, dilation and padding -- NHWC int8, 1HWO weights read in place.
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
 * Four output channels per vector, in int32 lanes (a window's sum of int8 products needs more
 * than 16 bits): per tap, the weights of four channels are one VLDRB.S32, shared by four output
 * pixels of the row, each one VLDRB.S32 of its input (a byte gather when the depth multiplier
 * is above 1: output channel oc reads input channel oc / multiplier), a VMUL and a VADD
 * (Helium's integer VMLA multiplies by a scalar only): 16 MACs in 13 instructions. Then each pixel's four channels are requantized with per-lane multipliers and
 * shifts (mve_requantize.h). The last block of channels is tail-predicated.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"
#include "mve_padding.h"
#include "mve_requantize.h"

/* The most input rows one output row reads ((kernel_h - 1) * dilation_h + 1) this variant keeps. */
#define MAX_SPAN 64
#define PIXELS 4

static int32_t span(const trt_conv_params *p) { return (p->kernel_h - 1) * p->dilation_h + 1; }
static int32_t padded_row(const trt_conv_params *p) { return (p->in_w + 2 * p->pad_w) * p->in_c; }
static int32_t aligned_row(const trt_conv_params *p) { return (padded_row(p) + 15) & ~15; }

int trt_depthwise_channels_mve_accepts(const trt_conv_params *p) {
    if (span(p) > MAX_SPAN || !trt_mve_pad_value_fits(p->input_offset)) return 0;
    for (int32_t oc = 0; oc < p->out_c; oc++)
        if (!trt_mve_requant_is_vector(p->multipliers[oc], p->shifts[oc])) return 0;
    return 1;
}

/* scratch: folded bias [out_c rounded up to 4] */
size_t trt_depthwise_channels_mve_scratch_bytes(const trt_conv_params *p) {
    return (size_t)((p->out_c + 3) & ~3) * sizeof(int32_t);
}

void trt_depthwise_channels_mve_prepare(trt_conv_params *p, void *scratch) {
    const int32_t taps = p->kernel_h * p->kernel_w, channels = (p->out_c + 3) & ~3;
    int32_t *folded = scratch;
    for (int32_t oc = 0; oc < channels; oc++) {
        uint32_t sum = 0, bias = 0;
        if (oc < p->out_c) {
            for (int32_t t = 0; t < taps; t++) sum += (uint32_t)(int32_t)p->weights[(size_t)t * p->out_c + oc];
            bias = p->bias ? (uint32_t)p->bias[oc] : 0;
        }
        folded[oc] = trt_wrap32(sum * (uint32_t)p->input_offset + bias);
    }
    p->folded_bias = folded;
}

/* temp: the ring of padded input rows, then one row of pad bytes (only with horizontal padding
 * or vertical padding) */
size_t trt_depthwise_channels_mve_temp_bytes(const trt_conv_params *p) {
    if (p->pad_w == 0 && p->pad_h == 0) return 0;
    return (size_t)(p->pad_w > 0 ? span(p) + 1 : 1) * aligned_row(p);
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

/* One input vector: four bytes of channel oc's inputs, gathered (offsets) when the multiplier
 * is above 1; `tail`: only the lanes of pred. */
static inline __attribute__((always_inline)) int32x4_t load_x(const int8_t *x, uint32x4_t offsets, mve_pred16_t pred,
                                                             const int gather, const int tail) {
    if (gather) return tail ? vldrbq_gather_offset_z_s32(x, offsets, pred) : vldrbq_gather_offset_s32(x, offsets);
    return tail ? vldrbq_z_s32(x, pred) : vldrbq_s32(x);
}

typedef struct {
    const int8_t *const *rows;      /* kernel_h input rows */
    int8_t *out;                    /* output row */
    int32_t oc, in_channel;         /* first output channel of the block, its input channel */
    uint32x4_t offsets;             /* input channel of each lane, from in_channel */
    mve_pred16_t pred;
} block;

/* `count` (PIXELS or 1) output pixels from ox of one block of four channels. */
static inline __attribute__((always_inline)) void pixels(const trt_conv_params *p, const block *b, int32_t ox,
                                                        const int count, const int gather, const int tail) {
    const int32_t c = p->in_c, step = p->stride_w * c, tap_step = p->dilation_w * c;
    const int32x4_t bias = tail ? vldrwq_z_s32(p->folded_bias + b->oc, b->pred) : vldrwq_s32(p->folded_bias + b->oc);
    int32x4_t acc[PIXELS];
    for (int k = 0; k < count; k++) acc[k] = bias;
    const int8_t *w = p->weights + b->oc;
    for (int32_t ky = 0; ky < p->kernel_h; ky++) {
        const int8_t *x = b->rows[ky] + (size_t)ox * step + b->in_channel;
        for (int32_t kx = 0; kx < p->kernel_w; kx++, x += tap_step, w += p->out_c) {
            const int32x4_t wv = tail ? vldrbq_z_s32(w, b->pred) : vldrbq_s32(w);
            for (int k = 0; k < count; k++)
                acc[k] = vaddq_s32(acc[k], vmulq_s32(load_x(x + k * step, b->offsets, b->pred, gather, tail), wv));
        }
    }
    const int32x4_t mult = tail ? vldrwq_z_s32(p->multipliers + b->oc, b->pred) : vldrwq_s32(p->multipliers + b->oc);
    const int32x4_t shift = tail ? vldrwq_z_s32(p->shifts + b->oc, b->pred) : vldrwq_s32(p->shifts + b->oc);
    for (int k = 0; k < count; k++) {
        const int32x4_t v = trt_mve_output_per_lane(acc[k], mult, shift, p->output_offset, p->activation_min,
                                                    p->activation_max);
        int8_t *o = b->out + (size_t)(ox + k) * p->out_c + b->oc;
        if (tail) vstrbq_p_s32(o, v, b->pred);
        else vstrbq_s32(o, v);
    }
}

/* The row in groups of four pixels; a last partial group overlaps the one before it (its pixels
 * computed twice, stored twice with the same values); rows narrower than four pixels take one
 * group of their width. */
static inline __attribute__((always_inline)) void block_row(const trt_conv_params *p, const block *b, const int gather,
                                                           const int tail) {
    const int32_t w = p->out_w;
    if (w < PIXELS) {
        if (w == 3) pixels(p, b, 0, 3, gather, tail);
        else if (w == 2) pixels(p, b, 0, 2, gather, tail);
        else pixels(p, b, 0, 1, gather, tail);
        return;
    }
    for (int32_t ox = 0; ox < w; ox += PIXELS) pixels(p, b, ox + PIXELS <= w ? ox : w - PIXELS, PIXELS, gather, tail);
}

/* Kept apart so that each loop nest has its flags as constants. */
static __attribute__((noinline)) void row_whole(const trt_conv_params *p, const block *b) { block_row(p, b, 0, 0); }
static __attribute__((noinline)) void row_tail(const trt_conv_params *p, const block *b) { block_row(p, b, 0, 1); }
static __attribute__((noinline)) void row_gather(const trt_conv_params *p, const block *b) { block_row(p, b, 1, 0); }
static __attribute__((noinline)) void row_gather_tail(const trt_conv_params *p, const block *b) {
    block_row(p, b, 1, 1);
}

static void output_row(const trt_conv_params *p, const int8_t *const *rows, int8_t *out) {
    const int32_t m = p->depth_multiplier;
    const int gather = m > 1;
    for (int32_t oc = 0; oc < p->out_c; oc += 4) {
        block b;
        b.rows = rows;
        b.out = out;
        b.oc = oc;
        b.in_channel = oc / m;
        const uint32_t lanes[4] = {0, (uint32_t)((oc + 1) / m - oc / m), (uint32_t)((oc + 2) / m - oc / m),
                                   (uint32_t)((oc + 3) / m - oc / m)};
        b.offsets = vld1q_u32(lanes);
        b.pred = vctp32q((uint32_t)(p->out_c - oc));
        const int tail = p->out_c - oc < 4;
        if (gather) tail ? row_gather_tail(p, &b) : row_gather(p, &b);
        else tail ? row_tail(p, &b) : row_whole(p, &b);
    }
}

void trt_depthwise_channels_mve(const trt_conv_params *p, void *temp) {
    const int8_t *rows[TRT_MAX_DEPTHWISE_TAPS];
    rows_state st;
    st.ring = temp;
    st.pad_row = p->pad_w > 0 ? (int8_t *)temp + (size_t)span(p) * aligned_row(p) : temp;
    if (p->pad_w > 0 || p->pad_h > 0) trt_mve_fill(st.pad_row, padded_row(p), vdupq_n_s8((int8_t)-p->input_offset));
    for (int32_t b = 0; b < p->batches; b++) {
        st.image = p->input + (size_t)b * p->in_h * p->in_w * p->in_c;
        for (int32_t i = 0; i < MAX_SPAN; i++) st.held[i] = -1;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++, out += (size_t)p->out_w * p->out_c) {
            input_rows(p, &st, oy, rows);
            output_row(p, rows, out);
        }
    }
}

#endif
