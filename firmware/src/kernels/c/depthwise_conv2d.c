/*
 * cortex_m::quantized_depthwise_conv2d.out -- NHWC int8 depthwise convolution, 1HWO weights.
 *
 * Arithmetic (operators.quantized_depthwise_conv2d_impl; groups = in_c):
 *   acc[oc] = bias[oc] + sum over in-bounds taps of (in[.., oc / depth_multiplier] + input_offset) * w[ky, kx, oc]
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset,
 *                   activation_min, activation_max)
 * The window has at most TRT_MAX_DEPTHWISE_TAPS taps (checked at load), so a sum of
 * (int8 + offset) * int8 terms stays far inside int32; the bias is added modulo 2^32 as
 * torch's int32 tensors do.
 * Per pixel and input channel, the in-bounds inputs (offset added) are gathered once and
 * reused by all depth_multiplier output channels that read that input channel.
 */
#include "../arith.h"
#include "../conv_geometry.h"
#include "kernels_c.h"

typedef struct {
    int32_t count;
    int32_t input_pos[TRT_MAX_DEPTHWISE_TAPS];    /* input element of each in-bounds tap (channel 0) */
    int32_t weight_pos[TRT_MAX_DEPTHWISE_TAPS];   /* weight element of each tap (output channel 0) */
} window_taps;

static void list_taps(const trt_conv_params *p, int32_t iy, int32_t ix, const int32_t k[4], window_taps *taps) {
    taps->count = 0;
    for (int32_t ky = k[0]; ky < k[1]; ky++) {
        for (int32_t kx = k[2]; kx < k[3]; kx++) {
            int32_t y = iy + ky * p->dilation_h, x = ix + kx * p->dilation_w;
            taps->input_pos[taps->count] = (y * p->in_w + x) * p->in_c;
            taps->weight_pos[taps->count] = (ky * p->kernel_w + kx) * p->out_c;
            taps->count++;
        }
    }
}

static void depthwise_pixel(const trt_conv_params *p, const int8_t *image, const window_taps *taps, int8_t *out) {
    int32_t inputs[TRT_MAX_DEPTHWISE_TAPS];
    for (int32_t ic = 0; ic < p->in_c; ic++) {
        for (int32_t t = 0; t < taps->count; t++) inputs[t] = image[taps->input_pos[t] + ic] + p->input_offset;
        for (int32_t m = 0; m < p->depth_multiplier; m++) {
            const int32_t oc = ic * p->depth_multiplier + m;
            const int8_t *w = p->weights + oc;
            int32_t acc = 0;
            for (int32_t t = 0; t < taps->count; t++) acc += inputs[t] * w[taps->weight_pos[t]];
            if (p->bias) acc = trt_add_wrap(acc, p->bias[oc]);
            out[oc] = trt_output_s8(acc, p->multipliers[oc], p->shifts[oc], p->output_offset, p->activation_min,
                                    p->activation_max);
        }
    }
}

void trt_depthwise_conv2d_c(const trt_conv_params *p) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->in_c;
    window_taps taps;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * in_image;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            int32_t iy, ix, k[4];
            trt_tap_range(oy, p->stride_h, p->pad_h, p->dilation_h, p->kernel_h, p->in_h, &iy, &k[0], &k[1]);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                trt_tap_range(ox, p->stride_w, p->pad_w, p->dilation_w, p->kernel_w, p->in_w, &ix, &k[2], &k[3]);
                list_taps(p, iy, ix, k, &taps);
                depthwise_pixel(p, image, &taps, out);
                out += p->out_c;
            }
        }
    }
}
