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

int trt_conv2d_dsp_accepts(const trt_conv_params *p);
size_t trt_conv2d_dsp_temp_bytes(const trt_conv_params *p);
/* Needs p->tap_sums and p->folded_bias (weight_sums.h). */
void trt_conv2d_dsp(const trt_conv_params *p, void *temp);

int trt_depthwise_dsp_accepts(const trt_conv_params *p);
size_t trt_depthwise_dsp_scratch_bytes(const trt_conv_params *p);
void trt_depthwise_dsp_prepare(trt_conv_params *p, void *scratch);
size_t trt_depthwise_dsp_temp_bytes(const trt_conv_params *p);
void trt_depthwise_conv2d_dsp(const trt_conv_params *p, void *temp);

void trt_max_pool2d_dsp(const trt_max_pool_params *p);

size_t trt_linear_dsp_temp_bytes(const trt_linear_params *p);
void trt_linear_dsp(const trt_linear_params *p, void *temp);

int trt_quantized_add_dsp_accepts(const trt_add_params *p);
size_t trt_quantized_add_dsp_temp_bytes(const trt_add_params *p);
void trt_quantized_add_dsp(const trt_add_params *p, void *temp);

int trt_quantized_mul_dsp_accepts(const trt_mul_params *p);
void trt_quantized_mul_dsp(const trt_mul_params *p);

#endif
