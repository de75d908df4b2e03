/*
 * Load-time precomputation shared by the kernel variants: the weight sums that fold the
 * input offset out of the hot loops, sum((x + off) * w) = sum(x * w) + off * sum(w).
 * All sums are modulo 2^32, as torch's int32 tensors wrap.
 */
#ifndef TINYRPS_WEIGHT_SUMS_H
#define TINYRPS_WEIGHT_SUMS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* Bytes for tap_sums [out_c * kernel_h * kernel_w] and folded_bias [out_c] (int32). */
size_t trt_conv_sums_bytes(const trt_conv_params *p);
/* Fill them in `scratch` and point p->tap_sums / p->folded_bias there. Works for
 * quantized_conv2d (OHWI weights) and quantized_depthwise_conv2d (1HWO weights). */
void trt_conv_prepare_sums(trt_conv_params *p, void *scratch);

/* Bytes for folded_bias [out_c] alone (int32), for kernels whose windows are always whole. */
size_t trt_conv_folded_bytes(const trt_conv_params *p);
/* Fill it in `scratch` and point p->folded_bias there (p->tap_sums NULL); OHWI weights. */
void trt_conv_prepare_folded(trt_conv_params *p, void *scratch);

/* Bias form of quantized_linear: weight_sums [out_features], only needed with an input offset. */
size_t trt_linear_sums_bytes(const trt_linear_params *p);
void trt_linear_prepare_sums(trt_linear_params *p, void *scratch);

/* The largest |accumulator| any input can give quantized_linear's output o, before its wrap to
 * int32 in the bias form: 128 sum|w| + 128 depth |filter_offset| + |kernel_sum or bias + offset terms|. */
int64_t trt_linear_accumulator_bound(const trt_linear_params *p, int32_t o);

/* Whether trt_linear_accumulator_bound(p, o) << left < limit for every output o (left < 30): the
 * same answer as computing each bound, but a row's weights are read only when its bound with
 * every |w| = 128 reaches the limit. */
int trt_linear_accumulators_below(const trt_linear_params *p, int32_t left, int64_t limit);

#endif
