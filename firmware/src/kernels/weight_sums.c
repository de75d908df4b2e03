/*
 * Weight sums for offset folding (weight_sums.h). Load time only: plain C.
 */
#include "weight_sums.h"

#include <string.h>

#include "arith.h"

/* Words of a row whose biased bytes two 16-bit lanes can sum before either could carry: 2 * 255
 * per word and lane, 128 * 510 < 65536. */
#define LANE_WORDS 128

/* sum(a[i]) over n int8 values, a word at a time: x ^ 0x80 is x + 128 as an unsigned byte, so
 * sum(a) = sum of the biased bytes - 128 n, taken modulo 2^32 like trt_sum_s8 (|sum| <= 128 n
 * fits int32 for any row the runtime takes). The weights are most of a program's bytes
 * (TinyRPS's first linear layer: 401 kB): byte by byte their sums were most of the load on the
 * cores whose kernels need them. */
static int32_t row_sum(const int8_t *a, int32_t n) {
    uint32_t total = 0;
    int32_t i = 0;
    while (n - i >= 4) {
        const int32_t words = (n - i) / 4 < LANE_WORDS ? (n - i) / 4 : LANE_WORDS;
        uint32_t lanes = 0;
        for (int32_t k = 0; k < words; k++, i += 4) {
            uint32_t w;
            memcpy(&w, a + i, sizeof w);
            w ^= 0x80808080u;
            lanes += (w & 0x00FF00FFu) + ((w >> 8) & 0x00FF00FFu);
        }
        total += (lanes & 0xFFFFu) + (lanes >> 16);
    }
    for (; i < n; i++) total += (uint32_t)(a[i] + 128);
    return trt_wrap32(total - 128u * (uint32_t)n);
}

static int is_depthwise(const trt_conv_params *p) { return p->depth_multiplier > 0; }

/* Weight of output channel oc, tap t (ky * kernel_w + kx), input channel ic of its group. */
static int32_t conv_weight(const trt_conv_params *p, int32_t oc, int32_t t, int32_t ic) {
    if (is_depthwise(p)) return p->weights[(size_t)t * p->out_c + oc];
    return p->weights[((size_t)oc * p->kernel_h * p->kernel_w + t) * p->kernel_c + ic];
}

size_t trt_conv_sums_bytes(const trt_conv_params *p) {
    return ((size_t)p->out_c * p->kernel_h * p->kernel_w + (size_t)p->out_c) * sizeof(int32_t);
}

void trt_conv_prepare_sums(trt_conv_params *p, void *scratch) {
    const int32_t taps = p->kernel_h * p->kernel_w;
    int32_t *tap_sums = scratch, *folded = tap_sums + (size_t)p->out_c * taps;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        int32_t window = 0;
        for (int32_t t = 0; t < taps; t++) {
            /* a tap's input channels are one run of bytes in OHWI; a depthwise tap is one weight */
            const int32_t s = is_depthwise(p) ? conv_weight(p, oc, t, 0)
                                              : row_sum(p->weights + ((size_t)oc * taps + t) * p->kernel_c, p->kernel_c);
            tap_sums[(size_t)oc * taps + t] = s;
            window += s;
        }
        uint32_t f = (uint32_t)p->input_offset * (uint32_t)window + (uint32_t)(p->bias ? p->bias[oc] : 0);
        folded[oc] = trt_wrap32(f);
    }
    p->tap_sums = tap_sums;
    p->folded_bias = folded;
}

size_t trt_conv_folded_bytes(const trt_conv_params *p) { return (size_t)p->out_c * sizeof(int32_t); }

void trt_conv_prepare_folded(trt_conv_params *p, void *scratch) {
    const int32_t window = p->kernel_h * p->kernel_w * p->kernel_c;
    int32_t *folded = scratch;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const uint32_t sum = (uint32_t)row_sum(p->weights + (size_t)oc * window, window);
        folded[oc] = trt_wrap32((uint32_t)p->input_offset * sum + (uint32_t)(p->bias ? p->bias[oc] : 0));
    }
    p->tap_sums = NULL;
    p->folded_bias = folded;
}

size_t trt_linear_sums_bytes(const trt_linear_params *p) {
    return p->kernel_sum || p->input_offset == 0 ? 0 : (size_t)p->out_features * sizeof(int32_t);
}

void trt_linear_prepare_sums(trt_linear_params *p, void *scratch) {
    if (trt_linear_sums_bytes(p) == 0) return;
    int32_t *sums = scratch;
    for (int32_t o = 0; o < p->out_features; o++) sums[o] = row_sum(p->weights + (size_t)o * p->depth, p->depth);
    p->weight_sums = sums;
}

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* trt_linear_accumulator_bound's formula, given sum |w| of the row. */
static int64_t bound_of(const trt_linear_params *p, int32_t o, int64_t abs_sum) {
    const int64_t depth_offset = (int64_t)p->depth * abs64(p->filter_offset);
    int64_t bound = 128 * abs_sum + 128 * depth_offset;
    if (p->kernel_sum) return bound + abs64(p->kernel_sum[o]);
    /* input_offset * (sum w + depth * filter_offset) + bias, the terms of the bias form */
    bound += abs64(p->input_offset) * (abs_sum + depth_offset);
    return p->bias ? bound + abs64(p->bias[o]) : bound;
}

int64_t trt_linear_accumulator_bound(const trt_linear_params *p, int32_t o) {
    return bound_of(p, o, trt_abs_sum_s8(p->weights + (size_t)o * p->depth, p->depth, 1));
}

int trt_linear_accumulators_below(const trt_linear_params *p, int32_t left, int64_t limit) {
    /* The bound grows with sum |w|, which is at most 128 depth: when the bound at that sum is below
     * the limit, so is the row's own, and its weights need not be read. A layer's rows are most of
     * a program's bytes (TinyRPS's first linear layer: 401 kB), so reading them all made most of
     * the load's cost, for a decision that the shape alone settles in the usual layers. */
    for (int32_t o = 0; o < p->out_features; o++) {
        if (bound_of(p, o, 128 * (int64_t)p->depth) << left < limit) continue;
        if (trt_linear_accumulator_bound(p, o) << left >= limit) return 0;
    }
    return 1;
}
