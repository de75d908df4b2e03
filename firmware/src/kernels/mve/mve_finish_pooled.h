/*
 * One output pixel of a fused 2x2 max pool, in assembly (conv2d.c): for each group of four
 * channels, the maximum of four pixels' sums, then one requantization.
 *
 * Arithmetic: the lane-wise maximum of the four pixels' sums (VMAX.S32), the folded bias, then
 * trt_mve_output_per_lane's steps and VSTRB.32: with every multiplier >= 0 and no sum plus bias
 * able to leave int32 (checked when the pool was fused: trt_mve_fuse_pool), the requantization is
 * non-decreasing, so requantizing the maximum gives the maximum of the requantized values, which
 * the pool would have taken. The same four bases make one pixel's plain output (the maximum of a
 * value with itself).
 *
 * Where the sums are is the caller's layout: group g's channel j of pixel i is the word at
 * base[i] + offsets[j] + g * step.
 */
#ifndef TINYRPS_MVE_FINISH_POOLED_H
#define TINYRPS_MVE_FINISH_POOLED_H

#include <stdint.h>

typedef struct {
    const int32_t *base[4];             /* 0: the four pixels' sums */
    int8_t *out;                        /* 16 */
    const int32_t *folded, *multipliers, *shifts;   /* 20, 24, 28 */
    int32_t groups, output_offset, act_min, act_max; /* 32 .. 44 */
    int32_t offsets[4];                 /* 48: words from a base to a group's four channels */
    int32_t step;                       /* 64: words from one group to the next */
} trt_pooled_job;

void trt_mve_finish_pooled(const trt_pooled_job *job);

#endif
