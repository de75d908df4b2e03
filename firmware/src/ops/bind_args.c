/*
 * Checking kernel-call arguments against operator schemas (bind_args.h).
 *
 * Binding checks kinds, dtypes, ranks, shapes, layouts, value ranges and that the
 * output is a memory-planned tensor not overlapping any input, so the kernels need no
 * checks of their own.
 */
#include "bind_args.h"

#include <math.h>

/* ---- argument access ----------------------------------------------------------------------- */

#if TRT_LOAD_DETAIL
trt_status trt_bad_arg(const trt_call *c, trt_status status, const char *what) {
    return trt_fail_text(c->detail, status, what, c->op);
}
#endif

trt_status trt_arg_value(const trt_call *c, uint32_t i, const trt_value **v) {
    /* the loader resolved every argument of the call, in order (values.h) */
    if (i >= c->n_args || i >= c->tables->n_args) return trt_bad_arg(c, TRT_ERR_MALFORMED, "argument index out of range in");
    *v = &c->tables->args[i];
    return TRT_OK;
}

trt_status trt_arg_scratch(const trt_call *c, uint32_t i, const trt_tensor **t) {
    if (c->unread && i < 32) *c->unread |= 1u << i;
    return trt_arg_tensor(c, i, t);
}

trt_status trt_arg_tensor(const trt_call *c, uint32_t i, const trt_tensor **t) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_TENSOR) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected a tensor argument in");
    *t = &c->tables->tensors[v->index];
    return TRT_OK;
}

trt_status trt_arg_optional_tensor(const trt_call *c, uint32_t i, const trt_tensor **t) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind == PTE_VALUE_NULL) {
        *t = NULL;
        return TRT_OK;
    }
    return trt_arg_tensor(c, i, t);
}

trt_status trt_arg_int(const trt_call *c, uint32_t i, int64_t lo, int64_t hi, int32_t *out) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_INT) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int argument in");
    if (v->u.i < lo || v->u.i > hi) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "int argument out of range in");
    *out = (int32_t)v->u.i;
    return TRT_OK;
}

trt_status trt_arg_double(const trt_call *c, uint32_t i, double *out) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_DOUBLE) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected a float argument in");
    *out = v->u.d;
    return TRT_OK;
}

trt_status trt_arg_bool(const trt_call *c, uint32_t i, int *out) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_BOOL) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected a bool argument in");
    *out = v->u.i != 0;
    return TRT_OK;
}

/* An int[] argument of 1..max items in [lo, hi]; one item stands for both (torch's convention). */
static trt_status arg_int_list(const trt_call *c, uint32_t i, uint16_t min_count, uint16_t max_count, int64_t lo,
                               int64_t hi, int32_t out[2]) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_INT_LIST) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] argument in");
    if (v->count < min_count || v->count > max_count) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "int[] argument of wrong length in");
    for (uint16_t k = 0; k < v->count; k++) {
        int64_t item = c->tables->list_items[v->index + k];
        if (item < lo || item > hi) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "int[] argument out of range in");
        out[k] = (int32_t)item;
    }
    if (v->count == 1 && max_count == 2) out[1] = out[0];
    return TRT_OK;
}

/* Element 0 of a non-empty int[] argument (per-tensor parameters passed as lists). */
trt_status trt_arg_list_first(const trt_call *c, uint32_t i, int64_t lo, int64_t hi, int32_t *out) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_INT_LIST || v->count < 1) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected a non-empty int[] argument in");
    int64_t item = c->tables->list_items[v->index];
    if (item < lo || item > hi) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "int[] argument out of range in");
    *out = (int32_t)item;
    return TRT_OK;
}

trt_status trt_arg_pair(const trt_call *c, uint32_t i, int64_t lo, int64_t hi, int32_t out[2]) {
    return arg_int_list(c, i, 1, 2, lo, hi, out);
}

/* ---- tensor properties ------------------------------------------------------------------------ */

int trt_dense_in_order(const trt_tensor *t, const uint8_t *order) {
    int64_t expect = 1;
    for (int k = t->rank - 1; k >= 0; k--) {
        int d = order[k];
        if (t->sizes[d] != 1 && t->strides[d] != expect) return 0;
        expect *= t->sizes[d];
    }
    return 1;
}

