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

int trt_conv2d_mve_accepts(const trt_conv_params *p);
size_t trt_conv2d_mve_scratch_bytes(const trt_conv_params *p);
void trt_conv2d_mve_prepare(trt_conv_params *p, void *scratch);
size_t trt_conv2d_mve_temp_bytes(const trt_conv_params *p);
void trt_conv2d_mve(const trt_conv_params *p, void *temp);

int trt_depthwise_mve_accepts(const trt_conv_params *p);
size_t trt_depthwise_mve_scratch_bytes(const trt_conv_params *p);
void trt_depthwise_mve_prepare(trt_conv_params *p, void *scratch);
size_t trt_depthwise_mve_temp_bytes(const trt_conv_params *p);
void trt_depthwise_conv2d_mve(const trt_conv_params *p, void *temp);

void trt_max_pool2d_mve(const trt_max_pool_params *p);
void trt_linear_mve(const trt_linear_params *p);

int trt_clone_dim_order_mve_accepts(const trt_copy_params *p);
void trt_clone_dim_order_mve(const trt_copy_params *p);

int trt_quantized_add_mve_accepts(const trt_add_params *p);
void trt_quantized_add_mve(const trt_add_params *p);
int trt_quantized_mul_mve_accepts(const trt_mul_params *p);
void trt_quantized_mul_mve(const trt_mul_params *p);
int trt_minmax_mve_accepts(const trt_minmax_params *p);
void trt_minimum_mve(const trt_minmax_params *p);
void trt_maximum_mve(const trt_minmax_params *p);
void trt_quantized_activation_mve(const trt_lut_params *p);
void trt_clamp_mve(const trt_clamp_params *p);

#endif
