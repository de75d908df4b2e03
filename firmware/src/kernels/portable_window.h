/*
 * The parameters of the portable window operators' kernels: the pools (aten::max_pool2d_with_indices,
 * aten::avg_pool2d) and the float convolution (aten::convolution: 1-D, 2-D, 3-D, transposed) that
 * ExecuTorch's Cortex-M lowering leaves to the CPU in the forms its own kernels do not take (ceil_mode,
 * dilation, divisor_override, output_padding, groups of a transposed convolution). The bind steps
 * (ops/portable_pool.c, ops/portable_conv.c) give every tensor's element strides, so a kernel runs on
 * any dim order (kernels.h includes this).
 */
#ifndef TINYRPS_KERNELS_PORTABLE_WINDOW_H
#define TINYRPS_KERNELS_PORTABLE_WINDOW_H

#include <stdint.h>

/* What a pool kernel computes over each window. */
enum {
    TRT_WINDOW_MAX,   /* the largest element (the first of equal ones), and its index h * in_w + w */
    TRT_WINDOW_AVG    /* the float32 sum of the window's elements inside the input, divided */
};

/*
 * A pool over the last two dims of a [batches, channels, in_h, in_w] input (a 3-D input: batches 1).
 * Output pixel (y, x) covers input rows y * stride[0] - pad[0] + i * dilation[0], i < kernel[0] (and
 * columns likewise); an average divides by `divisor` when it is not 0, else by the window's size
 * clipped to the padded input (count_include_pad) or to the input.
 */
typedef struct {
    const uint8_t *input;
    uint8_t *output;
    int64_t *indices;                 /* max: at the output's strides; NULL: not written */
    uint8_t dtype, op, count_include_pad, elem_size;
    int32_t divisor;
    int32_t batches, channels, in_h, in_w, out_h, out_w;
    int16_t kernel[2], stride[2], pad[2], dilation[2];
    int32_t in_strides[4], out_strides[4];   /* elements, along batches, channels, rows, columns */
} trt_window_pool_params;

/*
 * A float32 convolution of a [batches, in_channels, d, h, w] input (1-D and 2-D ones have d, h of
 * size 1, stride 0) with a weight of [out_channels, in_channels / groups, kd, kh, kw] (transposed:
 * [in_channels, out_channels / groups, kd, kh, kw]) and an optional bias per output channel.
 */
typedef struct {
    const float *input, *weight, *bias;   /* bias: NULL for none */
    float *output;
    int32_t batches, in_channels, out_channels, groups;
    int32_t in_size[3], out_size[3];      /* d, h, w */
    int16_t kernel[3], stride[3], pad[3], dilation[3];
    int32_t in_strides[5], out_strides[5], w_strides[5];   /* elements, in the shapes above */
    uint8_t transposed;
} trt_float_conv_params;

#endif
