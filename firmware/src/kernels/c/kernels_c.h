/*
 * The plain-C kernels: portable C11, the fallback every build has and the baseline
 * the fast variants are measured against. One kernel per file.
 */
#ifndef TINYRPS_KERNELS_C_H
#define TINYRPS_KERNELS_C_H

#include "../kernels.h"

void trt_quantize_c(const trt_quantize_params *p);
void trt_dequantize_c(const trt_dequantize_params *p);
/* Needs p->tap_sums and p->folded_bias (weight_sums.h). */
void trt_conv2d_c(const trt_conv_params *p);
void trt_depthwise_conv2d_c(const trt_conv_params *p);
void trt_max_pool2d_c(const trt_max_pool_params *p);
/* Needs p->dequantized (avg_pool_finish.h); temp: trt_avg_pool2d_c_temp_bytes. */
size_t trt_avg_pool2d_c_temp_bytes(const trt_avg_pool_params *p);
void trt_avg_pool2d_c(const trt_avg_pool_params *p, void *temp);
/* Needs p->tap_sums (weight_sums.h). */
void trt_transpose_conv2d_c(const trt_conv_params *p);
/* Bias form with an input offset needs p->weight_sums (weight_sums.h). */
void trt_linear_c(const trt_linear_params *p);
void trt_clone_dim_order_c(const trt_copy_params *p);

/* The elementwise and data-movement kernels (elementwise.h). */
void trt_quantized_add_c(const trt_add_params *p);
void trt_quantized_mul_c(const trt_mul_params *p);
void trt_quantized_div_c(const trt_div_params *p);
void trt_minimum_c(const trt_minmax_params *p);
void trt_maximum_c(const trt_minmax_params *p);
void trt_quantized_activation_c(const trt_lut_params *p);
void trt_clamp_c(const trt_clamp_params *p);
void trt_pointwise_c(const trt_pointwise_params *p);
void trt_reduce_c(const trt_reduce_params *p);
void trt_matmul_f32_c(const trt_matmul_params *p);
void trt_create_c(const trt_create_params *p);
void trt_select_c(const trt_select_params *p);
void trt_gather_c(const trt_gather_params *p);
void trt_norm_c(const trt_norm_params *p);
void trt_softmax_c(const trt_softmax_params *p);
void trt_pad_c(const trt_pad_params *p);
void trt_cat_c(const trt_cat_params *p);
void trt_reshape_copy_c(const trt_reshape_params *p);
void trt_transpose_c(const trt_copy_params *p);

/* The portable window kernels (portable_window.h). */
void trt_window_pool_c(const trt_window_pool_params *p);
void trt_float_conv_c(const trt_float_conv_params *p);

#endif
