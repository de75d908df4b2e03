/*
 * cortex_m::quantized_conv2d.out -- NHWC int8 convolution, OHWI weights, per-channel requantization.
 *
 * Arithmetic (operators.quantized_conv2d_impl):
 *   acc[oc] = bias[oc] + sum over in-bounds taps and the group's input channels of
 *             (in + input_offset) * w                       (int32, zero padding adds nothing)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset,
 *                   activation_min, activation_max)
 * The offset is folded out of the hot loop: sum((x + off) * w) = sum(x * w) + off * sum(w).
 * A whole window adds the prepared folded_bias[oc] (bias + off * window sum); a window cut
 * by the padding adds bias + off * (sum of its in-bounds taps' tap_sums). The int32 sums
 * wrap exactly as torch's int32 tensors do (modulo 2^32). A window with no in-bounds tap
 * (padding wider than the kernel) is the bias alone: no input pointer is formed for it.
 * Inner loop: four output channels share each input byte (trt_dot4_s8); with dilation_w == 1
 * and one group, a window row is one contiguous run of (taps * channels) bytes.
 */
#include "../arith.h"
#include "../conv_geometry.h"
#include "kernels_c.h"

typedef struct {
    const int8_t *image;       /* this batch's input */
    int32_t iy, ix;            /* input position of tap (0, 0) (may be negative) */
    int32_t ky0, ky1, kx0, kx1;
    int whole_window;
} window;

/* Accumulate `lanes` (4 or 1) output channels starting at oc over the window's in-bounds taps. */
static void accumulate(const trt_conv_params *p, const window *win, int32_t group, int32_t oc, int lanes,
                       int32_t acc[4]) {
    const int32_t c = p->in_c, kc = p->kernel_c;
    const int32_t row_len = p->kernel_w * kc, filter_len = p->kernel_h * row_len;
    const int contiguous = p->dilation_w == 1 && kc == c;
    const int32_t taps = win->kx1 - win->kx0;
    if (taps == 0) return;   /* no in-bounds column: the window's first input would lie outside */
    for (int32_t ky = win->ky0; ky < win->ky1; ky++) {
        const int8_t *x = win->image +
                          ((size_t)(win->iy + ky * p->dilation_h) * p->in_w + (size_t)(win->ix + win->kx0 * p->dilation_w)) * c +
                          (size_t)group * kc;
        const int8_t *w = p->weights + (size_t)oc * filter_len + (size_t)ky * row_len + (size_t)win->kx0 * kc;
        if (contiguous) {
            if (lanes == 4) trt_dot4_s8(x, w, filter_len, taps * kc, acc);
            else acc[0] += trt_dot_s8(x, w, taps * kc);
            continue;
        }
        for (int32_t t = 0; t < taps; t++) {
            const int8_t *xt = x + (size_t)t * p->dilation_w * c, *wt = w + (size_t)t * kc;
            if (lanes == 4) trt_dot4_s8(xt, wt, filter_len, kc, acc);
            else acc[0] += trt_dot_s8(xt, wt, kc);
        }
    }
}

/* bias + input_offset * (weight sum of output channel oc over the window's in-bounds taps). */
static int32_t window_bias(const trt_conv_params *p, const window *win, int32_t oc) {
    if (win->whole_window) return p->folded_bias[oc];
    const int32_t *taps = p->tap_sums + (size_t)oc * p->kernel_h * p->kernel_w;
    uint32_t sum = 0;
    for (int32_t ky = win->ky0; ky < win->ky1; ky++)
        for (int32_t kx = win->kx0; kx < win->kx1; kx++) sum += (uint32_t)taps[ky * p->kernel_w + kx];
    return trt_wrap32(sum * (uint32_t)p->input_offset + (uint32_t)(p->bias ? p->bias[oc] : 0));
}

static int8_t finish(const trt_conv_params *p, const window *win, int32_t oc, int32_t acc) {
    acc = trt_add_wrap(acc, window_bias(p, win, oc));
    return trt_output_s8(acc, p->multipliers[oc], p->shifts[oc], p->output_offset, p->activation_min,
                         p->activation_max);
}

static void conv_pixel(const trt_conv_params *p, const window *win, int8_t *out) {
    const int32_t per_group = p->out_c / p->groups;
    for (int32_t g = 0; g < p->groups; g++) {
        int32_t j = 0;
        for (; j + 4 <= per_group; j += 4) {
            int32_t oc = g * per_group + j;
            int32_t acc[4] = {0, 0, 0, 0};
            accumulate(p, win, g, oc, 4, acc);
            for (int lane = 0; lane < 4; lane++) out[oc + lane] = finish(p, win, oc + lane, acc[lane]);
        }
        for (; j < per_group; j++) {
            int32_t oc = g * per_group + j;
            int32_t acc[4] = {0, 0, 0, 0};
            accumulate(p, win, g, oc, 1, acc);
            out[oc] = finish(p, win, oc, acc[0]);
        }
    }
}

void trt_conv2d_c(const trt_conv_params *p) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->in_c;
    window win;
    for (int32_t b = 0; b < p->batches; b++) {
        win.image = p->input + (size_t)b * in_image;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            trt_tap_range(oy, p->stride_h, p->pad_h, p->dilation_h, p->kernel_h, p->in_h, &win.iy, &win.ky0, &win.ky1);
            for (int32_t ox = 0; ox < p->out_w; ox++) {
                trt_tap_range(ox, p->stride_w, p->pad_w, p->dilation_w, p->kernel_w, p->in_w, &win.ix, &win.kx0,
                              &win.kx1);
                win.whole_window = win.ky0 == 0 && win.ky1 == p->kernel_h && win.kx0 == 0 && win.kx1 == p->kernel_w;
                conv_pixel(p, &win, out);
                out += p->out_c;
            }
        }
    }
}
