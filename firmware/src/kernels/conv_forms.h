/*
 * Convolutions that are computed as another convolution (the conv2d variants' kernels on a
 * prepared image), shared by the Helium and DSP variants:
 *
 * - quantized_depthwise_conv2d with one input channel: out_c output channels of one input
 *   channel is a convolution with kernel_c = 1 and the weights in OHWI order, [oc][ky][kx]
 *   (the 1HWO weights transposed at load);
 * - quantized_transpose_conv2d: with the input spread over a grid of pad bytes (a value whose
 *   offset input is zero: -input_offset), input (iy, ix) at (e_h + iy * stride_h, e_w + ix * stride_w),
 *   e = dilation * (kernel - 1) - padding, the transposed convolution is the stride-1 convolution
 *   of that grid with the same dilation and the kernel turned by 180 degrees:
 *     out[o] = sum over k of grid[o + (K - 1 - k) * d] * w[k]   (o = i * s - p + k * d  <=>  grid index e + i * s);
 *   grid taps that hold no input add (pad + input_offset) * w = 0, as the reference's sum leaves
 *   them out. Input rows or columns landing outside the grid (padding above d (K - 1)) meet no
 *   output. The grid is out + d (K - 1) on each axis.
 */
#ifndef TINYRPS_CONV_FORMS_H
#define TINYRPS_CONV_FORMS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

static inline size_t trt_align16(size_t n) { return (n + 15) & ~(size_t)15; }

/* ---- one-input-channel depthwise as a convolution ---------------------------------------------- */

static inline size_t trt_one_channel_weights_bytes(const trt_conv_params *p) {
    return trt_align16((size_t)p->out_c * p->kernel_h * p->kernel_w);
}

/* 1HWO [t][oc] -> OHWI [oc][t] (kernel_c = 1) */
static inline void trt_one_channel_pack(const trt_conv_params *p, int8_t *packed) {
    const int32_t taps = p->kernel_h * p->kernel_w;
    for (int32_t oc = 0; oc < p->out_c; oc++)
        for (int32_t t = 0; t < taps; t++) packed[(size_t)oc * taps + t] = p->weights[(size_t)t * p->out_c + oc];
}

/* The convolution p is: weights from packed_weights (prepared), one input channel, no groups. */
static inline trt_conv_params trt_one_channel_as_conv(const trt_conv_params *p) {
    trt_conv_params q = *p;
    q.weights = p->packed_weights;
    q.kernel_c = 1;
    q.groups = 1;
    q.depth_multiplier = 0;
    return q;
}

/* ---- transposed convolution as a convolution -------------------------------------------------- */

static inline int32_t trt_transpose_grid_edge(int32_t kernel, int32_t dilation, int32_t pad) {
    return dilation * (kernel - 1) - pad;
}

/* The stride-1 convolution over the grid (its input extent is the grid's); weights from
 * packed_weights (prepared by trt_transpose_turn_weights). */
static inline trt_conv_params trt_transpose_as_conv(const trt_conv_params *p) {
    trt_conv_params q = *p;
    q.in_h = p->out_h + p->dilation_h * (p->kernel_h - 1);
    q.in_w = p->out_w + p->dilation_w * (p->kernel_w - 1);
    q.stride_h = q.stride_w = 1;
    q.pad_h = q.pad_w = 0;
    q.weights = p->packed_weights;
    q.kernel_c = p->in_c;
    q.groups = 1;
    return q;
}

static inline size_t trt_transpose_grid_bytes(const trt_conv_params *p) {
    const trt_conv_params q = trt_transpose_as_conv(p);
    return trt_align16((size_t)q.in_h * q.in_w * q.in_c);
}

static inline size_t trt_transpose_weights_bytes(const trt_conv_params *p) {
    return trt_align16((size_t)p->out_c * p->kernel_h * p->kernel_w * p->in_c);
}

