/*
 * The Helium (M-profile Vector Extension) kernels, for the Cortex-M55 and M85:
 * arm_mve.h intrinsics, tail-predicated, weights read in place from the program.
 * Compiled only when the build has integer MVE (kernels/isa.h: TRT_HAVE_MVE).
 * `accepts` says which bound calls a kernel takes; the others run on the next variant.
 */
#ifndef TINYRPS_KERNELS_MVE_H
#define TINYRPS_KERNELS_MVE_H

#include <stddef.h>

#include "../kernels.h"

void trt_quantize_mve(const trt_quantize_params *p);
void trt_dequantize_mve(const trt_dequantize_params *p);

int trt_conv2d_long_mve_accepts(const trt_conv_params *p);
size_t trt_conv2d_long_mve_scratch_bytes(const trt_conv_params *p);
void trt_conv2d_long_mve_prepare(trt_conv_params *p, void *scratch);
void trt_conv2d_long_mve(const trt_conv_params *p, void *temp);
/* The long windows' layers of a 3x3 kernel at stride 1 over 16 or 32 channels, read in place from an
 * image padded once per call; the loader switches a layer to it when it fuses the pool after it. */
int trt_conv2d_pooled_mve_accepts(const trt_conv_params *p);
size_t trt_conv2d_pooled_mve_temp_bytes(const trt_conv_params *p);
void trt_conv2d_pooled_mve(const trt_conv_params *p, void *temp);
/* Fuse the 2x2 max pool that alone reads p's output into p, if exact (1; pool becomes a copy), else 0. */
int trt_conv2d_mve_fuse_pool(trt_conv_params *p, trt_max_pool_params *pool);
/* What the fusions of the Helium layers share (conv2d.c); reach: the largest |sum| of a window. */
int trt_mve_fuse_pool(trt_conv_params *p, trt_max_pool_params *pool, int64_t reach);
int trt_conv2d_mve_accepts(const trt_conv_params *p);
size_t trt_conv2d_mve_scratch_bytes(const trt_conv_params *p);
void trt_conv2d_mve_prepare(trt_conv_params *p, void *scratch);
size_t trt_conv2d_mve_temp_bytes(const trt_conv_params *p);
void trt_conv2d_mve(const trt_conv_params *p, void *temp);
/* The convolution of p on an image already padded (or prepared: pad bytes hold -input_offset)
 * with `pitch` bytes per row, p's padding ignored; temp: trt_conv2d_mve_block_bytes. */
size_t trt_conv2d_mve_block_bytes(const trt_conv_params *p);
void trt_conv2d_mve_on_image(const trt_conv_params *p, const int8_t *image, int32_t pitch, int8_t *out, void *temp);

int trt_depthwise_mve_accepts(const trt_conv_params *p);
size_t trt_depthwise_mve_scratch_bytes(const trt_conv_params *p);
void trt_depthwise_mve_prepare(trt_conv_params *p, void *scratch);
size_t trt_depthwise_mve_temp_bytes(const trt_conv_params *p);
void trt_depthwise_conv2d_mve(const trt_conv_params *p, void *temp);
/* Fuse the 2x2 max pool that alone reads p's output into p, if exact (1; pool becomes a copy), else 0. */
int trt_depthwise_mve_fuse_pool(trt_conv_params *p, trt_max_pool_params *pool);

/* depthwise, one input channel, any window (after the one-gather kernel above) */
int trt_depthwise_one_channel_mve_accepts(const trt_conv_params *p);
size_t trt_depthwise_one_channel_mve_scratch_bytes(const trt_conv_params *p);
void trt_depthwise_one_channel_mve_prepare(trt_conv_params *p, void *scratch);
size_t trt_depthwise_one_channel_mve_temp_bytes(const trt_conv_params *p);
void trt_depthwise_one_channel_mve(const trt_conv_params *p, void *temp);

/* depthwise, any channels, multiplier, stride, dilation, padding */
int trt_depthwise_channels_mve_accepts(const trt_conv_params *p);
size_t trt_depthwise_channels_mve_scratch_bytes(const trt_conv_params *p);
void trt_depthwise_channels_mve_prepare(trt_conv_params *p, void *scratch);
size_t trt_depthwise_channels_mve_temp_bytes(const trt_conv_params *p);
void trt_depthwise_channels_mve(const trt_conv_params *p, void *temp);

int trt_transpose_conv2d_mve_accepts(const trt_conv_params *p);
size_t trt_transpose_conv2d_mve_scratch_bytes(const trt_conv_params *p);
void trt_transpose_conv2d_mve_prepare(trt_conv_params *p, void *scratch);
size_t trt_transpose_conv2d_mve_temp_bytes(const trt_conv_params *p);
void trt_transpose_conv2d_mve(const trt_conv_params *p, void *temp);

void trt_max_pool2d_mve(const trt_max_pool_params *p);
void trt_avg_pool2d_mve(const trt_avg_pool_params *p);   /* Helium with floating point (TRT_HAVE_MVE_FLOAT) */
size_t trt_linear_mve_scratch_bytes(const trt_linear_params *p);
void trt_linear_mve_prepare(trt_linear_params *p, void *scratch);   /* the weight sums, small_accumulators */
void trt_linear_mve(const trt_linear_params *p);
int trt_linear_words_mve_accepts(const trt_linear_params *p);
void trt_linear_words_mve(const trt_linear_params *p);

int trt_clone_dim_order_mve_accepts(const trt_copy_params *p);
void trt_clone_dim_order_mve(const trt_copy_params *p);

int trt_quantized_add_mve_accepts(const trt_add_params *p);
void trt_quantized_add_mve(const trt_add_params *p);
/* quantized_add, two operands of one layout: each operand's terms through a table (temp) */
int trt_quantized_add_table_mve_accepts(const trt_add_params *p);
size_t trt_quantized_add_table_mve_temp_bytes(const trt_add_params *p);
void trt_quantized_add_table_mve(const trt_add_params *p, void *temp);
int trt_quantized_mul_mve_accepts(const trt_mul_params *p);
void trt_quantized_mul_mve(const trt_mul_params *p);
int trt_minmax_mve_accepts(const trt_minmax_params *p);
void trt_minimum_mve(const trt_minmax_params *p);
void trt_maximum_mve(const trt_minmax_params *p);
void trt_quantized_activation_mve(const trt_lut_params *p);
void trt_clamp_mve(const trt_clamp_params *p);

#endif
