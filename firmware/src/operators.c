/*
 * The operators this runtime implements: their names, and for each kernel call the
 * validation of its arguments against the operator schema (executorch/backends/
 * cortex_m/ops/operators.py and dim_order_ops) before anything runs.
 *
 * A kernel call's args are value indices: the schema's arguments in order (the
 * `out` tensor last) followed by the returned tensor, which must be `out` again.
 * Binding checks kinds, dtypes, ranks, shapes, layouts, value ranges and that the
 * output is a memory-planned tensor not overlapping any input, then stores plain
 * pointers and sizes in the instruction so the kernels need no checks of their own.
 */
#include <math.h>
#include <string.h>

#include "runtime_internal.h"

/* Ranges that keep every kernel's index and integer arithmetic far from overflow. */
#define MAX_SPATIAL_STEP 1024      /* stride, padding, dilation */
#define MAX_OFFSET 255             /* zero-point offsets: int8/uint8 zero points fit easily */
#define MAX_SHIFT 31
#define MAX_FLOAT_EXACT_INT 16777216  /* 2^24: integers a float holds exactly */

typedef struct {
    const char *name;
    trt_op_kind kind;
} operator_entry;

static const operator_entry OPERATORS[] = {
    {"cortex_m::quantize_per_tensor", TRT_OP_QUANTIZE},
    {"cortex_m::dequantize_per_tensor", TRT_OP_DEQUANTIZE},
    {"cortex_m::quantized_conv2d", TRT_OP_CONV2D},
    {"cortex_m::quantized_depthwise_conv2d", TRT_OP_DEPTHWISE_CONV2D},
    {"cortex_m::quantized_max_pool2d", TRT_OP_MAX_POOL2D},
    {"cortex_m::quantized_linear", TRT_OP_LINEAR},
    {"dim_order_ops::_clone_dim_order", TRT_OP_CLONE_DIM_ORDER},
};

int trt_find_operator(const char *name, uint32_t name_len, const char *overload, uint32_t overload_len,
                      const char **canonical) {
    if (overload_len != 3 || memcmp(overload, "out", 3) != 0) return -1;  /* only the .out variants run */
    for (size_t i = 0; i < sizeof OPERATORS / sizeof OPERATORS[0]; i++) {
        if (strlen(OPERATORS[i].name) == name_len && memcmp(OPERATORS[i].name, name, name_len) == 0) {
            *canonical = OPERATORS[i].name;
            return (int)OPERATORS[i].kind;
        }
    }
    return -1;
}

/* ---- argument access ----------------------------------------------------------------------- */

typedef struct {
    trt_program *prog;
    const int32_t *args;
    uint32_t n_args;
    const char *op;            /* for error messages */
} call;

static trt_status bad_arg(const call *c, trt_status status, const char *what) {
    return trt_fail_named(c->prog, status, what, c->op, strlen(c->op));
}

static trt_status arg_value(const call *c, uint32_t i, const trt_value **v) {
    if (i >= c->n_args || c->args[i] < 0 || (uint32_t)c->args[i] >= c->prog->n_values)
        return bad_arg(c, TRT_ERR_MALFORMED, "argument index out of range in");
    *v = &c->prog->values[c->args[i]];
    return TRT_OK;
}

static trt_status arg_tensor(const call *c, uint32_t i, const trt_tensor **t) {
    const trt_value *v = NULL;
    trt_status s = arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_TENSOR) return bad_arg(c, TRT_ERR_MALFORMED, "expected a tensor argument in");
    *t = &c->prog->tensors[v->index];
    return TRT_OK;
}

static trt_status arg_optional_tensor(const call *c, uint32_t i, const trt_tensor **t) {
    const trt_value *v = NULL;
    trt_status s = arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind == PTE_VALUE_NULL) {
        *t = NULL;
        return TRT_OK;
    }
    return arg_tensor(c, i, t);
}

static trt_status arg_int(const call *c, uint32_t i, int64_t lo, int64_t hi, int32_t *out) {
    const trt_value *v = NULL;
    trt_status s = arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_INT) return bad_arg(c, TRT_ERR_MALFORMED, "expected an int argument in");
    if (v->u.i < lo || v->u.i > hi) return bad_arg(c, TRT_ERR_BAD_TENSOR, "int argument out of range in");
    *out = (int32_t)v->u.i;
    return TRT_OK;
}

