/*
 * The prepared workspace of the DSP depthwise kernels for one input channel (depthwise_conv2d.c,
 * depthwise_long_window.c): they differ only in how many pairs of taps a channel's weights are
 * padded to (at least five for the short unrolled loop; runs of four for the long window).
 *
 * Layout: folded bias [out_c] (bias + input_offset * sum(w), mod 2^32), packed weights
 * [out_c][pairs] (taps 2j and 2j + 1 as the low and the high halfword; the pairs past the window
 * hold zero weights), tap offsets in the padded image [pairs * 2] (taps past the window read tap
 * 0), the short requantization's constants [out_c] (dsp_requantize.h). small_accumulators says
 * whether every channel's accumulator stays below 2^30, so that the short requantization is exact.
 */
#ifndef TINYRPS_DSP_DEPTHWISE_PACK_H
#define TINYRPS_DSP_DEPTHWISE_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "../arith.h"
#include "../kernels.h"
#include "dsp_requantize.h"

static inline uint32_t trt_dsp_halfwords(int32_t lo, int32_t hi) { return ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16); }

static inline size_t trt_dsp_one_channel_scratch_bytes(const trt_conv_params *p, int32_t pairs) {
    return (size_t)p->out_c * sizeof(int32_t) + (size_t)p->out_c * pairs * sizeof(uint32_t) +
           (size_t)pairs * 2 * sizeof(int32_t) + (size_t)p->out_c * sizeof(trt_dsp_requant);
}

/* Fills the workspace at `scratch` for `pairs` pairs of taps a channel and points p's
 * folded_bias and packed_weights at it; `pitch`: bytes per row of the padded image. */
static inline void trt_dsp_one_channel_pack(trt_conv_params *p, void *scratch, int32_t pairs, int32_t pitch) {
    const int32_t n = p->kernel_h * p->kernel_w;
    int32_t *folded = scratch;
    uint32_t *packed = (uint32_t *)(folded + p->out_c);
    int32_t *offsets = (int32_t *)(packed + (size_t)p->out_c * pairs);
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        uint32_t sum = 0;
        for (int32_t j = 0; j < pairs; j++) {
            const int32_t lo = 2 * j < n ? p->weights[(size_t)(2 * j) * p->out_c + oc] : 0;
            const int32_t hi = 2 * j + 1 < n ? p->weights[(size_t)(2 * j + 1) * p->out_c + oc] : 0;
            packed[(size_t)oc * pairs + j] = trt_dsp_halfwords(lo, hi);
            sum += (uint32_t)lo + (uint32_t)hi;
        }
        folded[oc] = trt_wrap32(sum * (uint32_t)p->input_offset + (uint32_t)(p->bias ? p->bias[oc] : 0));
    }
    for (int32_t t = 0; t < 2 * pairs; t++)
        offsets[t] = t < n ? (t / p->kernel_w) * pitch + t % p->kernel_w : 0;
    trt_dsp_requant *requant = (trt_dsp_requant *)(void *)(offsets + 2 * pairs);
    p->small_accumulators = 1;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        requant[oc] = trt_dsp_requant_of(p->multipliers[oc], p->shifts[oc] > 0 ? 0 : p->shifts[oc]);
        if (!trt_dsp_accumulator_fits(trt_abs_sum_s8(p->weights + oc, n, p->out_c), 128, folded[oc], p->shifts[oc]))
            p->small_accumulators = 0;
    }
    p->folded_bias = folded;
    p->packed_weights = (const int8_t *)packed;
}

#endif
