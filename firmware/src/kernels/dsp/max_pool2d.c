/*
 * cortex_m::quantized_max_pool2d.out with the DSP extension -- NHWC int8 max pooling, four
 * channels per word (SSUB8 + SEL: a byte-wise signed max in two instructions).
 *
 * Arithmetic: as kernels/c/max_pool2d.c: the max over the window's in-bounds taps (padding
 * never wins), then clamp to [activation_min, activation_max]. Channels beyond a multiple
 * of four are pooled byte by byte.
 *
 * The usual pool, 2x2 windows at stride 2 without padding over a multiple of four channels,
 * runs a loop of its own: per word of four channels, four loads and three byte-wise maxima
 * (no bounds to work out per pixel), and the clamp only when the activation range is narrower
 * than int8's (max(-128, m) and min(127, m) are m).
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../arith.h"
#include "dsp_intrinsics.h"
#include "kernels_dsp.h"

static uint32_t four_bytes(int32_t v) { return ((uint32_t)v & 0xFFu) * 0x01010101u; }

static void pool_pixel(const trt_max_pool_params *p, const int8_t *image, int32_t oy, int32_t ox, int8_t *out) {
    const int32_t c = p->channels, words = c / 4;
    const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
    const int32_t ky0 = y0 < 0 ? -y0 : 0, kx0 = x0 < 0 ? -x0 : 0;
    const int32_t ky1 = y0 + p->kernel_h > p->in_h ? p->in_h - y0 : p->kernel_h;
    const int32_t kx1 = x0 + p->kernel_w > p->in_w ? p->in_w - x0 : p->kernel_w;
    const uint32_t lo = four_bytes(p->activation_min), hi = four_bytes(p->activation_max);
    const int8_t *first = image + ((size_t)(y0 + ky0) * p->in_w + (size_t)(x0 + kx0)) * c;
    for (int32_t w = 0; w < words; w++) {
        uint32_t m = trt_read32(first + 4 * w);
        for (int32_t ky = ky0; ky < ky1; ky++) {
            const int8_t *tap = image + ((size_t)(y0 + ky) * p->in_w + (size_t)(x0 + kx0)) * c + 4 * w;
            for (int32_t kx = kx0; kx < kx1; kx++, tap += c) m = trt_max4(m, trt_read32(tap));
        }
        m = trt_min4(trt_max4(m, lo), hi);
        memcpy(out + 4 * w, &m, sizeof m);
    }
    for (int32_t i = 4 * words; i < c; i++) {
        int32_t m = first[i];
        for (int32_t ky = ky0; ky < ky1; ky++) {
            const int8_t *tap = image + ((size_t)(y0 + ky) * p->in_w + (size_t)(x0 + kx0)) * c + i;
            for (int32_t kx = kx0; kx < kx1; kx++, tap += c) m = *tap > m ? *tap : m;
        }
        out[i] = (int8_t)trt_clamp(m, p->activation_min, p->activation_max);
    }
}

static int is_plain_2x2(const trt_max_pool_params *p) {
    return p->kernel_h == 2 && p->kernel_w == 2 && p->stride_h == 2 && p->stride_w == 2 && p->pad_h == 0 &&
           p->pad_w == 0 && p->channels % 4 == 0 && 2 * p->out_h <= p->in_h && 2 * p->out_w <= p->in_w;
}

/* One image of the 2x2 pool: out (oy, ox) = max over input (2oy + i, 2ox + j), i, j in {0, 1}. */
static void pool_2x2(const trt_max_pool_params *p, const int8_t *image, int8_t *out) {
    const int32_t c = p->channels, row = p->in_w * c;
    const int clamped = p->activation_min > -128 || p->activation_max < 127;
    const uint32_t lo = four_bytes(p->activation_min), hi = four_bytes(p->activation_max);
    for (int32_t oy = 0; oy < p->out_h; oy++) {
        const int8_t *top = image + (size_t)2 * oy * row;
        for (int32_t ox = 0; ox < p->out_w; ox++, top += 2 * c) {
            const int8_t *end = top + c;
            for (const int8_t *x = top; x < end; x += 4, out += 4) {
                uint32_t m = trt_max4(trt_max4(trt_read32(x), trt_read32(x + c)),
                                      trt_max4(trt_read32(x + row), trt_read32(x + row + c)));
                if (clamped) m = trt_min4(trt_max4(m, lo), hi);
                memcpy(out, &m, sizeof m);
            }
        }
    }
}

void trt_max_pool2d_dsp(const trt_max_pool_params *p) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->channels;
    const size_t out_image = (size_t)p->out_h * p->out_w * p->channels;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * in_image;
        int8_t *out = p->output + (size_t)b * out_image;
        if (is_plain_2x2(p)) {
            pool_2x2(p, image, out);
            continue;
        }
        for (int32_t oy = 0; oy < p->out_h; oy++)
            for (int32_t ox = 0; ox < p->out_w; ox++)
                pool_pixel(p, image, oy, ox, out + ((size_t)oy * p->out_w + ox) * p->channels);
    }
}

#endif
