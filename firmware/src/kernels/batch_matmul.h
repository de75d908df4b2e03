/*
 * cortex_m::quantized_batch_matmul.out -- int8 batched matrix product, for every variant.
 *
 * Arithmetic (operators.quantized_batch_matmul_impl), per batch b:
 *   acc[m, n] = sum over k of (lhs[b, m, k] + lhs_offset) * (rhs_transposed[b, n, k] + rhs_offset)
 *   out[b, m, n] = clamp(requantize(acc, multiplier, shift) + output_zero_point, -128, 127)
 * The reference multiplies in float32 (torch.bmm) and casts to int32: the exact integer sum
 * whenever every partial sum stays within 2^24 (float32's exact integers), which is what this
 * computes. That is a linear layer in its bias form (kernels/c/linear.c) with lhs as the input
 * rows, rhs_transposed[b] as the weights, input_offset = lhs_offset, filter_offset = rhs_offset
 * and no bias: each batch runs the variant's linear kernel. The rhs row sums that fold the lhs
 * offset come from the load (a constant rhs) or are summed per call into the working memory
 * (an activation).
 */
#ifndef TINYRPS_BATCH_MATMUL_H
#define TINYRPS_BATCH_MATMUL_H

#include <stddef.h>
#include <stdint.h>

#include "arith.h"
#include "kernels.h"

typedef void (*trt_linear_kernel)(const trt_linear_params *p, void *temp);

/* The per-call sums of an activation rhs (int32 [N]) come first in the working memory. */
static inline size_t trt_batch_matmul_sums_bytes(const trt_batch_matmul_params *p) {
    return p->product.input_offset != 0 && !p->rhs_constant ? ((size_t)p->product.out_features * 4 + 15) & ~(size_t)15 : 0;
}

static inline size_t trt_batch_matmul_scratch_bytes(const trt_batch_matmul_params *p) {
    return p->product.input_offset != 0 && p->rhs_constant ? (size_t)p->batches * p->product.out_features * 4 : 0;
}

static inline void trt_batch_matmul_row_sums(const int8_t *rhs, int32_t rows, int32_t depth, int32_t *sums) {
    for (int32_t n = 0; n < rows; n++) sums[n] = trt_sum_s8(rhs + (size_t)n * depth, depth);
}

static inline void trt_batch_matmul_prepare(trt_batch_matmul_params *p, void *scratch) {
    if (!scratch) return;
    const size_t per_batch = (size_t)p->product.out_features * p->product.depth;
    int32_t *sums = scratch;
    for (int32_t b = 0; b < p->batches; b++)
        trt_batch_matmul_row_sums(p->rhs + b * per_batch, p->product.out_features, p->product.depth,
                                  sums + (size_t)b * p->product.out_features);
    p->rhs_sums = sums;
}

static inline void trt_batch_matmul_run(const trt_batch_matmul_params *p, void *temp, trt_linear_kernel linear) {
    const trt_linear_params *q = &p->product;
    const size_t lhs_step = (size_t)q->rows * q->depth, rhs_step = (size_t)q->out_features * q->depth;
    const size_t out_step = (size_t)q->rows * q->out_features, sums_bytes = trt_batch_matmul_sums_bytes(p);
    int32_t *call_sums = sums_bytes ? temp : NULL;
    trt_linear_params product = *q;
    for (int32_t b = 0; b < p->batches; b++) {
        product.input = p->lhs + b * lhs_step;
        product.weights = p->rhs + b * rhs_step;
        product.output = p->output + b * out_step;
        if (call_sums) {
            trt_batch_matmul_row_sums(product.weights, q->out_features, q->depth, call_sums);
            product.weight_sums = call_sums;
        } else if (p->rhs_sums) {
            product.weight_sums = p->rhs_sums + (size_t)b * q->out_features;
        }
        linear(&product, temp ? (uint8_t *)temp + sums_bytes : NULL);
    }
}

#endif