static trt_status arg_double(const call *c, uint32_t i, double *out) {
    const trt_value *v = NULL;
    trt_status s = arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_DOUBLE) return bad_arg(c, TRT_ERR_MALFORMED, "expected a float argument in");
    *out = v->u.d;
    return TRT_OK;
}

static trt_status arg_bool(const call *c, uint32_t i, int *out) {
    const trt_value *v = NULL;
    trt_status s = arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_BOOL) return bad_arg(c, TRT_ERR_MALFORMED, "expected a bool argument in");
    *out = v->u.i != 0;
    return TRT_OK;
}

/* An int[] argument of 1..max items in [lo, hi]; one item stands for both (torch's convention). */
static trt_status arg_int_list(const call *c, uint32_t i, uint16_t min_count, uint16_t max_count, int64_t lo,
                               int64_t hi, int32_t out[2]) {
    const trt_value *v = NULL;
    trt_status s = arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_INT_LIST) return bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] argument in");
    if (v->count < min_count || v->count > max_count) return bad_arg(c, TRT_ERR_BAD_TENSOR, "int[] argument of wrong length in");
    for (uint16_t k = 0; k < v->count; k++) {
        int64_t item = c->prog->list_items[v->index + k];
        if (item < lo || item > hi) return bad_arg(c, TRT_ERR_BAD_TENSOR, "int[] argument out of range in");
        out[k] = (int32_t)item;
    }
    if (v->count == 1 && max_count == 2) out[1] = out[0];
    return TRT_OK;
}

/* Element 0 of a non-empty int[] argument (per-tensor parameters passed as lists). */
static trt_status arg_list_first(const call *c, uint32_t i, int64_t lo, int64_t hi, int32_t *out) {
    const trt_value *v = NULL;
    trt_status s = arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_INT_LIST || v->count < 1) return bad_arg(c, TRT_ERR_MALFORMED, "expected a non-empty int[] argument in");
    int64_t item = c->prog->list_items[v->index];
    if (item < lo || item > hi) return bad_arg(c, TRT_ERR_BAD_TENSOR, "int[] argument out of range in");
    *out = (int32_t)item;
    return TRT_OK;
}

static trt_status arg_pair(const call *c, uint32_t i, int64_t lo, int64_t hi, int32_t out[2]) {
    return arg_int_list(c, i, 1, 2, lo, hi, out);
}

/* ---- tensor properties ------------------------------------------------------------------------ */

/* Dense in the given physical order of logical dims (size-1 dims may sit anywhere). */
static int dense_in_order(const trt_tensor *t, const uint8_t *order) {
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
    return dense_in_order(t, identity);
}

static int is_nhwc(const trt_tensor *t) {
    static const uint8_t nhwc[4] = {0, 2, 3, 1};
    return t->rank == 4 && dense_in_order(t, nhwc);
}

static int same_layout(const trt_tensor *a, const trt_tensor *b) {
    if (a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d] || (a->sizes[d] != 1 && a->strides[d] != b->strides[d])) return 0;
    return 1;
}

static int has_data(const trt_tensor *t) { return t->nbytes == 0 || t->data != NULL || t->in_arena; }

static trt_status need_input(const call *c, const trt_tensor *t, uint8_t dtype) {
    if (t->dtype != dtype) return bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong tensor dtype in");
    if (!has_data(t)) return bad_arg(c, TRT_ERR_BAD_TENSOR, "tensor without data in");
    return TRT_OK;
}

/* Weights, biases and requantization parameters must be constants: they are checked once here. */
static trt_status need_constant(const call *c, const trt_tensor *t, uint8_t dtype) {
    if (t->dtype != dtype) return bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong constant dtype in");
    if (t->in_arena || (t->data == NULL && t->nbytes > 0)) return bad_arg(c, TRT_ERR_BAD_TENSOR, "expected a constant tensor in");
    if (!trt_is_row_major(t)) return bad_arg(c, TRT_ERR_BAD_TENSOR, "constant not in row-major order in");
    return TRT_OK;
}

/* Byte ranges of two memory-planned tensors share at least one byte. */
static int ranges_overlap(const trt_tensor *a, const trt_tensor *b) {
    if (!a->in_arena || !b->in_arena || a->nbytes == 0 || b->nbytes == 0) return 0;
    return a->arena_offset < b->arena_offset + b->nbytes && b->arena_offset < a->arena_offset + a->nbytes;
}

