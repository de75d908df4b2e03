/* The portable elementwise operators ExecuTorch's Cortex-M lowering leaves to the CPU: bind steps and
 * variants of aten::add, sub, mul, div, hardtanh, sigmoid, tanh, abs, neg, exp, pow.Tensor_Scalar,
 * leaky_relu, hardswish, hardsigmoid, elu, the copies expand_copy, slice_copy and select_copy, and
 * dim_order_ops::_to_dim_order_copy. Any shape, torch's broadcasting, any dim order on every side. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

/* The dtypes a pointwise operand or output may have. */
static int known_dtype(uint8_t dtype) {
    return dtype == TRT_UINT8 || dtype == TRT_INT8 || dtype == TRT_INT16 || dtype == TRT_INT32 || dtype == TRT_INT64 ||
           dtype == TRT_FLOAT32 || dtype == TRT_BOOL;
}

static trt_status operand(const trt_call *c, uint32_t i, const trt_tensor **t) {
    trt_status s = trt_arg_tensor(c, i, t);
    if (s != TRT_OK) return s;
    if (!known_dtype((*t)->dtype)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an operand dtype it does not take in");
    return trt_need_input(c, *t, (*t)->dtype);
}

/* A Scalar argument (int, float or bool) as a double, and whether it is an integer. */
static trt_status scalar(const trt_call *c, uint32_t i, double *value, int *integral) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind == PTE_VALUE_DOUBLE) {
        *value = v->u.d;
        *integral = 0;
    } else if (v->kind == PTE_VALUE_INT || v->kind == PTE_VALUE_BOOL) {
        if (v->u.i > ((int64_t)1 << 53) || v->u.i < -((int64_t)1 << 53))
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "scalar argument out of range in");
        *value = (double)v->u.i;
        *integral = 1;
    } else {
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected a scalar argument in");
    }
    return TRT_OK;
}

/* Operand t seen from the output's logical index (torch's broadcast: right-aligned, a size-1 dim
 * stretches): its element strides, 0 along a broadcast dim. */
