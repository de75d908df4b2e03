/*
 * What the bind steps of the elementwise operators share (ops/broadcast.c): operand shapes
 * folded into a walk of the output (trt_broadcast), and the argument ranges of their
 * quantization parameters.
 */
#ifndef TINYRPS_OPS_BROADCAST_H
#define TINYRPS_OPS_BROADCAST_H

#include "../kernels/elementwise.h"
#include "bind_args.h"

/* Zero points of the elementwise operators: beyond the int8 range (hardswish shifts one by
 * 3 / scale), but small enough that x - zero_point is exact in int32 and in float32. */
#define TRT_MAX_ZERO_POINT TRT_MAX_FLOAT_EXACT_INT

/* torch's broadcast of a and b (right-aligned; a size 1 stretches) must give out's shape;
 * fills `shape` with out's memory order and each operand's steps, merged to at most four
 * extents (more is TRT_ERR_LIMIT). */
trt_status trt_bind_broadcast(const trt_call *c, const trt_tensor *a, const trt_tensor *b, const trt_tensor *out,
                              trt_broadcast *shape);

/* The shapes quantized_add and quantized_mul take (their reference asserts the same): equal,
 * or one of them [1, C, 1, 1]-like (all its elements along dim 1) against a channels-last
 * map of C channels, as passes_utils.is_channel_broadcast defines it. */
int trt_is_channel_broadcast(const trt_tensor *a, const trt_tensor *b);
int trt_same_shape(const trt_tensor *a, const trt_tensor *b);
/* quantized_add's and quantized_mul's operand check: a and b of one shape or channel-broadcast
 * (the two tests above), else TRT_ERR_BAD_TENSOR. */
trt_status trt_need_quantized_operands(const trt_call *c, const trt_tensor *a, const trt_tensor *b);

/* The 4-D "channels-last" test of passes_utils.is_channels_last: C == 1, H == W == 1, or a
 * dim order starting 0, 2. */
int trt_reference_channels_last(const trt_tensor *t);

/* Two int8 (or `dtype`) operands at args a_arg and b_arg, the output at out_arg, folded into `shape`. */
trt_status trt_bind_binary(const trt_call *c, uint32_t a_arg, uint32_t b_arg, uint32_t out_arg, uint8_t dtype,
                           const trt_tensor **a, const trt_tensor **b, const trt_tensor **out, trt_broadcast *shape);

/* maximum.out and minimum.out (self, other, out): int8 or int32, the same on every side; torch's broadcasting. */
trt_status trt_bind_minmax(const trt_call *c, trt_minmax_params *p);

#endif
