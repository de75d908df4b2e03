/*
 * The parameters of the ExecuTorch Cortex-M operators' kernels, shared by every
 * variant (kernels/c, kernels/dsp, kernels/mve; each declares its kernels in its own
 * header).
 *
 * Each kernel trusts its parameters: the operator's bind step (ops/) validated every
 * size, pointer range, offset and shift when the program was loaded. Layouts are
 * the ones the Cortex-M backend emits: activations NHWC (channels-last), conv
 * weights OHWI, depthwise weights 1HWO, linear weights [out, in], all dense, read in
 * place from the program. The arithmetic every variant reproduces, bit for bit, is
 * stated once in arith.h; each kernel file restates its operator's formula at its top.
 */
#ifndef TINYRPS_KERNELS_H
#define TINYRPS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Longest dot product a kernel accumulates in int32: 65536 * 128 * 128 < 2^31, so the
 * int8 x int8 sums never overflow. The bind steps (ops/) reject longer reductions. */
#define TRT_MAX_REDUCTION 65536
/* Largest depthwise window (kernel_h * kernel_w), e.g. 11x11; the bind steps reject larger. */
#define TRT_MAX_DEPTHWISE_TAPS 121
/* Largest transposed-convolution window (kernel_h * kernel_w); the bind step rejects larger. */
#define TRT_MAX_TRANSPOSE_TAPS 121

typedef struct {
    const float *input;
    int8_t *output;
    uint32_t count;
    float inv_scale;     /* (float)(1.0 / scale), as torch multiplies a float32 tensor by it */
    float zero_point;
    float quant_min, quant_max;
} trt_quantize_params;

typedef struct {
    const int8_t *input;
    float *output;
    uint32_t count;
    float scale;         /* (float)scale */
    float zero_point;
} trt_dequantize_params;

/* Shared by quantized_conv2d and quantized_depthwise_conv2d. */
typedef struct {
    const int8_t *input;          /* [batches, in_h, in_w, in_c] */
    const int8_t *weights;        /* conv: [out_c, kernel_h, kernel_w, kernel_c]; depthwise: [1, kh, kw, out_c] */
    const int32_t *bias;          /* [out_c] or NULL */
    const int32_t *multipliers;   /* [out_c] */
    const int32_t *shifts;        /* [out_c] */
    /* Arena workspace, filled once at load by the chosen variant's prepare step:
     * tap_sums [out_c, kernel_h * kernel_w]: per output channel, the weight sum of each tap;
     * folded_bias [out_c]: bias + input_offset * (sum of the whole window's weights), mod 2^32;
     * packed_weights: a variant's own arrangement of the (small) weights, e.g. one
     *   16-byte vector of taps per output channel for the one-input-channel depthwise case. */
    const int32_t *tap_sums;
    const int32_t *folded_bias;
    const int8_t *packed_weights;
    int32_t small_accumulators;   /* prepared: every channel's accumulator stays below 2^30 (dsp_requantize.h) */
    const int8_t *vector_weights; /* prepared by the Helium convolution for windows of at most 64 bytes:
                                   * [out_c rounded up to even][window rounded up to 16], zero-filled
                                   * (the weights themselves when they have that layout) */
    /* with vector_weights: the Helium convolution's loop over them, reached through this pointer so
     * that a build none of whose layers has a short window (a deploy library) links none of them */
    void (*short_dots)(int32_t steps, const int8_t *x0, const int8_t *x1, const int8_t *x2, const int8_t *w,
                       int32_t channels, int32_t *acc);
    int8_t *output;               /* [batches, out_h, out_w, out_c] */
    int32_t batches, in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t kernel_h, kernel_w, kernel_c;   /* kernel_c: input channels per group */
    int32_t groups;                         /* conv: in_c / kernel_c */
    int32_t depth_multiplier;               /* depthwise: out_c / in_c */
    int32_t stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
    int32_t input_offset, output_offset;
    int32_t activation_min, activation_max;
    /* A 2x2 max pool at stride 2 fused into the layer at load (the Helium convolution:
     * trt_conv2d_mve_fuse_pool): the pooled output's rows and columns, written at the start of
     * `output`; 0: no pool. */
    int32_t pooled_h, pooled_w;
} trt_conv_params;

typedef struct {
    const int8_t *input;          /* [batches, in_h, in_w, channels] */
    int8_t *output;               /* [batches, out_h, out_w, channels] */
    int32_t batches, in_h, in_w, channels, out_h, out_w;
    int32_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
    int32_t activation_min, activation_max;
} trt_max_pool_params;

/* quantized_avg_pool2d: the reference's float32 steps (kernels/c/avg_pool2d.c). */
typedef struct {
    const int8_t *input;          /* [batches, in_h, in_w, channels] */
    int8_t *output;               /* [batches, out_h, out_w, channels] */
    const float *dequantized;     /* workspace [256]: ((float)q - zero_point) * scale at q + 128 */
    int32_t batches, in_h, in_w, channels, out_h, out_w;
    int32_t kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w;
    int32_t zero_point;
    float scale;                  /* (float)(multiplier * 2^shift / 2^31) */
} trt_avg_pool_params;

typedef struct {
    const int8_t *input;          /* [rows, depth] */
    const int8_t *weights;        /* [out_features, depth] */
    const int32_t *bias;          /* [out_features] or NULL (DSP / scalar form) */
    const int32_t *kernel_sum;    /* [out_features] or NULL (MVE form: bias and offsets folded in) */
    const int32_t *weight_sums;   /* workspace [out_features]: row sums of weights (bias form only) */
    int8_t *output;               /* [rows, out_features] */
    int32_t rows, depth, out_features;
    int32_t input_offset, filter_offset, output_offset;
    int32_t multiplier, shift;
    int32_t activation_min, activation_max;
    int32_t kernel_sum_fits;      /* prepared (Helium): the kernel_sum form's sum fits int32 for every input */
    int32_t small_accumulators;   /* prepared (DSP): every accumulator stays below 2^30 (dsp_requantize.h) */
} trt_linear_params;

/* quantized_batch_matmul: per batch, a linear layer in bias form (kernels/batch_matmul.h). */
typedef struct {
    trt_linear_params product;    /* one batch: lhs [M, K] times rhs_transposed [N, K]^T; pointers set per batch */
    const int8_t *lhs;            /* [batches, M, K] */
    const int8_t *rhs;            /* [batches, N, K]: a constant or an activation */
    int8_t *output;               /* [batches, M, N] */
    const int32_t *rhs_sums;      /* constant rhs with an lhs offset: [batches, N] row sums, prepared at load */
    int32_t batches;
    int rhs_constant;
} trt_batch_matmul_params;

#define TRT_COPY_MAX_RANK 6
typedef struct {
    const uint8_t *input;
    uint8_t *output;
    int32_t rank, elem_size;
    int32_t sizes[TRT_COPY_MAX_RANK];
    int32_t in_strides[TRT_COPY_MAX_RANK];   /* elements */
    int32_t out_strides[TRT_COPY_MAX_RANK];
} trt_copy_params;

#include "elementwise.h"   /* quantized_add, quantized_mul, ... the elementwise and data-movement kernels */
#include "portable.h"      /* the portable operators: float and integer arithmetic, reductions, copies */
#include "portable_window.h"   /* the portable pools and float convolution */
#include "portable_data.h" /* the portable matrix products, creation, selection and gathering operators */
#include "portable_norm.h" /* the portable batch and layer normalizations */

#endif