/* w'[oc][ky][kx] = w[oc][kernel_h - 1 - ky][kernel_w - 1 - kx], each tap's in_c bytes */
static inline void trt_transpose_turn_weights(const trt_conv_params *p, int8_t *turned) {
    const size_t c = (size_t)p->in_c;
    for (int32_t oc = 0; oc < p->out_c; oc++)
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            for (int32_t kx = 0; kx < p->kernel_w; kx++) {
                const size_t from = (((size_t)oc * p->kernel_h + (p->kernel_h - 1 - ky)) * p->kernel_w +
                                     (p->kernel_w - 1 - kx)) * c;
                const size_t to = (((size_t)oc * p->kernel_h + ky) * p->kernel_w + kx) * c;
                memcpy(turned + to, p->weights + from, c);
            }
}

/* One batch's input [in_h][in_w][in_c] spread over the grid (filled with the pad value first). */
static inline void trt_transpose_spread(const trt_conv_params *p, const int8_t *image, int8_t *grid) {
    const trt_conv_params q = trt_transpose_as_conv(p);
    const size_t c = (size_t)p->in_c;
    const int32_t e_h = trt_transpose_grid_edge(p->kernel_h, p->dilation_h, p->pad_h);
    const int32_t e_w = trt_transpose_grid_edge(p->kernel_w, p->dilation_w, p->pad_w);
    memset(grid, (int)(int8_t)-p->input_offset, (size_t)q.in_h * q.in_w * c);
    for (int32_t iy = 0; iy < p->in_h; iy++) {
        const int64_t gy = (int64_t)e_h + (int64_t)iy * p->stride_h;
        if (gy < 0 || gy >= q.in_h) continue;
        for (int32_t ix = 0; ix < p->in_w; ix++) {
            const int64_t gx = (int64_t)e_w + (int64_t)ix * p->stride_w;
            if (gx < 0 || gx >= q.in_w) continue;
            memcpy(grid + ((size_t)gy * q.in_w + (size_t)gx) * c, image + ((size_t)iy * p->in_w + ix) * c, c);
        }
    }
}

/* The working memory of a transposed convolution over an ISA's convolution: the grid, then what that
 * convolution's blocks take (its block_bytes). */
static inline size_t trt_transpose_temp_bytes(const trt_conv_params *p,
                                              size_t (*block_bytes)(const trt_conv_params *q)) {
    const trt_conv_params q = trt_transpose_as_conv(p);
    return trt_transpose_grid_bytes(p) + block_bytes(&q);
}

/* Inlined where it is used, whatever its size: the ISA's convolution is then a direct call. */
#if defined(__GNUC__)
#define TRT_TRANSPOSE_INLINE static inline __attribute__((always_inline))
#else
#define TRT_TRANSPOSE_INLINE static inline
#endif

/* A transposed convolution's load-time work over an ISA's convolution: the weights turned into the
 * scratch, then that convolution's own prepare (conv_prepare) for the grid, its scratch after the
 * turned weights; what a convolution's prepare precomputes comes back into p. */
TRT_TRANSPOSE_INLINE void trt_transpose_prepare(trt_conv_params *p, void *scratch,
                                                void (*conv_prepare)(trt_conv_params *q, void *scratch)) {
    int8_t *turned = scratch;
    trt_transpose_turn_weights(p, turned);
    p->packed_weights = turned;
    trt_conv_params q = trt_transpose_as_conv(p);
    conv_prepare(&q, turned + trt_transpose_weights_bytes(p));
    p->tap_sums = q.tap_sums;
    p->folded_bias = q.folded_bias;
    p->small_accumulators = q.small_accumulators;
}

/* A transposed convolution run on an ISA's convolution of one image (its on_image, named where this is
 * inlined): each batch's input spread over the grid in temp, then the convolution over the grid, with
 * its blocks after the grid. */
TRT_TRANSPOSE_INLINE void trt_transpose_run(const trt_conv_params *p, void *temp,
                                            void (*on_image)(const trt_conv_params *q, const int8_t *image,
                                                             int32_t pitch, int8_t *out, void *blocks)) {
    const trt_conv_params q = trt_transpose_as_conv(p);
    int8_t *grid = temp;
    for (int32_t b = 0; b < p->batches; b++) {
        trt_transpose_spread(p, p->input + (size_t)b * p->in_h * p->in_w * p->in_c, grid);
        on_image(&q, grid, q.in_w * q.in_c, p->output + (size_t)b * p->out_h * p->out_w * p->out_c,
                 grid + trt_transpose_grid_bytes(p));
    }
}

#endif
