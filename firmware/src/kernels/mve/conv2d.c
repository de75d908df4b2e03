/*
 * cortex_m::quantized_conv2d.out with Helium -- NHWC int8 convolution, OHWI weights read in
 * place, per-channel requantization.
 *
 * Arithmetic (operators.quantized_conv2d_impl, arith.h):
 *   acc[oc] = bias[oc] + sum over the window of (x + input_offset) * w     (int32, wraps)
 *           = sum(x * w) + folded_bias[oc],  folded_bias = bias + input_offset * sum(w)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * The image is first copied with its padding (mve_padding.h: pad bytes contribute zero), so
 * every window is whole and folded_bias (prepared at load) is exact for every pixel.
 *
 * Three output pixels at a time: their windows are copied (kernel_h runs of kernel_w * in_c
 * bytes each) so that each is as contiguous as an output channel's weights. Hot loop, two
 * output channels at a time: per 16 bytes, two weight vectors and three window vectors feed
 * six VMLADAVA (96 MACs in 12 instructions with the loop end); a remainder shorter than 16 is
 * one step with the weights' extra lanes zeroed. Then each pixel's channels are requantized
 * four at a time (per-lane multipliers and shifts), so the variant takes layers whose
 * requantization is all on the vector path (mve_requantize.h). Groups and dilation run on
 * another variant.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"
#include "mve_load.h"
#include "mve_padding.h"
#include "mve_requantize.h"

#define PIXELS 3

static int32_t window_len(const trt_conv_params *p) { return p->kernel_h * p->kernel_w * p->in_c; }
static int has_padding(const trt_conv_params *p) { return p->pad_h > 0 || p->pad_w > 0; }

int trt_conv2d_mve_accepts(const trt_conv_params *p) {
    if (p->groups != 1 || p->dilation_h != 1 || p->dilation_w != 1 || !trt_mve_pad_value_fits(p->input_offset))
        return 0;
    for (int32_t oc = 0; oc < p->out_c; oc++)
        if (!trt_mve_requant_is_vector(p->multipliers[oc], p->shifts[oc])) return 0;
    return 1;
}

size_t trt_conv2d_mve_scratch_bytes(const trt_conv_params *p) { return (size_t)p->out_c * sizeof(int32_t); }

void trt_conv2d_mve_prepare(trt_conv_params *p, void *scratch) {
    const int32_t window = window_len(p);
    int32_t *folded = scratch;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const int8_t *w = p->weights + (size_t)oc * window;
        uint32_t sum = 0;
        for (int32_t i = 0; i < window; i++) sum += (uint32_t)(int32_t)w[i];
        folded[oc] = trt_wrap32(sum * (uint32_t)p->input_offset + (uint32_t)(p->bias ? p->bias[oc] : 0));
    }
    p->folded_bias = folded;
}

static size_t padded_bytes(const trt_conv_params *p) {
    if (!has_padding(p)) return 0;
    size_t bytes = (size_t)(p->in_h + 2 * p->pad_h) * (size_t)(p->in_w + 2 * p->pad_w) * (size_t)p->in_c;
    return (bytes + 15) & ~(size_t)15;
}

/* Each window's copy starts on 16 bytes, so the hot loop reads it as words (mve_load.h). */
static int32_t column_stride(const trt_conv_params *p) { return (window_len(p) + 15) & ~15; }
static size_t columns_bytes(const trt_conv_params *p) { return (size_t)PIXELS * column_stride(p); }

/* temp: [padded image][three windows][dot products: out_c (rounded up to even) x 3 int32] */
size_t trt_conv2d_mve_temp_bytes(const trt_conv_params *p) {
    return padded_bytes(p) + columns_bytes(p) + (size_t)((p->out_c + 1) & ~1) * PIXELS * sizeof(int32_t);
}

