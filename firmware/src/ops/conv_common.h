/*
 * Binding the arguments quantized_conv2d and quantized_depthwise_conv2d share: input,
 * weight, bias, stride, padding, dilation, then (after depthwise's depth_multiplier)
 * offsets, requantization, activation range, scratch, out. `extra` is 1 for depthwise
 * (its depth_multiplier argument), 0 for conv.
 */
#ifndef TINYRPS_CONV_COMMON_H
#define TINYRPS_CONV_COMMON_H

#include "../kernels/kernels.h"
#include "bind_args.h"

trt_status trt_bind_conv_common(const trt_call *c, trt_conv_params *p, const trt_tensor **in,
                                const trt_tensor **weight, const trt_tensor **out, uint32_t extra);

#endif
