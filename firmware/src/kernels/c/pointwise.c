/*
 * The portable elementwise operators (aten::add, sub, mul, div, hardtanh, sigmoid, tanh, abs, neg,
 * exp, pow.Tensor_Scalar, leaky_relu, hardswish, hardsigmoid, elu, dim_order_ops::_to_dim_order_copy) on any dtype and broadcast.
 *
 * Arithmetic (ExecuTorch's portable kernels): each operand is converted to the output's compute
 * type, float for a float32 output, a wide integer for an integer one (whose result then wraps to the
 * output's width, as a C++ cast does); then
 *   add a + alpha * b     sub a - alpha * b     mul a * b     div a / b (float)
 *   hardtanh min(max(a, lo), hi)   sigmoid 1 / (1 + expf(-a))   tanh tanhf(a)   abs |a|   neg -a
 *   exp expf(a)   pow powf(a, exponent)   copy a   leaky_relu a > 0 ? a : a * slope
 *   hardswish a * min(max(a + 3, 0), 6) / 6   hardsigmoid min(max(a + 3, 0), 6) / 6
 *   elu a > 0 ? a * scale : expm1f(a * input_scale) * (alpha * scale)
 * Add and sub with alpha 1 are a + b and a - b exactly (alpha * b is b); float operations are
 * float32's, one rounding each, so add, sub, mul, div, hardtanh, abs, neg and copy give the
 * reference's bits; the transcendental ones are the C library's expf, tanhf and powf.
 */
#include <math.h>

#include "kernels_c.h"
#include "../../values.h"      /* the dtype codes (tinyrps_runtime.h, which a library keeps beside values.h) */

static double load(const uint8_t *base, uint8_t dtype, size_t at) {
    switch (dtype) {
    case TRT_UINT8: return base[at];
    case TRT_INT8: return ((const int8_t *)(const void *)base)[at];
    case TRT_INT16: return ((const int16_t *)(const void *)base)[at];
    case TRT_INT32: return ((const int32_t *)(const void *)base)[at];
    case TRT_INT64: return (double)((const int64_t *)(const void *)base)[at];   /* into float: rounded once more */
    case TRT_BOOL: return base[at] != 0;
    default: return ((const float *)(const void *)base)[at];
    }
}

/* Integers exactly: an int64 does not pass through double. A float (a cast) is truncated toward zero,
 * as C++'s cast does; one beyond int64 (where that cast is undefined) saturates, NaN is 0. */
