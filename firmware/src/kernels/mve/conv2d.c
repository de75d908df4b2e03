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
 * Four output pixels at a time: their windows are copied (kernel_h runs of kernel_w * in_c
 * bytes each) into one buffer, interleaved by 16-byte chunk, so that each window is as
 * contiguous as an output channel's weights. Hot loop, per output channel: per 16 bytes, one
 * weight vector and four window vectors feed four VMLADAVA (64 MACs); a remainder shorter
 * than 16 is one step with the weights' extra lanes zeroed. Then the four results of each
 * channel are requantized as one vector. Groups and dilation run on another variant.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"
#include "mve_padding.h"
#include "mve_requantize.h"

#define PIXELS 4

int trt_conv2d_mve_accepts(const trt_conv_params *p) {
    return p->groups == 1 && p->dilation_h == 1 && p->dilation_w == 1 && trt_mve_pad_value_fits(p->input_offset);
}

size_t trt_conv2d_mve_scratch_bytes(const trt_conv_params *p) { return (size_t)p->out_c * sizeof(int32_t); }

void trt_conv2d_mve_prepare(trt_conv_params *p, void *scratch) {
    const int32_t window = p->kernel_h * p->kernel_w * p->in_c;
    int32_t *folded = scratch;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const int8_t *w = p->weights + (size_t)oc * window;
        uint32_t sum = 0;
        for (int32_t i = 0; i < window; i++) sum += (uint32_t)(int32_t)w[i];
        folded[oc] = trt_wrap32(sum * (uint32_t)p->input_offset + (uint32_t)(p->bias ? p->bias[oc] : 0));
    }
    p->folded_bias = folded;
}

static int has_padding(const trt_conv_params *p) { return p->pad_h > 0 || p->pad_w > 0; }

static size_t padded_bytes(const trt_conv_params *p) {
    if (!has_padding(p)) return 0;
    size_t bytes = (size_t)(p->in_h + 2 * p->pad_h) * (size_t)(p->in_w + 2 * p->pad_w) * (size_t)p->in_c;
    return (bytes + 15) & ~(size_t)15;
}

static size_t columns_bytes(const trt_conv_params *p) {
    return (size_t)((p->kernel_h * p->kernel_w * p->in_c + 15) >> 4) * 16 * PIXELS;
}

/* temp: [padded image][four interleaved windows][dot products: out_c x 4 int32] */
size_t trt_conv2d_mve_temp_bytes(const trt_conv_params *p) {
    return padded_bytes(p) + columns_bytes(p) + (size_t)p->out_c * PIXELS * sizeof(int32_t);
}

/*
 * The four windows of a block, interleaved by 16-byte chunk: chunk c of pixel k's window
 * (window bytes 16c .. 16c + 15, in the weights' OHWI order) sits at 64 c + 16 k. One
 * pointer then reaches all four with small immediate offsets.
 */
static inline int8_t *chunk_slot(int8_t *columns, int32_t pixel, int32_t pos) {
    return columns + (size_t)(pos >> 4) * 64 + pixel * 16 + (pos & 15);
}

/* n bytes from src to window positions [pos, pos + n) of `pixel`. */
static void put_run(int8_t *columns, int32_t pixel, int32_t pos, const int8_t *src, int32_t n) {
    if ((pos & 15) == 0) {   /* the common case: runs that start on a chunk */
        for (; n >= 16; n -= 16, pos += 16, src += 16) vstrbq_s8(chunk_slot(columns, pixel, pos), vldrbq_s8(src));
    }
    while (n > 0) {
        const int32_t piece = 16 - (pos & 15) < n ? 16 - (pos & 15) : n;
        const mve_pred16_t p = vctp8q((uint32_t)piece);
        vstrbq_p_s8(chunk_slot(columns, pixel, pos), vldrbq_z_s8(src, p), p);
        pos += piece;
        src += piece;
        n -= piece;
    }
}

/*
 * acc[oc][k] = dot product of pixel k's window with output channel oc's weights, for
 * `channels` channels whose weights follow each other from w (OHWI: each `len` bytes).
 * Kept out of line so that the hot loop's few live values (two pointers, four accumulators)
 * stay in registers: per 64 MACs, 5 loads, 4 VMLADAVA and the loop end.
 */
