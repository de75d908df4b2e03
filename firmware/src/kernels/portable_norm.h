/*
 * The parameters of the portable normalization kernel (kernels.h includes this):
 * aten::_native_batch_norm_legit_no_training.out and aten::native_layer_norm.out, float32. The bind
 * step (ops/portable_norm.c) checked every shape; the struct fits the largest kernel parameters
 * (144 bytes on a Cortex-M), so the per-call storage stays as it is.
 */
#ifndef TINYRPS_KERNELS_PORTABLE_NORM_H
#define TINYRPS_KERNELS_PORTABLE_NORM_H

#include <stdint.h>

#include "portable.h"

/* Which normalization a call computes. */
enum {
    TRT_NORM_BATCH,   /* per channel (dim 1), from the running mean and variance */
    TRT_NORM_LAYER    /* per row: over the dims from `split` on, from the row's own mean and variance */
};

/*
 * The input's logical index splits into a row (dims [0, split)) and a position in the row (dims
 * [split, rank), the last fastest); input and output elements are at the index's dot product with
 * their strides (any dim order). Batch norm: split 2, the row's channel is its index along dim 1.
 * Layer norm: weight and bias are indexed by the position in the row, save_mean and save_rstd by the
 * row, all dense.
 */
typedef struct {
    const float *input;
    const float *weight, *bias;          /* NULL: none (1 and 0) */
    const float *running_mean, *running_var;   /* batch norm */
    float *output;
    float *save_mean, *save_rstd;        /* layer norm: each row's mean and 1 / std */
    double eps;
    int32_t op, rank, split;
    int32_t sizes[TRT_PORTABLE_MAX_RANK];
    int32_t in_strides[TRT_PORTABLE_MAX_RANK], out_strides[TRT_PORTABLE_MAX_RANK];
} trt_norm_params;

#endif
