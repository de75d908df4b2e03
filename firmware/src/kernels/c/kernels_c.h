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

#endif