static int64_t load_int(const uint8_t *base, uint8_t dtype, size_t at) {
    if (dtype == TRT_INT64) return ((const int64_t *)(const void *)base)[at];
    const double v = load(base, dtype, at);
    if (!(v == v)) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

static void store_int(uint8_t *base, uint8_t dtype, size_t at, int64_t v) {
    switch (dtype) {   /* through uint64: the wrap is modular, never an overflow */
    case TRT_UINT8: base[at] = (uint8_t)(uint64_t)v; break;
    case TRT_INT8: ((int8_t *)(void *)base)[at] = (int8_t)(uint8_t)(uint64_t)v; break;
    case TRT_INT16: ((int16_t *)(void *)base)[at] = (int16_t)(uint16_t)(uint64_t)v; break;
    case TRT_INT32: ((int32_t *)(void *)base)[at] = (int32_t)(uint32_t)(uint64_t)v; break;
    case TRT_BOOL: base[at] = v != 0; break;
    default: ((int64_t *)(void *)base)[at] = v; break;
    }
}

static float float_op(const trt_pointwise_params *p, float a, float b) {
    switch (p->op) {
    case TRT_PW_ADD: return p->alpha == 1.0f ? a + b : a + p->alpha * b;
    case TRT_PW_SUB: return p->alpha == 1.0f ? a - b : a - p->alpha * b;
    case TRT_PW_MUL: return a * b;
    case TRT_PW_DIV: return a / b;
    case TRT_PW_HARDTANH: return a < p->lo ? p->lo : (a > p->hi ? p->hi : a);
    case TRT_PW_SIGMOID: return 1.0f / (1.0f + expf(-a));
    case TRT_PW_TANH: return tanhf(a);
    case TRT_PW_ABS: return fabsf(a);
    case TRT_PW_NEG: return -a;
    case TRT_PW_EXP: return expf(a);
    case TRT_PW_POW: return powf(a, p->exponent);
    case TRT_PW_LEAKY_RELU: return a > 0.0f ? a : a * p->alpha;
    case TRT_PW_HARDSWISH: return a * fminf(fmaxf(a + 3.0f, 0.0f), 6.0f) / 6.0f;
    case TRT_PW_HARDSIGMOID: return fminf(fmaxf(a + 3.0f, 0.0f), 6.0f) / 6.0f;
    case TRT_PW_ELU: return a > 0.0f ? a * p->hi : expm1f(a * p->exponent) * p->lo;
    default: return a;
    }
}

/* Wrapping arithmetic on the two's complement bits: what a C++ int8/int32 expression stores. */
static int64_t int_op(const trt_pointwise_params *p, int64_t a, int64_t b) {
    const uint64_t ua = (uint64_t)a, ub = (uint64_t)b, alpha = (uint64_t)p->alpha_int;
    switch (p->op) {
    case TRT_PW_ADD: return (int64_t)(ua + alpha * ub);
    case TRT_PW_SUB: return (int64_t)(ua - alpha * ub);
    case TRT_PW_MUL: return (int64_t)(ua * ub);
    case TRT_PW_HARDTANH: return a < p->lo_int ? p->lo_int : (a > p->hi_int ? p->hi_int : a);
    case TRT_PW_ABS: return a < 0 ? (int64_t)(0 - ua) : a;
    case TRT_PW_NEG: return (int64_t)(0 - ua);
    default: return a;
    }
}

void trt_pointwise_c(const trt_pointwise_params *p) {
    const int32_t rank = p->rank, last = rank - 1;
    const int is_float = p->out_dtype == TRT_FLOAT32;
    int32_t index[TRT_PORTABLE_MAX_RANK] = {0};
    size_t a_at = 0, b_at = 0, out_at = 0;   /* the positions of `index`, kept as it moves */
    for (;;) {
        /* the innermost dim, in one run */
        const int32_t n = rank > 0 ? p->sizes[last] : 1;
        const int32_t as = rank > 0 ? p->a_strides[last] : 0, bs = rank > 0 ? p->b_strides[last] : 0;
        const int32_t os = rank > 0 ? p->out_strides[last] : 0;
        for (int32_t i = 0; i < n; i++) {
            const size_t ai = a_at + (size_t)((int64_t)i * as), bi = b_at + (size_t)((int64_t)i * bs);
            const size_t oi = out_at + (size_t)((int64_t)i * os);
            if (is_float) {
                const float a = (float)load(p->a, p->a_dtype, ai);
                const float b = p->b ? (float)load(p->b, p->b_dtype, bi) : 0.0f;
                ((float *)(void *)p->output)[oi] = float_op(p, a, b);
            } else {
                const int64_t a = load_int(p->a, p->a_dtype, ai);
                const int64_t b = p->b ? load_int(p->b, p->b_dtype, bi) : 0;
                store_int(p->output, p->out_dtype, oi, int_op(p, a, b));
            }
        }
        /* the next index of the outer dims, odometer-wise */
        int32_t d = last - 1;
        for (; d >= 0; d--) {
            a_at += (size_t)p->a_strides[d];
            b_at += (size_t)p->b_strides[d];
            out_at += (size_t)p->out_strides[d];
            if (++index[d] < p->sizes[d]) break;
            a_at -= (size_t)p->a_strides[d] * (size_t)index[d];
            b_at -= (size_t)p->b_strides[d] * (size_t)index[d];
            out_at -= (size_t)p->out_strides[d] * (size_t)index[d];
            index[d] = 0;
        }
        if (d < 0) return;
    }
}