static trt_status broadcast_strides(const trt_call *c, const trt_tensor *t, const trt_tensor *out, int32_t *strides) {
    if (t->rank > out->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an operand of more dims than the output in");
    for (int d = 0; d < out->rank; d++) {
        const int td = d - (out->rank - t->rank);
        if (td < 0 || (t->sizes[td] == 1 && out->sizes[d] != 1)) strides[d] = 0;
        else if (t->sizes[td] != out->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shapes that do not broadcast in");
        else strides[d] = t->strides[td];
    }
    return TRT_OK;
}

/* out (argument out_arg) of a known dtype, disjoint from a and b, each broadcast into it. */
static trt_status bind_shapes(const trt_call *c, trt_pointwise_params *p, uint8_t op, const trt_tensor *a,
                              const trt_tensor *b, uint32_t out_arg) {
    const trt_tensor *out = NULL;
    trt_status s;
    if ((s = trt_arg_tensor(c, out_arg, &out)) != TRT_OK) return s;
    if (!known_dtype(out->dtype)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an output dtype it does not take in");
    if ((s = trt_need_output(c, out_arg, &out, out->dtype)) != TRT_OK || (s = trt_need_disjoint(c, out, a)) != TRT_OK ||
        (b && (s = trt_need_disjoint(c, out, b)) != TRT_OK))
        return s;
    if (out->rank > TRT_PORTABLE_MAX_RANK) return trt_bad_arg(c, TRT_ERR_LIMIT, "more dims than the runtime takes in");
    if (op != TRT_PW_COPY && out->dtype != TRT_FLOAT32 && (a->dtype == TRT_FLOAT32 || (b && b->dtype == TRT_FLOAT32)))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a float operand into an integer output in");
    if ((s = broadcast_strides(c, a, out, p->a_strides)) != TRT_OK) return s;
    if (b && (s = broadcast_strides(c, b, out, p->b_strides)) != TRT_OK) return s;
    p->op = op;
    p->a = a->data;
    p->b = b ? b->data : NULL;
    p->output = out->mutable_data;
    p->a_dtype = a->dtype;
    p->b_dtype = b ? b->dtype : a->dtype;
    p->out_dtype = out->dtype;
    p->rank = out->rank;
    for (int d = 0; d < out->rank; d++) {
        p->sizes[d] = out->sizes[d];
        p->out_strides[d] = out->strides[d];
        if (!b) p->b_strides[d] = 0;
    }
    p->alpha = 1.0f;
    p->alpha_int = 1;
    return TRT_OK;
}

/* The ops whose result is float whatever the operands: an integer output is refused. */
static int float_only(uint8_t op) {
    return op == TRT_PW_DIV || op == TRT_PW_SIGMOID || op == TRT_PW_TANH || op == TRT_PW_EXP || op == TRT_PW_POW ||
           op >= TRT_PW_LEAKY_RELU;
}

/* (self, other, out) or (self, other, alpha, out). */
static trt_status bind_binary(const trt_call *c, trt_pointwise_params *p, uint8_t op, int has_alpha) {
    const trt_tensor *a = NULL, *b = NULL;
    trt_status s;
    if ((s = operand(c, 0, &a)) != TRT_OK || (s = operand(c, 1, &b)) != TRT_OK ||
        (s = bind_shapes(c, p, op, a, b, has_alpha ? 3 : 2)) != TRT_OK)
        return s;
    if (float_only(op) && p->out_dtype != TRT_FLOAT32) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an integer output in");
    if (has_alpha) {
        double alpha = 1.0;
        int integral = 0;
        if ((s = scalar(c, 2, &alpha, &integral)) != TRT_OK) return s;
        if (p->out_dtype != TRT_FLOAT32 && (!integral || alpha < INT32_MIN || alpha > INT32_MAX))
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an alpha other than an int32 on integers in");
        p->alpha = (float)alpha;
        p->alpha_int = (int32_t)alpha;
    }
    return TRT_OK;
}

/* (self, out) */
static trt_status bind_unary(const trt_call *c, trt_pointwise_params *p, uint8_t op, uint32_t out_arg) {
    const trt_tensor *a = NULL;
    trt_status s;
    if ((s = operand(c, 0, &a)) != TRT_OK || (s = bind_shapes(c, p, op, a, NULL, out_arg)) != TRT_OK) return s;
    if (float_only(op) && p->out_dtype != TRT_FLOAT32) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an integer output in");
    if (op != TRT_PW_COPY && p->out_dtype != a->dtype && p->out_dtype != TRT_FLOAT32)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output dtypes differ in");
    return TRT_OK;
}

static trt_status bind_add(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_binary(c, &p->aten_add, TRT_PW_ADD, 1);
}
static trt_status bind_sub(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_binary(c, &p->aten_sub, TRT_PW_SUB, 1);
}
static trt_status bind_mul(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_binary(c, &p->aten_mul, TRT_PW_MUL, 0);
}
static trt_status bind_div(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_binary(c, &p->aten_div, TRT_PW_DIV, 0);
}

/* hardtanh.out(self, Scalar min_val, Scalar max_val, *, out) */
static trt_status bind_hardtanh(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_pointwise_params *p = &params->aten_hardtanh;
    double lo = 0.0, hi = 0.0;
    int lo_int = 0, hi_int = 0;
    trt_status s;
    (void)macs;
    if ((s = bind_unary(c, p, TRT_PW_HARDTANH, 3)) != TRT_OK || (s = scalar(c, 1, &lo, &lo_int)) != TRT_OK ||
        (s = scalar(c, 2, &hi, &hi_int)) != TRT_OK)
        return s;
    if (p->out_dtype != TRT_FLOAT32 && (!lo_int || !hi_int || lo < INT32_MIN || hi > INT32_MAX))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "bounds other than int32 on integers in");
    p->lo = (float)lo;
    p->hi = (float)hi;
    /* a bound beyond int32 on the other side clamps nothing an int32 bound would not */
    p->lo_int = lo > INT32_MAX ? INT32_MAX : (int32_t)lo;
    p->hi_int = hi < INT32_MIN ? INT32_MIN : (int32_t)hi;
    return TRT_OK;
}

static trt_status bind_sigmoid(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_unary(c, &p->aten_sigmoid, TRT_PW_SIGMOID, 1);
}
static trt_status bind_tanh(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_unary(c, &p->aten_tanh, TRT_PW_TANH, 1);
}
static trt_status bind_abs(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_unary(c, &p->aten_abs, TRT_PW_ABS, 1);
}
static trt_status bind_neg(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_unary(c, &p->aten_neg, TRT_PW_NEG, 1);
}
static trt_status bind_exp(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_unary(c, &p->aten_exp, TRT_PW_EXP, 1);
}

/* pow.Tensor_Scalar_out(self, Scalar exponent, *, out): float */
static trt_status bind_pow(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_pointwise_params *p = &params->aten_pow;
    double exponent = 0.0;
    int integral = 0;
    trt_status s;
    (void)macs;
    if ((s = bind_unary(c, p, TRT_PW_POW, 2)) != TRT_OK || (s = scalar(c, 1, &exponent, &integral)) != TRT_OK) return s;
    p->exponent = (float)exponent;
    return TRT_OK;
}

/* leaky_relu.out(self, Scalar negative_slope, *, out): float */
static trt_status bind_leaky_relu(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_pointwise_params *p = &params->aten_leaky_relu;
    double slope = 0.0;
    int integral = 0;
    trt_status s;
    (void)macs;
    if ((s = bind_unary(c, p, TRT_PW_LEAKY_RELU, 2)) != TRT_OK || (s = scalar(c, 1, &slope, &integral)) != TRT_OK) return s;
    p->alpha = (float)slope;
    return TRT_OK;
}

static trt_status bind_hardswish(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_unary(c, &p->aten_hardswish, TRT_PW_HARDSWISH, 1);
}
static trt_status bind_hardsigmoid(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_unary(c, &p->aten_hardsigmoid, TRT_PW_HARDSIGMOID, 1);
}

/* elu.out(self, Scalar alpha, Scalar scale, Scalar input_scale, *, out): float */
static trt_status bind_elu(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_pointwise_params *p = &params->aten_elu;
    double alpha = 0.0, scale = 0.0, input_scale = 0.0;
    int integral = 0;
    trt_status s;
    (void)macs;
    if ((s = bind_unary(c, p, TRT_PW_ELU, 4)) != TRT_OK || (s = scalar(c, 1, &alpha, &integral)) != TRT_OK ||
        (s = scalar(c, 2, &scale, &integral)) != TRT_OK || (s = scalar(c, 3, &input_scale, &integral)) != TRT_OK)
        return s;
    p->lo = (float)(alpha * scale);
    p->hi = (float)scale;
    p->exponent = (float)input_scale;
    return TRT_OK;
}

/* _to_dim_order_copy.out(self, *, bool non_blocking, int[]? dim_order, out): the output's dim order is
 * dim_order (or contiguous), its dtype may differ from the input's (a cast). */
static trt_status bind_to_dim_order_copy(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_pointwise_params *p = &params->to_dim_order_copy;
    const trt_tensor *in = NULL, *out = NULL;
    const trt_value *order = NULL;
    int non_blocking = 0;
    trt_status s;
    (void)macs;
    if ((s = bind_unary(c, p, TRT_PW_COPY, 3)) != TRT_OK || (s = trt_arg_tensor(c, 0, &in)) != TRT_OK ||
        (s = trt_arg_tensor(c, 3, &out)) != TRT_OK || (s = trt_arg_bool(c, 1, &non_blocking)) != TRT_OK ||
        (s = trt_arg_value(c, 2, &order)) != TRT_OK)
        return s;
    if (in->rank != out->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "rank mismatch in");
    for (int d = 0; d < in->rank; d++)
        if (in->sizes[d] != out->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shape mismatch in");
    if (order->kind == PTE_VALUE_INT_LIST) {
        if (order->count != out->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "dim_order does not match the output in");
        for (int d = 0; d < out->rank; d++)
            if (c->tables->list_items[order->index + d] != out->dim_order[d])
                return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "dim_order does not match the output in");
    } else if (order->kind != PTE_VALUE_NULL) {
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] dim_order in");
    }
    return TRT_OK;
}

/* A copy of `view` (a strided view of argument 0's elements) into the output at out_arg, of one dtype. */
static trt_status bind_view_copy(const trt_call *c, trt_pointwise_params *p, const trt_tensor *view, uint32_t out_arg) {
    trt_status s = bind_shapes(c, p, TRT_PW_COPY, view, NULL, out_arg);
    if (s != TRT_OK) return s;
    if (p->out_dtype != view->dtype) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output dtypes differ in");
    return TRT_OK;
}

/* expand_copy.out(self, SymInt[] size, *, bool implicit, out): the output's shape is `size` (-1 keeps a dim);
 * torch's broadcasting of self to it. */
static trt_status bind_expand_copy(const trt_call *c, trt_params *params, uint64_t *macs) {
    const trt_tensor *in = NULL;
    int implicit = 0;
    trt_status s;
    (void)macs;
    if ((s = operand(c, 0, &in)) != TRT_OK || (s = trt_arg_bool(c, 2, &implicit)) != TRT_OK) return s;
    return bind_view_copy(c, &params->aten_expand_copy, in, 3);
}

/* An optional int (None: `missing`). */
static trt_status optional_int(const trt_call *c, uint32_t i, int64_t missing, int64_t *value) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind == PTE_VALUE_NULL) *value = missing;
    else if (v->kind == PTE_VALUE_INT) *value = v->u.i;
    else return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int argument in");
    return TRT_OK;
}

