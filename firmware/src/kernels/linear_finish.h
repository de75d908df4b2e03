/*
 * The part of quantized_linear after the dot product, shared by every variant: the
 * offset terms, the bias or kernel sum, requantization (arith.h). See kernels/c/linear.c
 * for the formula of each form.
 */
#ifndef TINYRPS_LINEAR_FINISH_H
#define TINYRPS_LINEAR_FINISH_H

#include "arith.h"
#include "kernels.h"

/* Output o of one row, from dot = sum(x * w) (int32) and input_sum = sum(x) (when filter_offset != 0). */
static inline int8_t trt_linear_finish(const trt_linear_params *p, int32_t o, int32_t dot, int32_t input_sum) {
    int64_t acc;
    if (p->kernel_sum) {
        acc = (int64_t)dot + (int64_t)input_sum * p->filter_offset + p->kernel_sum[o];
    } else {
        uint32_t a = (uint32_t)dot;
        if (p->input_offset != 0) a += (uint32_t)p->input_offset * (uint32_t)p->weight_sums[o];
        a += (uint32_t)p->filter_offset * (uint32_t)input_sum;
        a += (uint32_t)p->depth * (uint32_t)p->input_offset * (uint32_t)p->filter_offset;
        if (p->bias) a += (uint32_t)p->bias[o];
        acc = trt_wrap32(a);
    }
    return trt_output_s8(acc, p->multiplier, p->shift, p->output_offset, p->activation_min, p->activation_max);
}

#endif