static trt_status need_disjoint(const call *c, const trt_tensor *out, const trt_tensor *in) {
    if (in && ranges_overlap(out, in)) return bad_arg(c, TRT_ERR_BAD_TENSOR, "output overlaps an input in");
    return TRT_OK;
}

static trt_status need_output(const call *c, uint32_t out_arg, const trt_tensor **out, uint8_t dtype) {
    trt_status s = arg_tensor(c, out_arg, out);
    if (s != TRT_OK) return s;
    if (out_arg + 2 != c->n_args) return bad_arg(c, TRT_ERR_MALFORMED, "wrong argument count in");
    if (c->args[out_arg + 1] != c->args[out_arg]) return bad_arg(c, TRT_ERR_MALFORMED, "return value is not the out tensor in");
    if ((*out)->dtype != dtype) return bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong output dtype in");
    if (!(*out)->in_arena) return bad_arg(c, TRT_ERR_BAD_TENSOR, "output is not a memory-planned tensor in");
    if ((*out)->numel == 0) return bad_arg(c, TRT_ERR_BAD_TENSOR, "empty output in");
    return TRT_OK;
}
static trt_status need_act_range(const call *c, uint32_t min_arg, uint32_t max_arg, int32_t *lo, int32_t *hi) {
    trt_status s;
    if ((s = arg_int(c, min_arg, -128, 127, lo)) != TRT_OK || (s = arg_int(c, max_arg, -128, 127, hi)) != TRT_OK)
        return s;
    if (*lo > *hi) return bad_arg(c, TRT_ERR_BAD_TENSOR, "activation_min > activation_max in");
    return TRT_OK;
}

/* Per-channel requantization: int32 multipliers and shifts, one per output channel. */
static trt_status need_requant(const call *c, uint32_t mult_arg, uint32_t shift_arg, int32_t channels,
                               const int32_t **mult, const int32_t **shift) {
    const trt_tensor *m = NULL, *sh = NULL;
    trt_status s;
    if ((s = arg_tensor(c, mult_arg, &m)) != TRT_OK || (s = arg_tensor(c, shift_arg, &sh)) != TRT_OK) return s;
    if ((s = need_constant(c, m, TRT_INT32)) != TRT_OK || (s = need_constant(c, sh, TRT_INT32)) != TRT_OK) return s;
    if ((int64_t)m->numel != channels || (int64_t)sh->numel != channels)
        return bad_arg(c, TRT_ERR_BAD_TENSOR, "requantization parameters do not match the channels in");
    *mult = (const int32_t *)(const void *)m->data;
    *shift = (const int32_t *)(const void *)sh->data;
    for (int32_t i = 0; i < channels; i++)
        if ((*shift)[i] < -MAX_SHIFT || (*shift)[i] > MAX_SHIFT) return bad_arg(c, TRT_ERR_BAD_TENSOR, "shift out of range in");
    return TRT_OK;
}

static trt_status need_bias(const call *c, uint32_t arg, int32_t channels, const int32_t **bias) {
    const trt_tensor *b = NULL;
    trt_status s = arg_optional_tensor(c, arg, &b);
    if (s != TRT_OK) return s;
    *bias = NULL;
    if (!b) return TRT_OK;
    if ((s = need_constant(c, b, TRT_INT32)) != TRT_OK) return s;
    if ((int64_t)b->numel != channels) return bad_arg(c, TRT_ERR_BAD_TENSOR, "bias does not match the channels in");
    *bias = (const int32_t *)(const void *)b->data;
    return TRT_OK;
}

/* out = (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1, which must be >= 1. */
static int32_t pooled_extent(int32_t in, int32_t kernel, int32_t stride, int32_t pad, int32_t dilation) {
    int64_t span = (int64_t)in + 2 * (int64_t)pad - (int64_t)dilation * (kernel - 1) - 1;
    return span < 0 ? 0 : (int32_t)(span / stride + 1);
}

/* ---- quantize / dequantize ---------------------------------------------------------------------- */

static trt_status need_float_scale(const call *c, uint32_t arg, double *scale) {
    trt_status s = arg_double(c, arg, scale);
    if (s != TRT_OK) return s;
    if (!(*scale > 0.0) || !isfinite(*scale) || !isfinite((float)*scale) || (float)*scale == 0.0f ||
        !isfinite((float)(1.0 / *scale)))
        return bad_arg(c, TRT_ERR_BAD_TENSOR, "bad quantization scale in");
    return TRT_OK;
}