/* n bytes from src to dst (a window row into its column); as words when both are aligned. */
static void copy_run(int8_t *dst, const int8_t *src, int32_t n) {
    if (trt_mve_word_aligned(dst) && trt_mve_word_aligned(src)) {
        for (; n >= 16; n -= 16, src += 16, dst += 16) trt_mve_store_words(dst, trt_mve_load_words(src));
    } else {
        for (; n >= 16; n -= 16, src += 16, dst += 16) vstrbq_s8(dst, vldrbq_s8(src));
    }
    if (n > 0) {
        const mve_pred16_t p = vctp8q((uint32_t)n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
    }
}

/*
 * acc[3 oc + k] = dot product of window k (k < 3; `len` bytes each, `stride` bytes apart
 * from `columns`, 16-byte aligned) with output channel oc's weights (OHWI: `len` bytes each
 * from w), for every channel (an odd last channel is paired with itself; acc has room for
 * it). `words`: the weights may be read as words too (w and len word-aligned).
 */
static inline __attribute__((always_inline)) void block_dots(const int8_t *columns, int32_t len, int32_t stride,
                                                            const int8_t *w, int32_t channels, int32_t *acc,
                                                            const int words) {
    const int32_t chunks = len >> 4, tail = len & 15;
    for (int32_t oc = 0; oc < channels; oc += 2, acc += 6) {
        const int8_t *x0 = columns, *x1 = x0 + stride, *x2 = x1 + stride;
        const int8_t *wa = w, *wb = oc + 1 < channels ? w + len : w;
        w += 2 * (size_t)len;
        int32_t a0 = 0, a1 = 0, a2 = 0, b0 = 0, b1 = 0, b2 = 0;
        for (int32_t k = chunks; k > 0; k--) {
            const int8x16_t va = words ? trt_mve_load_words(wa) : vldrbq_s8(wa);
            wa += 16;
            const int8x16_t vb = words ? trt_mve_load_words(wb) : vldrbq_s8(wb);
            wb += 16;
            int8x16_t xv = trt_mve_load_words(x0);
            x0 += 16;
            a0 = vmladavaq_s8(a0, xv, va);
            b0 = vmladavaq_s8(b0, xv, vb);
            xv = trt_mve_load_words(x1);
            x1 += 16;
            a1 = vmladavaq_s8(a1, xv, va);
            b1 = vmladavaq_s8(b1, xv, vb);
            xv = trt_mve_load_words(x2);
            x2 += 16;
            a2 = vmladavaq_s8(a2, xv, va);
            b2 = vmladavaq_s8(b2, xv, vb);
        }
        if (tail) {   /* the window's last bytes; the weights' zeroed lanes mask the rest */
            const mve_pred16_t lanes = vctp8q((uint32_t)tail);
            const int8x16_t va = vldrbq_z_s8(wa, lanes), vb = vldrbq_z_s8(wb, lanes);
            int8x16_t xv = trt_mve_load_words(x0);
            a0 = vmladavaq_s8(a0, xv, va);
            b0 = vmladavaq_s8(b0, xv, vb);
            xv = trt_mve_load_words(x1);
            a1 = vmladavaq_s8(a1, xv, va);
            b1 = vmladavaq_s8(b1, xv, vb);
            xv = trt_mve_load_words(x2);
            a2 = vmladavaq_s8(a2, xv, va);
            b2 = vmladavaq_s8(b2, xv, vb);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = b0;
        acc[4] = b1;
        acc[5] = b2;
    }
}

/* Kept out of line so that the hot loop's live values (five pointers, six accumulators, the
 * loop count) stay in registers. */
static __attribute__((noinline)) void block_dots_word_weights(const int8_t *columns, int32_t len, int32_t stride,
                                                             const int8_t *w, int32_t channels, int32_t *acc) {
    block_dots(columns, len, stride, w, channels, acc, 1);
}

static __attribute__((noinline)) void block_dots_byte_weights(const int8_t *columns, int32_t len, int32_t stride,
                                                             const int8_t *w, int32_t channels, int32_t *acc) {
    block_dots(columns, len, stride, w, channels, acc, 0);
}

/* Pixel k's out_c results (acc[3 oc + k]): four channels per step, per-lane requantization. */
static void finish_pixel(const trt_conv_params *p, const int32_t *acc, int8_t *out) {
    const uint32x4_t every_third = vmulq_n_u32(vidupq_n_u32(0, 1), PIXELS);
    const int32_t *folded = p->folded_bias, *mult = p->multipliers, *shift = p->shifts;
    const int32_t out_c = p->out_c, offset = p->output_offset, lo = p->activation_min, hi = p->activation_max;
    for (int32_t oc = 0; oc < out_c; oc += 4, acc += 4 * PIXELS) {
        const mve_pred16_t pred = vctp32q((uint32_t)(out_c - oc));
        int32x4_t v = vldrwq_gather_shifted_offset_z_s32(acc, every_third, pred);
        v = vaddq_s32(v, vldrwq_z_s32(folded + oc, pred));
        v = trt_mve_output_per_lane(v, vldrwq_z_s32(mult + oc, pred), vldrwq_z_s32(shift + oc, pred), offset, lo, hi);
        vstrbq_p_s32(out + oc, v, pred);
    }
}

typedef struct {
    const int8_t *image;       /* padded (or unpadded when there is no padding) */
    int32_t pitch;             /* bytes from one image row to the next */
    int8_t *columns;           /* three windows, one after the other */
    int32_t *acc;              /* [out_c][PIXELS] dot products of one block */
} workspace;

/* Output pixels first .. first + count - 1 (row-major indices, count <= 3) */
static void conv_block(const trt_conv_params *p, const workspace *ws, int32_t first, int32_t count, int8_t *out) {
    const int32_t row_len = p->kernel_w * p->in_c, window = window_len(p), stride = column_stride(p);
    for (int32_t k = 0; k < PIXELS; k++) {
        const int32_t pixel = first + (k < count ? k : 0);   /* a short block repeats its first pixel */
        const int32_t oy = pixel / p->out_w, ox = pixel % p->out_w;
        const int8_t *x = ws->image + (size_t)oy * p->stride_h * ws->pitch + (size_t)ox * p->stride_w * p->in_c;
        int8_t *column = ws->columns + (size_t)k * stride;
        for (int32_t ky = 0; ky < p->kernel_h; ky++) copy_run(column + ky * row_len, x + (size_t)ky * ws->pitch, row_len);
    }
    if (trt_mve_word_aligned(p->weights) && window % 4 == 0)
        block_dots_word_weights(ws->columns, window, stride, p->weights, p->out_c, ws->acc);
    else
        block_dots_byte_weights(ws->columns, window, stride, p->weights, p->out_c, ws->acc);
    for (int32_t k = 0; k < count; k++) finish_pixel(p, ws->acc + k, out + (size_t)k * p->out_c);
}

void trt_conv2d_mve(const trt_conv_params *p, void *temp) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->in_c;
    const int32_t pixels = p->out_h * p->out_w;
    int8_t *padded = temp;
    workspace ws = {NULL, (p->in_w + 2 * p->pad_w) * p->in_c, padded + padded_bytes(p),
                    (int32_t *)(void *)(padded + padded_bytes(p) + columns_bytes(p))};
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * in_image;
        if (has_padding(p)) {
            trt_mve_pad_image(image, padded, p->in_h, p->in_w, p->in_c, p->pad_h, p->pad_w, p->input_offset);
            image = padded;
        }
        ws.image = image;
        int8_t *out = p->output + (size_t)b * pixels * p->out_c;
        /* three pixels at a time in row-major order (a block may span two rows) */
        for (int32_t i = 0; i < pixels; i += PIXELS) {
            const int32_t count = pixels - i < PIXELS ? pixels - i : PIXELS;
            conv_block(p, &ws, i, count, out + (size_t)i * p->out_c);
        }
    }
}

#endif