static __attribute__((noinline)) void block_dots(const int8_t *columns, int32_t len, const int8_t *w,
                                                int32_t channels, int32_t *acc) {
    const int32_t chunks = len >> 4, tail = len & 15;
    for (int32_t oc = 0; oc < channels; oc++, acc += 4) {
        const int8_t *x = columns;
        int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        for (int32_t k = chunks; k > 0; k--) {
            const int8x16_t wv = vldrbq_s8(w);
            w += 16;
            a0 = vmladavaq_s8(a0, vldrbq_s8(x), wv);
            a1 = vmladavaq_s8(a1, vldrbq_s8(x + 16), wv);
            a2 = vmladavaq_s8(a2, vldrbq_s8(x + 32), wv);
            a3 = vmladavaq_s8(a3, vldrbq_s8(x + 48), wv);
            x += 64;
        }
        if (tail) {   /* the window's last bytes; the weights' zeroed lanes mask the rest */
            const int8x16_t wv = vldrbq_z_s8(w, vctp8q((uint32_t)tail));
            w += tail;
            a0 = vmladavaq_s8(a0, vldrbq_s8(x), wv);
            a1 = vmladavaq_s8(a1, vldrbq_s8(x + 16), wv);
            a2 = vmladavaq_s8(a2, vldrbq_s8(x + 32), wv);
            a3 = vmladavaq_s8(a3, vldrbq_s8(x + 48), wv);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = a3;
    }
}

typedef struct {
    const int8_t *image;       /* padded (or unpadded when there is no padding) */
    int32_t pitch;             /* bytes from one image row to the next */
    int8_t *columns;           /* four windows, interleaved (chunk_slot) */
    int32_t *acc;              /* [out_c][4] dot products of one block */
} source;

/* Output pixels first[0..3] (image pixel indices, row-major), every channel; `count` of them
 * are stored (the others repeat first[0]). */
static void conv_pixels(const trt_conv_params *p, const source *src, const int32_t first[PIXELS], int32_t count,
                        int8_t *out) {
    const int32_t row_len = p->kernel_w * p->in_c, window = p->kernel_h * row_len;
    for (int32_t k = 0; k < PIXELS; k++) {
        const int32_t oy = first[k] / p->out_w, ox = first[k] % p->out_w;
        const int8_t *x = src->image + (size_t)oy * p->stride_h * src->pitch + (size_t)ox * p->stride_w * p->in_c;
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            put_run(src->columns, k, ky * row_len, x + (size_t)ky * src->pitch, row_len);
    }
    block_dots(src->columns, window, p->weights, p->out_c, src->acc);
    const uint32x4_t lanes = vldrwq_u32((const uint32_t *)first);
    const uint32x4_t offsets = vmulq_n_u32(vsubq_n_u32(lanes, (uint32_t)first[0]), (uint32_t)p->out_c);
    const mve_pred16_t store = vctp32q((uint32_t)count);
    const int32_t *acc = src->acc;
    for (int32_t oc = 0; oc < p->out_c; oc++, acc += 4) {
        int32x4_t v = vaddq_n_s32(vld1q_s32(acc), p->folded_bias[oc]);
        v = trt_mve_output_s32(v, p->multipliers[oc], p->shifts[oc], p->output_offset, p->activation_min,
                               p->activation_max);
        vstrbq_scatter_offset_p_s32(out + oc, offsets, v, store);
    }
}

void trt_conv2d_mve(const trt_conv_params *p, void *temp) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->in_c;
    const int32_t pixels = p->out_h * p->out_w;
    int8_t *padded = temp;
    source src = {NULL, (p->in_w + 2 * p->pad_w) * p->in_c, padded + padded_bytes(p),
                  (int32_t *)(void *)(padded + padded_bytes(p) + columns_bytes(p))};
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * in_image;
        if (has_padding(p)) {
            trt_mve_pad_image(image, padded, p->in_h, p->in_w, p->in_c, p->pad_h, p->pad_w, p->input_offset);
            image = padded;
        }
        src.image = image;
        int8_t *out = p->output + (size_t)b * pixels * p->out_c;
        /* four pixels at a time in row-major order (a block may span two rows); the last
         * block repeats its first pixel in the lanes it does not store */
        for (int32_t i = 0; i < pixels; i += PIXELS) {
            const int32_t count = pixels - i < PIXELS ? pixels - i : PIXELS;
            int32_t first[PIXELS];
            for (int32_t k = 0; k < PIXELS; k++) first[k] = i + (k < count ? k : 0);
            conv_pixels(p, &src, first, count, out + (size_t)i * p->out_c);
        }
    }
}

#endif