int trt_is_row_major(const trt_tensor *t) {
    static const uint8_t identity[TRT_MAX_RANK] = {0, 1, 2, 3, 4, 5};
    return trt_dense_in_order(t, identity);
}

int trt_is_nhwc(const trt_tensor *t) {
    static const uint8_t nhwc[4] = {0, 2, 3, 1};
    return t->rank == 4 && trt_dense_in_order(t, nhwc);
}

int trt_same_layout(const trt_tensor *a, const trt_tensor *b) {
    if (a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d] || (a->sizes[d] != 1 && a->strides[d] != b->strides[d])) return 0;
    return 1;
}

trt_status trt_need_activation(const trt_call *c, const trt_tensor *t, int nhwc_op, int32_t nhwc[4]) {
    if (nhwc_op ? !(t->rank == 4 && trt_is_row_major(t)) : !trt_is_nhwc(t))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "activations not channels-last in");
    nhwc[0] = t->sizes[0];
    nhwc[1] = t->sizes[nhwc_op ? 1 : 2];
    nhwc[2] = t->sizes[nhwc_op ? 2 : 3];
    nhwc[3] = t->sizes[nhwc_op ? 3 : 1];
    return TRT_OK;
}

static int has_data(const trt_tensor *t) { return t->nbytes == 0 || t->data != NULL || t->in_arena; }

trt_status trt_need_input(const trt_call *c, const trt_tensor *t, uint8_t dtype) {
    if (t->dtype != dtype) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong tensor dtype in");
    if (!has_data(t)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "tensor without data in");
    return TRT_OK;
}

/* Weights, biases and requantization parameters must be constants: they are checked once here. */
trt_status trt_need_constant(const trt_call *c, const trt_tensor *t, uint8_t dtype) {
    if (t->dtype != dtype) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong constant dtype in");
    if (t->in_arena || (t->data == NULL && t->nbytes > 0)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "expected a constant tensor in");
    if (!trt_is_row_major(t)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "constant not in row-major order in");
    return TRT_OK;
}

/* Byte ranges of two memory-planned tensors share at least one byte. */
static int ranges_overlap(const trt_tensor *a, const trt_tensor *b) {
    if (!a->in_arena || !b->in_arena || a->nbytes == 0 || b->nbytes == 0) return 0;
    return a->arena_offset < b->arena_offset + b->nbytes && b->arena_offset < a->arena_offset + a->nbytes;
}

trt_status trt_need_disjoint(const trt_call *c, const trt_tensor *out, const trt_tensor *in) {
    if (in && ranges_overlap(out, in)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output overlaps an input in");
    return TRT_OK;
}

trt_status trt_need_output(const trt_call *c, uint32_t out_arg, const trt_tensor **out, uint8_t dtype) {
    trt_status s = trt_arg_tensor(c, out_arg, out);
    if (s != TRT_OK) return s;
    if (out_arg + 2 != c->n_args) return trt_bad_arg(c, TRT_ERR_MALFORMED, "wrong argument count in");
    if (c->args[out_arg + 1] != c->args[out_arg]) return trt_bad_arg(c, TRT_ERR_MALFORMED, "return value is not the out tensor in");
    if ((*out)->dtype != dtype) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong output dtype in");
    if (!(*out)->in_arena) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output is not a memory-planned tensor in");
    if ((*out)->numel == 0) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "empty output in");
    return TRT_OK;
}
trt_status trt_need_act_range(const trt_call *c, uint32_t min_arg, uint32_t max_arg, int32_t *lo, int32_t *hi) {
    trt_status s;
    if ((s = trt_arg_int(c, min_arg, -128, 127, lo)) != TRT_OK || (s = trt_arg_int(c, max_arg, -128, 127, hi)) != TRT_OK)
        return s;
    if (*lo > *hi) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "activation_min > activation_max in");
    return TRT_OK;
}