/* slice_copy.Tensor_out(self, int dim, SymInt? start, SymInt? end, SymInt step, *, out): torch's bounds (a
 * negative one counts from the end; both clamped to the dim). */
static trt_status bind_slice_copy(const trt_call *c, trt_params *params, uint64_t *macs) {
    const trt_tensor *in = NULL;
    int32_t dim = 0;
    int64_t start = 0, end = 0, step = 0;
    trt_status s;
    (void)macs;
    if ((s = operand(c, 0, &in)) != TRT_OK) return s;
    if (in->rank < 1) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "0-dim input in");
    if ((s = trt_arg_int(c, 1, -(int64_t)in->rank, (int64_t)in->rank - 1, &dim)) != TRT_OK ||
        (s = optional_int(c, 2, 0, &start)) != TRT_OK || (s = optional_int(c, 3, INT64_MAX, &end)) != TRT_OK ||
        (s = optional_int(c, 4, 1, &step)) != TRT_OK)
        return s;
    if (step < 1 || step > INT32_MAX) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a step below 1 in");
    if (dim < 0) dim += in->rank;
    const int64_t size = in->sizes[dim];
    if (start < 0) start += size;
    if (end < 0) end += size;
    start = start < 0 ? 0 : (start > size ? size : start);
    end = end < start ? start : (end > size ? size : end);
    trt_tensor view = *in;
    view.sizes[dim] = (int32_t)((end - start + step - 1) / step);
    view.strides[dim] = (int32_t)(in->strides[dim] * step);
    view.data = in->data + (size_t)start * (size_t)in->strides[dim] * in->elem_size;
    return bind_view_copy(c, &params->aten_slice_copy, &view, 5);
}

