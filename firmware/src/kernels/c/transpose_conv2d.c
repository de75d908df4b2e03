/*
 * cortex_m::quantized_transpose_conv2d.out -- NHWC int8 transposed convolution, OHWI weights
 * [out_c, kernel_h, kernel_w, in_c], per-channel requantization (groups 1: the reference's rule
 * groups = in_c / weight's last size, with torch's weight layout, admits no other).
 *
 * Arithmetic (operators.quantized_transpose_conv2d_impl): input tap (iy, ix) adds to output
 * pixel (iy * stride_h - pad_h + ky * dilation_h, ix * stride_w - pad_w + kx * dilation_w):
 *   acc[oy, ox, oc] = bias[oc] + sum over (iy, ky, ix, kx) landing on (oy, ox), and ic, of
 *                     (in[iy, ix, ic] + input_offset) * w[oc, ky, kx, ic]
 *   out = clamp(requantize(acc, multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * The reference runs torch's float32 conv_transpose2d on the integers and casts the result to
 * int32: the exact integer sum whenever every partial sum stays within 2^24 (float32's exact
 * integers), which is what this kernel computes, in int32 (at most TRT_MAX_REDUCTION terms per
 * output, checked at load, so the sum cannot overflow).
 *
 * Computed by gathering: output pixel (oy, ox) takes tap ky where t = oy + pad_h - ky * dilation_h
 * is a multiple of stride_h with t / stride_h inside the input (the same along x). Each landing
 * tap is one in_c-long dot product, contiguous in both the input pixel and the weights, four
 * output channels per input byte (trt_dot4_s8). The input offset is folded out as in conv2d:
 * sum((x + off) * w) = sum(x * w) + off * (the tap's weight sum, prepared at load).
 */
#include "../arith.h"
#include "kernels_c.h"

/* The input row (or column) that tap k of output position o reads, or -1 when there is none. */
static int32_t landing(int32_t o, int32_t k, int32_t stride, int32_t pad, int32_t dilation, int32_t in) {
    const int32_t t = o + pad - k * dilation;
    if (t < 0 || t % stride != 0 || t / stride >= in) return -1;
    return t / stride;
}

typedef struct {
    int32_t count;
    int32_t input_pos[TRT_MAX_TRANSPOSE_TAPS];   /* pixel index (iy * in_w + ix) of each landing tap */
    int32_t tap[TRT_MAX_TRANSPOSE_TAPS];         /* ky * kernel_w + kx */
} landing_taps;

static void list_taps(const trt_conv_params *p, int32_t oy, int32_t ox, landing_taps *taps) {
    taps->count = 0;
    for (int32_t ky = 0; ky < p->kernel_h; ky++) {
        const int32_t iy = landing(oy, ky, p->stride_h, p->pad_h, p->dilation_h, p->in_h);
        if (iy < 0) continue;
        for (int32_t kx = 0; kx < p->kernel_w; kx++) {
            const int32_t ix = landing(ox, kx, p->stride_w, p->pad_w, p->dilation_w, p->in_w);
            if (ix < 0) continue;
            taps->input_pos[taps->count] = iy * p->in_w + ix;
            taps->tap[taps->count] = ky * p->kernel_w + kx;
            taps->count++;
        }
    }
}

/* bias + input_offset * (weight sum of channel oc over the landing taps), modulo 2^32. */
static int32_t landing_bias(const trt_conv_params *p, const landing_taps *taps, int32_t oc) {
    const int32_t *sums = p->tap_sums + (size_t)oc * p->kernel_h * p->kernel_w;
    uint32_t sum = 0;
    for (int32_t t = 0; t < taps->count; t++) sum += (uint32_t)sums[taps->tap[t]];
    return trt_wrap32(sum * (uint32_t)p->input_offset + (uint32_t)(p->bias ? p->bias[oc] : 0));
}

static void transpose_pixel(const trt_conv_params *p, const int8_t *image, const landing_taps *taps, int8_t *out) {
    const int32_t c = p->in_c, filter = p->kernel_h * p->kernel_w * c;
    for (int32_t oc = 0; oc < p->out_c;) {
        const int lanes = p->out_c - oc >= 4 ? 4 : 1;
        int32_t acc[4] = {0, 0, 0, 0};
        for (int32_t t = 0; t < taps->count; t++) {
            const int8_t *x = image + (size_t)taps->input_pos[t] * c;
            const int8_t *w = p->weights + (size_t)oc * filter + (size_t)taps->tap[t] * c;
            if (lanes == 4) trt_dot4_s8(x, w, filter, c, acc);
            else acc[0] += trt_dot_s8(x, w, c);
        }
        for (int k = 0; k < lanes; k++, oc++)
            out[oc] = trt_output_s8(trt_add_wrap(acc[k], landing_bias(p, taps, oc)), p->multipliers[oc],
                                    p->shifts[oc], p->output_offset, p->activation_min, p->activation_max);
    }
}

void trt_transpose_conv2d_c(const trt_conv_params *p) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->in_c;
    landing_taps taps;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * in_image;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++)
            for (int32_t ox = 0; ox < p->out_w; ox++, out += p->out_c) {
                list_taps(p, oy, ox, &taps);
                transpose_pixel(p, image, &taps, out);
            }
    }
}
