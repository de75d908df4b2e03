/*
 * cortex_m::quantized_max_pool2d.out with Helium -- NHWC int8 max pooling, 16 channels per
 * step (VMAX), the channel remainder tail-predicated.
 *
 * Arithmetic: as kernels/c/max_pool2d.c: the max over the window's in-bounds taps (padding
 * never wins), then clamp to [activation_min, activation_max].
 *
 * A pool without padding over whole 16-byte steps of channels on word-aligned maps runs a loop
 * of its own: every window lies in the image, so a step is a load and a VMAX per tap, the clamp
 * and a store, with no bounds to work out per pixel (the default network's 2x2 pools: about
 * 36,000 and 15,000 instructions in the general loop, a quarter of that here).
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"
#include "mve_load.h"

/* Output pixel (oy, ox), every channel, 16 at a time (a last partial step tail-predicated). */
static void pool_pixel(const trt_max_pool_params *p, const int8_t *image, int32_t oy, int32_t ox, int8_t *out) {
    const int32_t c = p->channels;
    const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
    const int32_t ky0 = y0 < 0 ? -y0 : 0, kx0 = x0 < 0 ? -x0 : 0;
    const int32_t ky1 = y0 + p->kernel_h > p->in_h ? p->in_h - y0 : p->kernel_h;
    const int32_t kx1 = x0 + p->kernel_w > p->in_w ? p->in_w - x0 : p->kernel_w;
    const int8x16_t lo = vdupq_n_s8((int8_t)p->activation_min), hi = vdupq_n_s8((int8_t)p->activation_max);
    const int8_t *first = image + ((size_t)(y0 + ky0) * p->in_w + (size_t)(x0 + kx0)) * c;
    for (int32_t ch = 0; ch < c; ch += 16) {
        const mve_pred16_t pred = vctp8q((uint32_t)(c - ch));
        int8x16_t m = vldrbq_z_s8(first + ch, pred);
        for (int32_t ky = ky0; ky < ky1; ky++) {
            const int8_t *tap = image + ((size_t)(y0 + ky) * p->in_w + (size_t)(x0 + kx0)) * c + ch;
            for (int32_t kx = kx0; kx < kx1; kx++, tap += c) m = vmaxq_s8(m, vldrbq_z_s8(tap, pred));
        }
        vstrbq_p_s8(out + ch, vminq_s8(vmaxq_s8(m, lo), hi), pred);
    }
}

/* One image of a pool without padding over whole 16-byte steps of channels on word-aligned maps:
 * every window lies in the image (floor mode), so no bounds are worked out per pixel; per step the
 * window's taps are one load and one VMAX each, row by row. */
static void pool_plain(const trt_max_pool_params *p, const int8_t *image, int8_t *out) {
    const int32_t c = p->channels, row = p->in_w * c, kh = p->kernel_h, kw = p->kernel_w;
    const int32_t down = p->stride_h * row, across = p->stride_w * c, skip = row - kw * c;
    const int8x16_t lo = vdupq_n_s8((int8_t)p->activation_min), hi = vdupq_n_s8((int8_t)p->activation_max);
    for (int32_t oy = 0; oy < p->out_h; oy++) {
        const int8_t *window = image + (size_t)oy * down;
        for (int32_t ox = 0; ox < p->out_w; ox++, window += across) {
            for (int32_t ch = 0; ch < c; ch += 16, out += 16) {
                const int8_t *tap = window + ch;
                int8x16_t m = trt_mve_load_words(tap);
                for (int32_t ky = kh; ky > 0; ky--, tap += skip)
                    for (int32_t kx = kw; kx > 0; kx--, tap += c) m = vmaxq_s8(m, trt_mve_load_words(tap));
                trt_mve_store_words(out, vminq_s8(vmaxq_s8(m, lo), hi));
            }
        }
    }
}

/* A 1x1 window at stride 1 without padding (what a pool fused into the convolution before it
 * leaves: trt_conv2d_mve_fuse_pool): the clamp of `bytes` bytes, as words when aligned. */
static void pool_copy(const trt_max_pool_params *p, const int8_t *in, int8_t *out, int32_t bytes) {
    const int8x16_t lo = vdupq_n_s8((int8_t)p->activation_min), hi = vdupq_n_s8((int8_t)p->activation_max);
    if (trt_mve_word_aligned(in) && trt_mve_word_aligned(out))
        for (; bytes >= 16; bytes -= 16, in += 16, out += 16)
            trt_mve_store_words(out, vminq_s8(vmaxq_s8(trt_mve_load_words(in), lo), hi));
    for (; bytes > 0; bytes -= 16, in += 16, out += 16) {
        const mve_pred16_t pred = vctp8q((uint32_t)bytes);
        vstrbq_p_s8(out, vminq_s8(vmaxq_s8(vldrbq_z_s8(in, pred), lo), hi), pred);
    }
}

void trt_max_pool2d_mve(const trt_max_pool_params *p) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->channels;
    const size_t out_image = (size_t)p->out_h * p->out_w * p->channels;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * in_image;
        int8_t *out = p->output + (size_t)b * out_image;
        const int words = p->channels % 16 == 0 && trt_mve_word_aligned(image) && trt_mve_word_aligned(out);
        if (p->kernel_h == 1 && p->kernel_w == 1 && p->stride_h == 1 && p->stride_w == 1 && (p->pad_h | p->pad_w) == 0)
            pool_copy(p, image, out, (int32_t)out_image);
        else if (words && (p->pad_h | p->pad_w) == 0) pool_plain(p, image, out);
        else
            for (int32_t oy = 0; oy < p->out_h; oy++)
                for (int32_t ox = 0; ox < p->out_w; ox++, out += p->channels) pool_pixel(p, image, oy, ox, out);
    }
}

#endif
