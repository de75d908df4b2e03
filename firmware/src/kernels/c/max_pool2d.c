/*
 * cortex_m::quantized_max_pool2d.out -- NHWC int8 max pooling.
 *
 * Arithmetic (operators.quantized_max_pool2d_impl):
 *   out[b,y,x,c] = clamp(max over the window's in-bounds taps of in[b, y*sh - ph + ky, x*sw - pw + kx, c],
 *                        activation_min, activation_max)
 * Padding never wins (torch pads max pooling with -inf); zero points are equal on both
 * sides and do not enter. Dilation 1, floor mode, padding <= kernel/2 (checked at load),
 * so every window has at least one in-bounds tap.
 */
#include <string.h>

#include "../arith.h"
#include "kernels_c.h"

static void pool_pixel(const trt_max_pool_params *p, const int8_t *image, int32_t oy, int32_t ox, int8_t *out) {
    const int32_t c = p->channels;
    const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
    const int32_t ky0 = y0 < 0 ? -y0 : 0, kx0 = x0 < 0 ? -x0 : 0;
    const int32_t ky1 = y0 + p->kernel_h > p->in_h ? p->in_h - y0 : p->kernel_h;
    const int32_t kx1 = x0 + p->kernel_w > p->in_w ? p->in_w - x0 : p->kernel_w;
    memcpy(out, image + ((size_t)(y0 + ky0) * p->in_w + (size_t)(x0 + kx0)) * c, (size_t)c);
    for (int32_t ky = ky0; ky < ky1; ky++) {
        for (int32_t kx = kx0; kx < kx1; kx++) {
            const int8_t *tap = image + ((size_t)(y0 + ky) * p->in_w + (size_t)(x0 + kx)) * c;
            for (int32_t i = 0; i < c; i++)
                if (tap[i] > out[i]) out[i] = tap[i];
        }
    }
    for (int32_t i = 0; i < c; i++) out[i] = (int8_t)trt_clamp(out[i], p->activation_min, p->activation_max);
}

void trt_max_pool2d_c(const trt_max_pool_params *p) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->channels;
    const size_t out_image = (size_t)p->out_h * p->out_w * p->channels;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * in_image;
        int8_t *out = p->output + (size_t)b * out_image;
        for (int32_t oy = 0; oy < p->out_h; oy++)
            for (int32_t ox = 0; ox < p->out_w; ox++)
                pool_pixel(p, image, oy, ox, out + ((size_t)oy * p->out_w + ox) * p->channels);
    }
}
