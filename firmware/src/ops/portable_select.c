/* The portable selection operators ExecuTorch's Cortex-M lowering leaves to the CPU: bind steps and
 * variants of aten::eq, ne, lt, le, gt, ge (Scalar_out and Tensor_out), aten::where.self_out and
 * aten::log1p.out. Any shape, torch's broadcasting, any dim order on every side. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

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

/* t seen from the output's logical index (torch's broadcast): its element strides, 0 along a broadcast dim. */
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

/* The output (argument out_arg) of a known dtype, disjoint from the operands, each broadcast into it. */
static trt_status bind_shapes(const trt_call *c, trt_select_params *p, uint8_t op, const trt_tensor *a,
                              const trt_tensor *b, uint32_t out_arg) {
    const trt_tensor *out = NULL;
    trt_status s;
    if ((s = trt_arg_tensor(c, out_arg, &out)) != TRT_OK) return s;
    if (!known_dtype(out->dtype)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an output dtype it does not take in");
    if ((s = trt_need_output(c, out_arg, &out, out->dtype)) != TRT_OK || (s = trt_need_disjoint(c, out, a)) != TRT_OK ||
        (b && (s = trt_need_disjoint(c, out, b)) != TRT_OK))
        return s;
    if (out->rank > TRT_PORTABLE_MAX_RANK) return trt_bad_arg(c, TRT_ERR_LIMIT, "more dims than the runtime takes in");
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
    }
    return TRT_OK;
}

/* <op>.Tensor_out(self, other, *, out) and <op>.Scalar_out(self, Scalar other, *, out): compared in
 * float32 when either side is a float, else as integers. */
static trt_status bind_compare(const trt_call *c, trt_select_params *p, uint8_t op, int scalar) {
    const trt_tensor *a = NULL, *b = NULL;
    trt_status s;
    if ((s = operand(c, 0, &a)) != TRT_OK || (!scalar && (s = operand(c, 1, &b)) != TRT_OK) ||
        (s = bind_shapes(c, p, op, a, b, 2)) != TRT_OK)
        return s;
    p->float_compute = a->dtype == TRT_FLOAT32 || (b && b->dtype == TRT_FLOAT32);
    if (!scalar) return TRT_OK;
    const trt_value *v = NULL;
    if ((s = trt_arg_value(c, 1, &v)) != TRT_OK) return s;
    p->b_is_scalar = 1;
    if (v->kind == PTE_VALUE_DOUBLE) {
        p->float_compute = 1;
        p->u.scalar.f = (float)v->u.d;
    } else if (v->kind == PTE_VALUE_INT || v->kind == PTE_VALUE_BOOL) {
        p->u.scalar.f = (float)v->u.i;
        p->u.scalar.i = v->u.i;
    } else {
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected a scalar argument in");
    }
    return TRT_OK;
}

/* where.self_out(condition, self, other, *, out): condition bool (or uint8). */
static trt_status bind_where(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_select_params *p = &params->aten_where;
    const trt_tensor *cond = NULL, *a = NULL, *b = NULL;
    const trt_tensor *out = NULL;
    trt_status s;
    (void)macs;
    if ((s = operand(c, 0, &cond)) != TRT_OK || (s = operand(c, 1, &a)) != TRT_OK || (s = operand(c, 2, &b)) != TRT_OK ||
        (s = bind_shapes(c, p, TRT_SEL_WHERE, a, b, 3)) != TRT_OK || (s = trt_arg_tensor(c, 3, &out)) != TRT_OK ||
        (s = trt_need_disjoint(c, out, cond)) != TRT_OK || (s = broadcast_strides(c, cond, out, p->u.cond_strides)) != TRT_OK)
        return s;
    if (cond->dtype != TRT_BOOL && cond->dtype != TRT_UINT8)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a condition other than bool in");
    p->cond = cond->data;
    p->cond_dtype = cond->dtype;
    return TRT_OK;
}

/* log1p.out(self, *, out): a float32 output. */
static trt_status bind_log1p(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_select_params *p = &params->aten_log1p;
    const trt_tensor *a = NULL;
    trt_status s;
    (void)macs;
    if ((s = operand(c, 0, &a)) != TRT_OK || (s = bind_shapes(c, p, TRT_SEL_LOG1P, a, NULL, 1)) != TRT_OK) return s;
    if (p->out_dtype != TRT_FLOAT32) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an output other than float32 in");
    return TRT_OK;
}

#define COMPARISON(name, op)                                                                         \
    static trt_status bind_##name##_scalar(const trt_call *c, trt_params *p, uint64_t *macs) {       \
        (void)macs;                                                                                  \
        return bind_compare(c, &p->aten_##name##_scalar, op, 1);                                     \
    }                                                                                                \
    static trt_status bind_##name##_tensor(const trt_call *c, trt_params *p, uint64_t *macs) {       \
        (void)macs;                                                                                  \
        return bind_compare(c, &p->aten_##name##_tensor, op, 0);                                     \
    }
COMPARISON(eq, TRT_SEL_EQ)
COMPARISON(ne, TRT_SEL_NE)
COMPARISON(lt, TRT_SEL_LT)
COMPARISON(le, TRT_SEL_LE)
COMPARISON(gt, TRT_SEL_GT)
COMPARISON(ge, TRT_SEL_GE)

/* Every row shares one kernel and one parameter struct: the union's members of them lie at its start. */
TRT_RUN_ALONE(trt_select_c, aten_where)

static const trt_kernel_variant WHERE_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_where, bind_where, WHERE_VARIANTS);

static const trt_kernel_variant LOG1P_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_log1p, bind_log1p, LOG1P_VARIANTS);

static const trt_kernel_variant EQ_SCALAR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_eq_scalar, bind_eq_scalar, EQ_SCALAR_VARIANTS);

static const trt_kernel_variant EQ_TENSOR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_eq_tensor, bind_eq_tensor, EQ_TENSOR_VARIANTS);

static const trt_kernel_variant NE_SCALAR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_ne_scalar, bind_ne_scalar, NE_SCALAR_VARIANTS);

static const trt_kernel_variant NE_TENSOR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_ne_tensor, bind_ne_tensor, NE_TENSOR_VARIANTS);

static const trt_kernel_variant LT_SCALAR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_lt_scalar, bind_lt_scalar, LT_SCALAR_VARIANTS);

static const trt_kernel_variant LT_TENSOR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_lt_tensor, bind_lt_tensor, LT_TENSOR_VARIANTS);

static const trt_kernel_variant LE_SCALAR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_le_scalar, bind_le_scalar, LE_SCALAR_VARIANTS);

static const trt_kernel_variant LE_TENSOR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_le_tensor, bind_le_tensor, LE_TENSOR_VARIANTS);

static const trt_kernel_variant GT_SCALAR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_gt_scalar, bind_gt_scalar, GT_SCALAR_VARIANTS);

static const trt_kernel_variant GT_TENSOR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_gt_tensor, bind_gt_tensor, GT_TENSOR_VARIANTS);

static const trt_kernel_variant GE_SCALAR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_ge_scalar, bind_ge_scalar, GE_SCALAR_VARIANTS);

static const trt_kernel_variant GE_TENSOR_VARIANTS[] = {
    TRT_C_VARIANT(trt_select_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_ge_tensor, bind_ge_tensor, GE_TENSOR_VARIANTS);
