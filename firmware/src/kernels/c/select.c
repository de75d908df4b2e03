/*
 * The portable selection operators: aten::eq, ne, lt, le, gt, ge (Scalar_out, Tensor_out), where.self_out
 * and log1p.out, on any dtype, broadcast and dim order.
 *
 * Arithmetic (ExecuTorch's portable kernels): a comparison converts both operands to its compute type,
 * float32 when either is a float, else a wide integer (exact for every integer dtype), and writes 1 or 0
 * in the output's dtype (C's comparisons: any with a NaN is false, but ne); where writes cond ? a : b
 * converted to the output's dtype (a float truncated into an integer, an integer wrapped to its width, as
 * C++'s casts do); log1p is the C library's log1pf of the operand as float32.
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
    case TRT_INT64: return (double)((const int64_t *)(const void *)base)[at];
    case TRT_BOOL: return base[at] != 0;
    default: return ((const float *)(const void *)base)[at];
    }
}

/* Integers exactly (an int64 does not pass through double); a float truncated toward zero, saturating
 * beyond int64, NaN 0 (where the C++ cast is undefined). */
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

static void store_float(uint8_t *base, uint8_t dtype, size_t at, float v) {
    if (dtype == TRT_FLOAT32) ((float *)(void *)base)[at] = v;
    else if (dtype == TRT_BOOL) base[at] = v != 0.0f;
    else store_int(base, dtype, at, load_int((const uint8_t *)&v, TRT_FLOAT32, 0));
}

static int compare_float(uint8_t op, float a, float b) {
    switch (op) {
    case TRT_SEL_EQ: return a == b;
    case TRT_SEL_NE: return a != b;
    case TRT_SEL_LT: return a < b;
    case TRT_SEL_LE: return a <= b;
    case TRT_SEL_GT: return a > b;
    default: return a >= b;
    }
}

static int compare_int(uint8_t op, int64_t a, int64_t b) {
    switch (op) {
    case TRT_SEL_EQ: return a == b;
    case TRT_SEL_NE: return a != b;
    case TRT_SEL_LT: return a < b;
    case TRT_SEL_LE: return a <= b;
    case TRT_SEL_GT: return a > b;
    default: return a >= b;
    }
}

/* One output element from the operands' elements at a_at, b_at and c_at. */
static void element(const trt_select_params *p, size_t a_at, size_t b_at, size_t c_at, size_t out_at) {
    if (p->op == TRT_SEL_LOG1P) {
        store_float(p->output, p->out_dtype, out_at, log1pf((float)load(p->a, p->a_dtype, a_at)));
    } else if (p->op == TRT_SEL_WHERE) {
        const int take_a = p->cond[c_at] != 0;
        const uint8_t *base = take_a ? p->a : p->b;
        const uint8_t dtype = take_a ? p->a_dtype : p->b_dtype;
        const size_t at = take_a ? a_at : b_at;
        if (p->out_dtype == TRT_FLOAT32) store_float(p->output, TRT_FLOAT32, out_at, (float)load(base, dtype, at));
        else store_int(p->output, p->out_dtype, out_at, load_int(base, dtype, at));
    } else if (p->float_compute) {
        const float a = (float)load(p->a, p->a_dtype, a_at);
        const float b = p->b_is_scalar ? p->u.scalar.f : (float)load(p->b, p->b_dtype, b_at);
        store_int(p->output, p->out_dtype, out_at, compare_float(p->op, a, b));
    } else {
        const int64_t a = load_int(p->a, p->a_dtype, a_at);
        const int64_t b = p->b_is_scalar ? p->u.scalar.i : load_int(p->b, p->b_dtype, b_at);
        store_int(p->output, p->out_dtype, out_at, compare_int(p->op, a, b));
    }
}

void trt_select_c(const trt_select_params *p) {
    const int32_t rank = p->rank, last = rank - 1;
    const int32_t *c_strides = p->op == TRT_SEL_WHERE ? p->u.cond_strides : p->b_strides;   /* unread but where */
    int32_t index[TRT_PORTABLE_MAX_RANK] = {0};
    size_t a_at = 0, b_at = 0, c_at = 0, out_at = 0;   /* the positions of `index`, kept as it moves */
    for (;;) {
        const int32_t n = rank > 0 ? p->sizes[last] : 1;
        for (int32_t i = 0; i < n; i++) {
            const int64_t k = i;
            element(p, a_at + (size_t)(rank > 0 ? k * p->a_strides[last] : 0),
                    b_at + (size_t)(rank > 0 ? k * p->b_strides[last] : 0),
                    c_at + (size_t)(rank > 0 ? k * c_strides[last] : 0),
                    out_at + (size_t)(rank > 0 ? k * p->out_strides[last] : 0));
        }
        int32_t d = last - 1;   /* the next index of the outer dims, odometer-wise */
        for (; d >= 0; d--) {
            a_at += (size_t)p->a_strides[d];
            b_at += (size_t)p->b_strides[d];
            c_at += (size_t)c_strides[d];
            out_at += (size_t)p->out_strides[d];
            if (++index[d] < p->sizes[d]) break;
            a_at -= (size_t)p->a_strides[d] * (size_t)index[d];
            b_at -= (size_t)p->b_strides[d] * (size_t)index[d];
            c_at -= (size_t)c_strides[d] * (size_t)index[d];
            out_at -= (size_t)p->out_strides[d] * (size_t)index[d];
            index[d] = 0;
        }
        if (d < 0) return;
    }
}
