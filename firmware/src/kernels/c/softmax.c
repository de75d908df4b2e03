/*
 * cortex_m::softmax.out -- int8 softmax along one dimension, output scale 1/256, zero point -128.
 *
 * Arithmetic (operators.softmax_impl), in float32 as torch computes it:
 *   x_i = (float)(q_i - input_zero_point) * input_scale
 *   p_i = exp(x_i - max_j x_j) / sum_j exp(x_j - max_j x_j)
 *   out_i = (int8) clamp(round_half_even(p_i * 256) - 128, -128, 127)
 * The division by 1/256 is exact (a power of two). torch's float softmax is its vectorised CPU
 * kernel, whose exp and summation order depend on the host's vector width (its AVX2, AVX512 and
 * scalar kernels round a few in ten million outputs differently); this kernel computes the same
 * expression with an exp good to about an ulp (below), the same on every core. The float
 * probabilities may differ from torch's in their last bits, so an int8 output may too where
 * p_i * 256 is a near-tie: 7 to 9 in 36 million random outputs (docs/runtime.md).
 */
#include "../float_round.h"
#include "kernels_c.h"

/* exp(x) for x <= 0: x = k ln2 + r, |r| <= ln2/2 (Cody-Waite: k * LN2_HI is exact), a degree-7
 * Taylor polynomial of e^r (truncation below 1e-8 relative), scaled by 2^k through the exponent
 * bits. Below -87.3 the result would be subnormal: 0, which rounds to the same int8 output. */
static float exp_nonpositive(float x) {
    const float log2e = 1.44269504f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    if (x < -87.3f) return 0.0f;
    const int32_t k = (int32_t)(x * log2e - 0.5f);           /* round to nearest, x <= 0 */
    const float kf = (float)k;
    const float r = (x - kf * ln2_hi) - kf * ln2_lo;
    float e = 1.0f / 5040.0f;
    e = e * r + 1.0f / 720.0f;
    e = e * r + 1.0f / 120.0f;
    e = e * r + 1.0f / 24.0f;
    e = e * r + 1.0f / 6.0f;
    e = e * r + 0.5f;
    e = e * r + 1.0f;
    e = e * r + 1.0f;
    union { uint32_t u; float f; } scale = {(uint32_t)(k + 127) << 23};   /* 2^k, k in [-126, 0] */
    return e * scale.f;
}

static void softmax_group(const trt_softmax_params *p, const int8_t *in, int8_t *out) {
    const int32_t n = p->length, step = p->inner;
    int32_t top = in[0];
    for (int32_t i = 1; i < n; i++)
        if (in[i * step] > top) top = in[i * step];
    const float max = (float)(top - p->input_zero_point) * p->input_scale;
    float sum = 0.0f;
    for (int32_t i = 0; i < n; i++) sum += exp_nonpositive((float)(in[i * step] - p->input_zero_point) * p->input_scale - max);
    const float inverse = 1.0f / sum;                             /* sum >= 1: the maximum's term */
    for (int32_t i = 0; i < n; i++) {
        const float prob = exp_nonpositive((float)(in[i * step] - p->input_zero_point) * p->input_scale - max) * inverse;
        float v = trt_round_half_even(prob * 256.0f) + p->output_zero_point;
        if (v < -128.0f) v = -128.0f;
        if (v > 127.0f) v = 127.0f;
        out[i * step] = (int8_t)(int32_t)v;
    }
}

void trt_softmax_c(const trt_softmax_params *p) {
    const size_t group = (size_t)p->length * (size_t)p->inner;
    for (int32_t o = 0; o < p->outer; o++)
        for (int32_t j = 0; j < p->inner; j++)
            softmax_group(p, p->input + (size_t)o * group + (size_t)j, p->output + (size_t)o * group + (size_t)j);
}
