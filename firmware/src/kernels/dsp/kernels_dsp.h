/*
 * The DSP-extension kernels, for the Cortex-M4, M33 (and M55 without MVE): SIMD
 * multiply-accumulates of two 16-bit pairs per instruction (SMLAD) on bytes widened
 * with SXTB16 (kernels/dsp/dsp_intrinsics.h). Compiled when kernels/isa.h sets
 * TRT_HAVE_DSP; on a host, against a portable C model of those instructions.
 */
#ifndef TINYRPS_KERNELS_DSP_H
#define TINYRPS_KERNELS_DSP_H

#include <stddef.h>

#include "../kernels.h"

void trt_quantize_dsp(const trt_quantize_params *p);

int trt_conv2d_dsp_accepts(const trt_conv_params *p);
size_t trt_conv2d_dsp_scratch_bytes(const trt_conv_params *p);
void trt_conv2d_dsp_prepare(trt_conv_params *p, void *scratch);
size_t trt_conv2d_dsp_temp_bytes(const trt_conv_params *p);
void trt_conv2d_dsp(const trt_conv_params *p, void *temp);
/* The convolution of p on an image already padded (or prepared: pad bytes hold -input_offset)
 * with `pitch` bytes per row, p's padding ignored; temp: trt_conv2d_dsp_block_bytes. */
size_t trt_conv2d_dsp_block_bytes(const trt_conv_params *p);
void trt_conv2d_dsp_on_image(const trt_conv_params *p, const int8_t *image, int32_t pitch, int8_t *out, void *temp);

/* depthwise, one input channel, a window over 10 taps */
int trt_depthwise_long_window_dsp_accepts(const trt_conv_params *p);
size_t trt_depthwise_long_window_dsp_scratch_bytes(const trt_conv_params *p);
void trt_depthwise_long_window_dsp_prepare(trt_conv_params *p, void *scratch);
size_t trt_depthwise_long_window_dsp_temp_bytes(const trt_conv_params *p);
void trt_depthwise_long_window_dsp(const trt_conv_params *p, void *temp);

int trt_depthwise_dsp_accepts(const trt_conv_params *p);
size_t trt_depthwise_dsp_scratch_bytes(const trt_conv_params *p);
void trt_depthwise_dsp_prepare(trt_conv_params *p, void *scratch);
size_t trt_depthwise_dsp_temp_bytes(const trt_conv_params *p);
void trt_depthwise_conv2d_dsp(const trt_conv_params *p, void *temp);

/* depthwise, any channels, multiplier, stride, dilation, padding */
int trt_depthwise_channels_dsp_accepts(const trt_conv_params *p);
size_t trt_depthwise_channels_dsp_scratch_bytes(const trt_conv_params *p);
void trt_depthwise_channels_dsp_prepare(trt_conv_params *p, void *scratch);
size_t trt_depthwise_channels_dsp_temp_bytes(const trt_conv_params *p);
void trt_depthwise_channels_dsp(const trt_conv_params *p, void *temp);

int trt_transpose_conv2d_dsp_accepts(const trt_conv_params *p);
size_t trt_transpose_conv2d_dsp_scratch_bytes(const trt_conv_params *p);
void trt_transpose_conv2d_dsp_prepare(trt_conv_params *p, void *scratch);
size_t trt_transpose_conv2d_dsp_temp_bytes(const trt_conv_params *p);
void trt_transpose_conv2d_dsp(const trt_conv_params *p, void *temp);

void trt_max_pool2d_dsp(const trt_max_pool_params *p);

size_t trt_linear_dsp_scratch_bytes(const trt_linear_params *p);
void trt_linear_dsp_prepare(trt_linear_params *p, void *scratch);   /* the weight sums, small_accumulators */
size_t trt_linear_dsp_temp_bytes(const trt_linear_params *p);
void trt_linear_dsp(const trt_linear_params *p, void *temp);

int trt_quantized_add_dsp_accepts(const trt_add_params *p);
size_t trt_quantized_add_dsp_temp_bytes(const trt_add_params *p);
void trt_quantized_add_dsp(const trt_add_params *p, void *temp);

int trt_quantized_mul_dsp_accepts(const trt_mul_params *p);
void trt_quantized_mul_dsp(const trt_mul_params *p);

#endif