/* select_copy.int_out(self, int dim, SymInt index, *, out): one index of dim, the dim dropped. */
static trt_status bind_select_copy(const trt_call *c, trt_params *params, uint64_t *macs) {
    const trt_tensor *in = NULL;
    int32_t dim = 0, index = 0;
    trt_status s;
    (void)macs;
    if ((s = operand(c, 0, &in)) != TRT_OK) return s;
    if (in->rank < 1) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "0-dim input in");
    if ((s = trt_arg_int(c, 1, -(int64_t)in->rank, (int64_t)in->rank - 1, &dim)) != TRT_OK) return s;
    if (dim < 0) dim += in->rank;
    if ((s = trt_arg_int(c, 2, -(int64_t)in->sizes[dim], (int64_t)in->sizes[dim] - 1, &index)) != TRT_OK) return s;
    if (index < 0) index += in->sizes[dim];
    trt_tensor view = *in;
    view.data = in->data + (size_t)index * (size_t)in->strides[dim] * in->elem_size;
    view.rank = (uint8_t)(in->rank - 1);
    for (int d = dim; d < view.rank; d++) {
        view.sizes[d] = in->sizes[d + 1];
        view.strides[d] = in->strides[d + 1];
    }
    return bind_view_copy(c, &params->aten_select_copy, &view, 3);
}

/* Every row shares one kernel and one parameter struct: the union's members of them lie at its start. */
TRT_RUN_ALONE(trt_pointwise_c, aten_add)

static const trt_kernel_variant ADD_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_add, bind_add, ADD_VARIANTS);

static const trt_kernel_variant SUB_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_sub, bind_sub, SUB_VARIANTS);

static const trt_kernel_variant MUL_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_mul, bind_mul, MUL_VARIANTS);

static const trt_kernel_variant DIV_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_div, bind_div, DIV_VARIANTS);

static const trt_kernel_variant HARDTANH_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_hardtanh, bind_hardtanh, HARDTANH_VARIANTS);

static const trt_kernel_variant SIGMOID_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_sigmoid, bind_sigmoid, SIGMOID_VARIANTS);

static const trt_kernel_variant TANH_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_tanh, bind_tanh, TANH_VARIANTS);

static const trt_kernel_variant ABS_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_abs, bind_abs, ABS_VARIANTS);

static const trt_kernel_variant NEG_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_neg, bind_neg, NEG_VARIANTS);

static const trt_kernel_variant EXP_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_exp, bind_exp, EXP_VARIANTS);

static const trt_kernel_variant POW_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_pow, bind_pow, POW_VARIANTS);

static const trt_kernel_variant TO_DIM_ORDER_COPY_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(to_dim_order_copy, bind_to_dim_order_copy, TO_DIM_ORDER_COPY_VARIANTS);

static const trt_kernel_variant LEAKY_RELU_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_leaky_relu, bind_leaky_relu, LEAKY_RELU_VARIANTS);

static const trt_kernel_variant HARDSWISH_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_hardswish, bind_hardswish, HARDSWISH_VARIANTS);

static const trt_kernel_variant HARDSIGMOID_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_hardsigmoid, bind_hardsigmoid, HARDSIGMOID_VARIANTS);

static const trt_kernel_variant ELU_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_elu, bind_elu, ELU_VARIANTS);

static const trt_kernel_variant EXPAND_COPY_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_expand_copy, bind_expand_copy, EXPAND_COPY_VARIANTS);

static const trt_kernel_variant SLICE_COPY_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_slice_copy, bind_slice_copy, SLICE_COPY_VARIANTS);

static const trt_kernel_variant SELECT_COPY_VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_select_copy, bind_select_copy, SELECT_COPY_VARIANTS);