/* Shared checks of (scale, zero_point, quant_min, quant_max, dtype) at args 1..5. */
static trt_status need_qparams(const call *c, double *scale, int32_t *zp, int32_t *qmin, int32_t *qmax) {
    int32_t dtype;
    trt_status s;
    if ((s = need_float_scale(c, 1, scale)) != TRT_OK ||
        (s = arg_int(c, 2, -MAX_FLOAT_EXACT_INT, MAX_FLOAT_EXACT_INT, zp)) != TRT_OK ||
        (s = arg_int(c, 3, -128, 127, qmin)) != TRT_OK || (s = arg_int(c, 4, -128, 127, qmax)) != TRT_OK ||
        (s = arg_int(c, 5, TRT_INT8, TRT_INT8, &dtype)) != TRT_OK)
        return s;
    if (*qmin > *qmax) return bad_arg(c, TRT_ERR_BAD_TENSOR, "quant_min > quant_max in");
    return TRT_OK;
}

static trt_status bind_quantize(const call *c, trt_instruction *ins) {
    const trt_tensor *in = NULL, *out = NULL;
    double scale = 0;
    int32_t zp = 0, qmin = 0, qmax = 0;
    trt_status s;
    if ((s = arg_tensor(c, 0, &in)) != TRT_OK || (s = need_input(c, in, TRT_FLOAT32)) != TRT_OK ||
        (s = need_qparams(c, &scale, &zp, &qmin, &qmax)) != TRT_OK ||
        (s = need_output(c, 6, &out, TRT_INT8)) != TRT_OK || (s = need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (!same_layout(in, out)) return bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output layouts differ in");
    trt_quantize_params *p = &ins->p.quantize;
    p->input = (const float *)(const void *)in->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    p->count = out->numel;
    p->inv_scale = (float)(1.0 / scale);
    p->zero_point = (float)zp;
    p->quant_min = (float)qmin;
    p->quant_max = (float)qmax;
    return TRT_OK;
}

static trt_status bind_dequantize(const call *c, trt_instruction *ins) {
    const trt_tensor *in = NULL, *out = NULL;
    double scale = 0;
    int32_t zp = 0, qmin = 0, qmax = 0;
    trt_status s;
    if ((s = arg_tensor(c, 0, &in)) != TRT_OK || (s = need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = need_qparams(c, &scale, &zp, &qmin, &qmax)) != TRT_OK ||
        (s = need_output(c, 6, &out, TRT_FLOAT32)) != TRT_OK || (s = need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (!same_layout(in, out)) return bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output layouts differ in");
    trt_dequantize_params *p = &ins->p.dequantize;
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (float *)(void *)out->mutable_data;
    p->count = out->numel;
    p->scale = (float)scale;
    p->zero_point = (float)zp;
    return TRT_OK;
}

/* ---- convolutions --------------------------------------------------------------------------------- */

/* Arguments shared by quantized_conv2d and quantized_depthwise_conv2d: input, weight, bias,
 * stride, padding, dilation, then (after depthwise's depth_multiplier) offsets, requantization,
 * activation range, scratch, out. `extra` is 1 for depthwise (its depth_multiplier argument). */
static trt_status bind_conv_common(const call *c, trt_conv_params *p, const trt_tensor **in,
                                   const trt_tensor **weight, const trt_tensor **out, uint32_t extra) {
    int32_t stride[2], pad[2], dilation[2];
    const trt_tensor *scratch = NULL;
    trt_status s;
    if ((s = arg_tensor(c, 0, in)) != TRT_OK || (s = need_input(c, *in, TRT_INT8)) != TRT_OK ||
        (s = arg_tensor(c, 1, weight)) != TRT_OK || (s = need_constant(c, *weight, TRT_INT8)) != TRT_OK ||
        (s = arg_pair(c, 3, 1, MAX_SPATIAL_STEP, stride)) != TRT_OK ||
        (s = arg_pair(c, 4, 0, MAX_SPATIAL_STEP, pad)) != TRT_OK ||
        (s = arg_pair(c, 5, 1, MAX_SPATIAL_STEP, dilation)) != TRT_OK ||
        (s = arg_int(c, 6 + extra, -MAX_OFFSET, MAX_OFFSET, &p->input_offset)) != TRT_OK ||
        (s = arg_int(c, 7 + extra, -MAX_OFFSET, MAX_OFFSET, &p->output_offset)) != TRT_OK ||
        (s = need_act_range(c, 10 + extra, 11 + extra, &p->activation_min, &p->activation_max)) != TRT_OK ||
        (s = arg_tensor(c, 12 + extra, &scratch)) != TRT_OK ||
        (s = need_output(c, 13 + extra, out, TRT_INT8)) != TRT_OK || (s = need_disjoint(c, *out, *in)) != TRT_OK)
        return s;
    if (!is_nhwc(*in) || !is_nhwc(*out)) return bad_arg(c, TRT_ERR_BAD_TENSOR, "activations not channels-last in");
    if ((*weight)->rank != 4) return bad_arg(c, TRT_ERR_BAD_TENSOR, "weight is not 4-D in");
    p->batches = (*in)->sizes[0];
    p->in_c = (*in)->sizes[1];
    p->in_h = (*in)->sizes[2];
    p->in_w = (*in)->sizes[3];
    p->kernel_h = (*weight)->sizes[1];
    p->kernel_w = (*weight)->sizes[2];
    p->stride_h = stride[0];
    p->stride_w = stride[1];
    p->pad_h = pad[0];
    p->pad_w = pad[1];
    p->dilation_h = dilation[0];
    p->dilation_w = dilation[1];
    p->out_h = pooled_extent(p->in_h, p->kernel_h, p->stride_h, p->pad_h, p->dilation_h);
    p->out_w = pooled_extent(p->in_w, p->kernel_w, p->stride_w, p->pad_w, p->dilation_w);
    p->out_c = (*out)->sizes[1];
    if (p->in_c < 1 || p->out_c < 1 || p->out_h < 1 || p->out_w < 1 || p->kernel_h < 1 || p->kernel_w < 1 ||
        (*out)->sizes[0] != p->batches || (*out)->sizes[2] != p->out_h || (*out)->sizes[3] != p->out_w)
        return bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the input in");
    p->input = (const int8_t *)(const void *)(*in)->data;
    p->weights = (const int8_t *)(const void *)(*weight)->data;
    p->output = (int8_t *)(void *)(*out)->mutable_data;
    if ((s = need_bias(c, 2, p->out_c, &p->bias)) != TRT_OK ||
        (s = need_requant(c, 8 + extra, 9 + extra, p->out_c, &p->multipliers, &p->shifts)) != TRT_OK)
        return s;
    return TRT_OK;
}

static trt_status bind_conv2d(const call *c, trt_instruction *ins) {
    trt_conv_params *p = &ins->p.conv;
    const trt_tensor *in = NULL, *weight = NULL, *out = NULL;
    trt_status s = bind_conv_common(c, p, &in, &weight, &out, 0);
    if (s != TRT_OK) return s;
    /* weight [out_c, kernel_h, kernel_w, kernel_c]; groups = in_c / kernel_c (F.conv2d's rule) */
    p->kernel_c = weight->sizes[3];
    if (weight->sizes[0] != p->out_c || p->kernel_c < 1 || p->in_c % p->kernel_c != 0)
        return bad_arg(c, TRT_ERR_BAD_TENSOR, "weight shape does not match the channels in");
    p->groups = p->in_c / p->kernel_c;
    if (p->out_c % p->groups != 0) return bad_arg(c, TRT_ERR_BAD_TENSOR, "channels not divisible by groups in");
    int64_t reduction = (int64_t)p->kernel_h * p->kernel_w * p->kernel_c;
    if (reduction > TRT_MAX_REDUCTION) return bad_arg(c, TRT_ERR_LIMIT, "reduction too long in");
    c->prog->macs += (uint64_t)out->numel * (uint64_t)reduction;
    p->tap_sums = NULL;
    p->window_sums = NULL;
    if (p->input_offset != 0) {
        void *taps, *windows;
        size_t taps_bytes = (size_t)p->out_c * p->kernel_h * p->kernel_w * sizeof(int32_t);
        if ((s = trt_workspace(c->prog, taps_bytes, &taps)) != TRT_OK ||
            (s = trt_workspace(c->prog, (size_t)p->out_c * sizeof(int32_t), &windows)) != TRT_OK)
            return s;
        p->tap_sums = taps;
        p->window_sums = windows;
    }
    return TRT_OK;
}

static trt_status bind_depthwise_conv2d(const call *c, trt_instruction *ins) {
    trt_conv_params *p = &ins->p.conv;
    const trt_tensor *in = NULL, *weight = NULL, *out = NULL;
    trt_status s = bind_conv_common(c, p, &in, &weight, &out, 1);
    if (s != TRT_OK) return s;
    /* weight [1, kernel_h, kernel_w, out_c]; output channel oc reads input channel oc / multiplier */
    if (weight->sizes[0] != 1 || weight->sizes[3] != p->out_c || p->out_c % p->in_c != 0)
        return bad_arg(c, TRT_ERR_BAD_TENSOR, "weight shape does not match the channels in");
    if ((s = arg_int(c, 6, 1, p->out_c, &p->depth_multiplier)) != TRT_OK) return s;
    if (p->depth_multiplier != p->out_c / p->in_c) return bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong depth_multiplier in");
    p->kernel_c = 1;
    p->groups = p->in_c;
    int64_t taps = (int64_t)p->kernel_h * p->kernel_w;
    if (taps > TRT_MAX_DEPTHWISE_TAPS) return bad_arg(c, TRT_ERR_LIMIT, "depthwise window over 121 taps in");
    c->prog->macs += (uint64_t)out->numel * (uint64_t)taps;
    p->tap_sums = NULL;
    p->window_sums = NULL;
    return TRT_OK;
}

/* ---- pooling, layout copy, linear ---------------------------------------------------------------- */

static trt_status bind_max_pool2d(const call *c, trt_instruction *ins) {
    trt_max_pool_params *p = &ins->p.pool;
    const trt_tensor *in = NULL, *out = NULL;
    int32_t kernel[2], stride[2], pad[2], dilation[2], in_zp, out_zp;
    int ceil_mode = 0;
    trt_status s;
    if ((s = arg_tensor(c, 0, &in)) != TRT_OK || (s = need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = arg_pair(c, 1, 1, MAX_SPATIAL_STEP, kernel)) != TRT_OK ||
        (s = arg_pair(c, 2, 1, MAX_SPATIAL_STEP, stride)) != TRT_OK ||
        (s = arg_pair(c, 3, 0, MAX_SPATIAL_STEP, pad)) != TRT_OK ||
        (s = arg_pair(c, 4, 1, 1, dilation)) != TRT_OK || (s = arg_bool(c, 5, &ceil_mode)) != TRT_OK ||
        (s = arg_int(c, 6, -128, 127, &in_zp)) != TRT_OK || (s = arg_int(c, 7, -128, 127, &out_zp)) != TRT_OK ||
        (s = need_act_range(c, 8, 9, &p->activation_min, &p->activation_max)) != TRT_OK ||
        (s = need_output(c, 10, &out, TRT_INT8)) != TRT_OK || (s = need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (ceil_mode || in_zp != out_zp) return bad_arg(c, TRT_ERR_BAD_TENSOR, "ceil_mode or unequal zero points in");
    /* torch's rule; it also guarantees every window has an in-bounds tap */
    if (pad[0] > kernel[0] / 2 || pad[1] > kernel[1] / 2) return bad_arg(c, TRT_ERR_BAD_TENSOR, "padding over half the kernel in");
    if (!is_nhwc(in) || !is_nhwc(out)) return bad_arg(c, TRT_ERR_BAD_TENSOR, "activations not channels-last in");
    p->batches = in->sizes[0];
    p->channels = in->sizes[1];
    p->in_h = in->sizes[2];
    p->in_w = in->sizes[3];
    p->kernel_h = kernel[0];
    p->kernel_w = kernel[1];
    p->stride_h = stride[0];
    p->stride_w = stride[1];
    p->pad_h = pad[0];
    p->pad_w = pad[1];
    p->out_h = pooled_extent(p->in_h, p->kernel_h, p->stride_h, p->pad_h, 1);
    p->out_w = pooled_extent(p->in_w, p->kernel_w, p->stride_w, p->pad_w, 1);
    if (p->out_h < 1 || p->out_w < 1 || p->channels < 1 || out->sizes[0] != p->batches ||
        out->sizes[1] != p->channels || out->sizes[2] != p->out_h || out->sizes[3] != p->out_w)
        return bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the input in");
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    return TRT_OK;
}

static trt_status bind_clone_dim_order(const call *c, trt_instruction *ins) {
    trt_copy_params *p = &ins->p.copy;
    const trt_tensor *in = NULL, *out = NULL;
    const trt_value *order = NULL;
    int non_blocking = 0;
    trt_status s;
    if ((s = arg_tensor(c, 0, &in)) != TRT_OK || (s = arg_bool(c, 1, &non_blocking)) != TRT_OK ||
        (s = arg_value(c, 2, &order)) != TRT_OK || (s = need_output(c, 3, &out, in->dtype)) != TRT_OK ||
        (s = need_input(c, in, in->dtype)) != TRT_OK || (s = need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (in->rank != out->rank || in->rank > TRT_COPY_MAX_RANK) return bad_arg(c, TRT_ERR_BAD_TENSOR, "rank mismatch in");
    for (int d = 0; d < in->rank; d++)
        if (in->sizes[d] != out->sizes[d]) return bad_arg(c, TRT_ERR_BAD_TENSOR, "shape mismatch in");
    if (order->kind == PTE_VALUE_INT_LIST) {
        if (order->count != out->rank) return bad_arg(c, TRT_ERR_BAD_TENSOR, "dim_order does not match the output in");
        for (int d = 0; d < out->rank; d++)
            if (c->prog->list_items[order->index + d] != out->dim_order[d])
                return bad_arg(c, TRT_ERR_BAD_TENSOR, "dim_order does not match the output in");
    } else if (order->kind != PTE_VALUE_NULL) {
        return bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] dim_order in");
    }
    p->input = in->data;
    p->output = out->mutable_data;
    p->rank = in->rank;
    p->elem_size = in->elem_size;
    for (int d = 0; d < in->rank; d++) {
        p->sizes[d] = in->sizes[d];
        p->in_strides[d] = in->strides[d];
        p->out_strides[d] = out->strides[d];
    }
    return TRT_OK;
}

static trt_status bind_linear(const call *c, trt_instruction *ins) {
    trt_linear_params *p = &ins->p.linear;
    const trt_tensor *in = NULL, *weight = NULL, *ksum = NULL, *out = NULL;
    int32_t mult = 0, shift = 0;
    trt_status s;
    if ((s = arg_tensor(c, 0, &in)) != TRT_OK || (s = need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = arg_tensor(c, 1, &weight)) != TRT_OK || (s = need_constant(c, weight, TRT_INT8)) != TRT_OK ||
        (s = arg_optional_tensor(c, 3, &ksum)) != TRT_OK ||
        (s = arg_int(c, 4, -MAX_OFFSET, MAX_OFFSET, &p->input_offset)) != TRT_OK ||
        (s = arg_int(c, 5, -MAX_OFFSET, MAX_OFFSET, &p->filter_offset)) != TRT_OK ||
        (s = arg_int(c, 6, -MAX_OFFSET, MAX_OFFSET, &p->output_offset)) != TRT_OK ||
        (s = arg_list_first(c, 7, INT32_MIN, INT32_MAX, &mult)) != TRT_OK ||
        (s = arg_list_first(c, 8, -MAX_SHIFT, MAX_SHIFT, &shift)) != TRT_OK ||
        (s = need_act_range(c, 10, 9, &p->activation_min, &p->activation_max)) != TRT_OK ||  /* max before min */
        (s = need_output(c, 11, &out, TRT_INT8)) != TRT_OK || (s = need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (weight->rank != 2 || in->rank < 1 || out->rank != in->rank || !trt_is_row_major(in) || !trt_is_row_major(out))
        return bad_arg(c, TRT_ERR_BAD_TENSOR, "linear tensors not [.., depth] row-major in");
    p->out_features = weight->sizes[0];
    p->depth = weight->sizes[1];
    if (p->depth < 1 || p->out_features < 1 || in->sizes[in->rank - 1] != p->depth ||
        out->sizes[out->rank - 1] != p->out_features)
        return bad_arg(c, TRT_ERR_BAD_TENSOR, "linear shapes do not match in");
    for (int d = 0; d + 1 < in->rank; d++)
        if (in->sizes[d] != out->sizes[d]) return bad_arg(c, TRT_ERR_BAD_TENSOR, "linear shapes do not match in");
    if (p->depth > TRT_MAX_REDUCTION) return bad_arg(c, TRT_ERR_LIMIT, "reduction too long in");
    p->rows = (int32_t)(in->numel / (uint32_t)p->depth);
    p->multiplier = mult;   /* the reference uses element 0 of the per-tensor lists */
    p->shift = shift;
    p->input = (const int8_t *)(const void *)in->data;
    p->weights = (const int8_t *)(const void *)weight->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    p->kernel_sum = NULL;
    p->bias = NULL;
    p->weight_sums = NULL;
    if (ksum) {
        if ((s = need_constant(c, ksum, TRT_INT32)) != TRT_OK) return s;
        if ((int64_t)ksum->numel != p->out_features) return bad_arg(c, TRT_ERR_BAD_TENSOR, "kernel_sum does not match in");
        p->kernel_sum = (const int32_t *)(const void *)ksum->data;
    } else {
        if ((s = need_bias(c, 2, p->out_features, &p->bias)) != TRT_OK) return s;
        if (p->input_offset != 0) {
            void *sums;
            if ((s = trt_workspace(c->prog, (size_t)p->out_features * sizeof(int32_t), &sums)) != TRT_OK) return s;
            p->weight_sums = sums;
        }
    }
    c->prog->macs += (uint64_t)p->rows * (uint64_t)p->out_features * (uint64_t)p->depth;
    return TRT_OK;
}

/* ---- dispatch ----------------------------------------------------------------------------------------- */

static uint16_t tensor_arg(const trt_program *prog, const int32_t *args, uint32_t n, uint32_t i) {
    return i < n ? prog->values[args[i]].index : 0;
}

trt_status trt_bind_instruction(trt_program *prog, trt_instruction *ins, const int32_t *args, uint32_t n_args) {
    call c = {prog, args, n_args, prog->operator_names[ins->operator_index]};
    uint64_t macs_before = prog->macs;
    trt_status s;
    memset(&ins->p, 0, sizeof ins->p);
    switch ((trt_op_kind)ins->op) {
    case TRT_OP_QUANTIZE: s = bind_quantize(&c, ins); break;
    case TRT_OP_DEQUANTIZE: s = bind_dequantize(&c, ins); break;
    case TRT_OP_CONV2D: s = bind_conv2d(&c, ins); break;
    case TRT_OP_DEPTHWISE_CONV2D: s = bind_depthwise_conv2d(&c, ins); break;
    case TRT_OP_MAX_POOL2D: s = bind_max_pool2d(&c, ins); break;
    case TRT_OP_LINEAR: s = bind_linear(&c, ins); break;
    case TRT_OP_CLONE_DIM_ORDER: s = bind_clone_dim_order(&c, ins); break;
    default: return trt_fail(prog, TRT_ERR_UNSUPPORTED_OP, "unknown operator kind");
    }
    if (s != TRT_OK) return s;
    ins->macs = (uint32_t)(prog->macs - macs_before);
    /* binding succeeded: args[0] is the input tensor, args[n-2] the output (== the return) */
    ins->input_tensor = (int16_t)tensor_arg(prog, args, n_args, 0);
    ins->output_tensor = tensor_arg(prog, args, n_args, n_args - 2);
    return TRT_OK;
}

void trt_prepare_instruction(const trt_instruction *ins) {
    if (ins->op == TRT_OP_CONV2D && ins->p.conv.tap_sums)
        trt_conv_weight_sums(&ins->p.conv, (int32_t *)(void *)ins->p.conv.tap_sums,
                             (int32_t *)(void *)ins->p.conv.window_sums);
    if (ins->op == TRT_OP_LINEAR && ins->p.linear.weight_sums)
        trt_linear_weight_sums(&ins->p.linear, (int32_t *)(void *)ins->p.linear.weight_sums);
}

void trt_execute_instruction(const trt_instruction *ins) {
    switch ((trt_op_kind)ins->op) {
    case TRT_OP_QUANTIZE: trt_quantize_per_tensor(&ins->p.quantize); break;
    case TRT_OP_DEQUANTIZE: trt_dequantize_per_tensor(&ins->p.dequantize); break;
    case TRT_OP_CONV2D: trt_quantized_conv2d(&ins->p.conv); break;
    case TRT_OP_DEPTHWISE_CONV2D: trt_quantized_depthwise_conv2d(&ins->p.conv); break;
    case TRT_OP_MAX_POOL2D: trt_quantized_max_pool2d(&ins->p.pool); break;
    case TRT_OP_LINEAR: trt_quantized_linear(&ins->p.linear); break;
    case TRT_OP_CLONE_DIM_ORDER: trt_clone_dim_order(&ins->p.copy); break;
    }
}
