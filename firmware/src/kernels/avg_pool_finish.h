/*
 * What every quantized_avg_pool2d variant shares (the arithmetic: kernels/c/avg_pool2d.c): the
 * dequantization table, the window of an output pixel, and the float32 steps after the sum.
 */
#ifndef TINYRPS_AVG_POOL_FINISH_H
#define TINYRPS_AVG_POOL_FINISH_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

/* The dequantized workspace: ((float)q - (float)zero_point) * scale at q + 128. */
static inline size_t trt_avg_pool_table_bytes(void) { return 256 * sizeof(float); }

static inline void trt_avg_pool_prepare_table(trt_avg_pool_params *p, void *scratch) {
    float *table = scratch;
    for (int32_t q = -128; q < 128; q++) table[q + 128] = ((float)q - (float)p->zero_point) * p->scale;
    p->dequantized = table;
}

/* Output pixel (oy, ox)'s in-bounds rows [w[0], w[1]) and columns [w[2], w[3]). */
static inline void trt_avg_pool_window(const trt_avg_pool_params *p, int32_t oy, int32_t ox, int32_t w[4]) {
    const int32_t y0 = oy * p->stride_h - p->pad_h, x0 = ox * p->stride_w - p->pad_w;
    w[0] = y0 < 0 ? 0 : y0;
    w[1] = y0 + p->kernel_h > p->in_h ? p->in_h : y0 + p->kernel_h;
    w[2] = x0 < 0 ? 0 : x0;
    w[3] = x0 + p->kernel_w > p->in_w ? p->in_w : x0 + p->kernel_w;
}

/* Round half to even; |v| <= 256 here (an average of dequantized values over the scale). */
static inline float trt_avg_pool_round(float v) {
    const float whole = (float)(int32_t)v, frac = v - whole;
    const int32_t odd = (int32_t)whole & 1;
    if (frac > 0.5f || (frac == 0.5f && odd)) return whole + 1.0f;
    if (frac < -0.5f || (frac == -0.5f && odd)) return whole - 1.0f;
    return whole;
}

/* clamp(round_half_even(sum / count / scale) + zero_point, -128, 127), each step in float32. */
static inline int8_t trt_avg_pool_quantize(float sum, int32_t count, float scale, int32_t zero_point) {
    float v = trt_avg_pool_round(sum / (float)count / scale) + (float)zero_point;
    if (v < -128.0f) v = -128.0f;
    if (v > 127.0f) v = 127.0f;
    return (int8_t)(int32_t)v;
}

#endif
