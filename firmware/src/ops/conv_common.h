/*
 * Binding the arguments the convolutions share: input, weight, bias, stride, padding,
 * dilation, then (after depthwise's depth_multiplier, transpose's output_padding) offsets,
 * requantization, activation range, scratch, out.
 *
 *   extra  arguments between dilation's slot and input_offset: 1 for depthwise
 *          (depth_multiplier) and transpose (output_padding before dilation), 0 for conv
 *   nhwc   1 for the _nhwc operators (activations NHWC in logical order, row-major), 0 for
 *          the legacy ones (NCHW in logical order, channels-last dim order): the same bytes
 *
 * Fills everything but the output extent and the weight-dependent channel fields, which
 * depend on the operator (trt_conv_output_extent for the forward convolutions).
 */
#ifndef TINYRPS_CONV_COMMON_H
#define TINYRPS_CONV_COMMON_H

#include "../kernels/kernels.h"
#include "bind_args.h"

typedef struct {
    uint32_t stride, padding, dilation;   /* argument positions of the int[] pairs */
    uint32_t extra;                       /* arguments between them and input_offset */
    uint32_t scratch_tensors;             /* before out: 1 (scratch), 2 for transpose (+ output_scratch) */
    int nhwc;                             /* the _nhwc form of the operator */
} trt_conv_layout;

trt_status trt_bind_conv_common(const trt_call *c, const trt_conv_layout *layout, trt_conv_params *p,
                                const trt_tensor **weight);

/* out = (in + 2 pad - dilation (kernel - 1) - 1) / stride + 1 on both axes; checks it against
 * the output tensor. */
trt_status trt_conv_output_extent(const trt_call *c, trt_conv_params *p);

#endif