/* Per-channel requantization: int32 multipliers and shifts, one per output channel. */
trt_status trt_need_requant(const trt_call *c, uint32_t mult_arg, uint32_t shift_arg, int32_t channels,
                               const int32_t **mult, const int32_t **shift) {
    const trt_tensor *m = NULL, *sh = NULL;
    trt_status s;
    if ((s = trt_arg_tensor(c, mult_arg, &m)) != TRT_OK || (s = trt_arg_tensor(c, shift_arg, &sh)) != TRT_OK) return s;
    if ((s = trt_need_constant(c, m, TRT_INT32)) != TRT_OK || (s = trt_need_constant(c, sh, TRT_INT32)) != TRT_OK) return s;
    if ((int64_t)m->numel != channels || (int64_t)sh->numel != channels)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "requantization parameters do not match the channels in");
    *mult = (const int32_t *)(const void *)m->data;
    *shift = (const int32_t *)(const void *)sh->data;
    for (int32_t i = 0; i < channels; i++)
        if ((*shift)[i] < -TRT_MAX_SHIFT || (*shift)[i] > TRT_MAX_SHIFT) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shift out of range in");
    return TRT_OK;
}

trt_status trt_need_bias(const trt_call *c, uint32_t arg, int32_t channels, const int32_t **bias) {
    const trt_tensor *b = NULL;
    trt_status s = trt_arg_optional_tensor(c, arg, &b);
    if (s != TRT_OK) return s;
    *bias = NULL;
    if (!b) return TRT_OK;
    if ((s = trt_need_constant(c, b, TRT_INT32)) != TRT_OK) return s;
    if ((int64_t)b->numel != channels) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "bias does not match the channels in");
    *bias = (const int32_t *)(const void *)b->data;
    return TRT_OK;
}

/* out = (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1, which must be >= 1. With stride,
 * pad and dilation in their bind steps' ranges (1 .. TRT_MAX_SPATIAL_STEP, pad from 0) a span that is
 * not negative is below 2^32: a 32-bit division is exact (and needs no 64-bit division routine). */
int32_t trt_pooled_extent(int32_t in, int32_t kernel, int32_t stride, int32_t pad, int32_t dilation) {
    int64_t span = (int64_t)in + 2 * (int64_t)pad - (int64_t)dilation * (kernel - 1) - 1;
    return span < 0 ? 0 : (int32_t)((uint32_t)span / (uint32_t)stride + 1u);
}

/* ---- quantization parameters ---------------------------------------------------------------------- */

static trt_status need_float_scale(const trt_call *c, uint32_t arg, double *scale) {
    trt_status s = trt_arg_double(c, arg, scale);
    if (s != TRT_OK) return s;
    if (!(*scale > 0.0) || !isfinite(*scale) || !isfinite((float)*scale) || (float)*scale == 0.0f ||
        !isfinite((float)(1.0 / *scale)))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "bad quantization scale in");
    return TRT_OK;
}

/* Shared checks of (scale, zero_point, quant_min, quant_max, dtype) at args 1..5. */
trt_status trt_bind_quantization(const trt_call *c, uint8_t in_dtype, uint8_t out_dtype, const trt_tensor **in,
                                 const trt_tensor **out, trt_qparams *q) {
    int32_t dtype;
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, in)) != TRT_OK || (s = trt_need_input(c, *in, in_dtype)) != TRT_OK ||
        (s = need_float_scale(c, 1, &q->scale)) != TRT_OK ||
        (s = trt_arg_int(c, 2, -TRT_MAX_FLOAT_EXACT_INT, TRT_MAX_FLOAT_EXACT_INT, &q->zero_point)) != TRT_OK ||
        (s = trt_arg_int(c, 3, -128, 127, &q->quant_min)) != TRT_OK ||
        (s = trt_arg_int(c, 4, -128, 127, &q->quant_max)) != TRT_OK ||
        (s = trt_arg_int(c, 5, TRT_INT8, TRT_INT8, &dtype)) != TRT_OK)
        return s;
    if (q->quant_min > q->quant_max) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "quant_min > quant_max in");
    if ((s = trt_need_output(c, 6, out, out_dtype)) != TRT_OK || (s = trt_need_disjoint(c, *out, *in)) != TRT_OK)
        return s;
    if (!trt_same_layout(*in, *out)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output layouts differ in");
    return TRT_OK;
}

