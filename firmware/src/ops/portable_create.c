/* The portable creation operators ExecuTorch's Cortex-M lowering leaves to the CPU (a constant the
 * program makes as it runs): bind steps and variants of aten::full.out, aten::arange.out and
 * aten::arange.start_out, into an output of any dtype. */
#include <math.h>

#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

static int known_dtype(uint8_t dtype) {
    return dtype == TRT_UINT8 || dtype == TRT_INT8 || dtype == TRT_INT16 || dtype == TRT_INT32 || dtype == TRT_INT64 ||
           dtype == TRT_FLOAT32 || dtype == TRT_BOOL;
}

/* A Scalar argument: its value as a double and, when it is an int or a bool, as an int64. */
static trt_status scalar(const trt_call *c, uint32_t i, double *value, int64_t *as_int, int *integral) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind == PTE_VALUE_DOUBLE) {
        *value = v->u.d;
        *as_int = 0;
        *integral = 0;
    } else if (v->kind == PTE_VALUE_INT || v->kind == PTE_VALUE_BOOL) {
        *value = (double)v->u.i;
        *as_int = v->u.i;
        *integral = 1;
    } else {
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected a scalar argument in");
    }
    return TRT_OK;
}

/* A double an integer output may take: C's conversion of it is defined (truncated, within int64). */
static int fits_integer(double v) { return v > -9223372036854775808.0 && v < 9223372036854775808.0; }

static trt_status output(const trt_call *c, uint32_t out_arg, trt_create_params *p, const trt_tensor **out) {
    trt_status s = trt_arg_tensor(c, out_arg, out);
    if (s != TRT_OK) return s;
    if (!known_dtype((*out)->dtype)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an output dtype it does not take in");
    if ((s = trt_need_output(c, out_arg, out, (*out)->dtype)) != TRT_OK) return s;
    p->output = (*out)->mutable_data;
    p->out_dtype = (*out)->dtype;
    p->count = (*out)->numel;
    return TRT_OK;
}

/* full.out(SymInt[] size, Scalar fill_value, *, out): every element the value, in the output's dtype. */
static trt_status bind_full(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_create_params *p = &params->aten_full;
    const trt_tensor *out = NULL;
    const trt_value *size = NULL;
    trt_status s;
    (void)macs;
    if ((s = output(c, 2, p, &out)) != TRT_OK || (s = trt_arg_value(c, 0, &size)) != TRT_OK ||
        (s = scalar(c, 1, &p->start, &p->start_int, &p->integral)) != TRT_OK)
        return s;
    if (size->kind != PTE_VALUE_INT_LIST || size->count != out->rank)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "size does not match the output in");
    for (int d = 0; d < out->rank; d++)
        if (c->tables->list_items[size->index + d] != out->sizes[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "size does not match the output in");
    if (!p->integral && out->dtype != TRT_FLOAT32 && out->dtype != TRT_BOOL && !fits_integer(p->start))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a fill value beyond the output's integers in");
    p->op = TRT_CREATE_FULL;
    return TRT_OK;
}

/* start, end, step -> the output of ceil((end - start) / step) elements start + i * step. */
static trt_status bind_range(const trt_call *c, trt_create_params *p, const trt_tensor *out, double start, double end,
                             double step) {
    if (!(step != 0.0) || !isfinite(start) || !isfinite(end) || !isfinite(step) || (end - start) / step < 0.0)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a range of no elements or a zero step in");
    if (out->rank != 1 || (double)out->numel != ceil((end - start) / step))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the range in");
    const double last = start + (double)(out->numel - 1) * step;
    if (out->dtype != TRT_FLOAT32 && out->dtype != TRT_BOOL && (!fits_integer(start) || !fits_integer(last)))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a range beyond the output's integers in");
    p->op = TRT_CREATE_ARANGE;
    p->start = start;
    p->step = step;
    return TRT_OK;
}

/* arange.out(Scalar end, *, out) */
static trt_status bind_arange(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_create_params *p = &params->aten_arange;
    const trt_tensor *out = NULL;
    double end = 0.0;
    int64_t end_int = 0;
    int integral = 0;
    trt_status s;
    (void)macs;
    if ((s = output(c, 1, p, &out)) != TRT_OK || (s = scalar(c, 0, &end, &end_int, &integral)) != TRT_OK) return s;
    return bind_range(c, p, out, 0.0, end, 1.0);
}

/* arange.start_out(Scalar start, Scalar end, Scalar step, *, out) */
static trt_status bind_arange_start(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_create_params *p = &params->aten_arange_start;
    const trt_tensor *out = NULL;
    double start = 0.0, end = 0.0, step = 0.0;
    int64_t as_int = 0;
    int integral = 0;
    trt_status s;
    (void)macs;
    if ((s = output(c, 3, p, &out)) != TRT_OK || (s = scalar(c, 0, &start, &as_int, &integral)) != TRT_OK ||
        (s = scalar(c, 1, &end, &as_int, &integral)) != TRT_OK || (s = scalar(c, 2, &step, &as_int, &integral)) != TRT_OK)
        return s;
    return bind_range(c, p, out, start, end, step);
}

/* Every row shares one kernel and one parameter struct: the union's members of them lie at its start. */
TRT_RUN_ALONE(trt_create_c, aten_full)

static const trt_kernel_variant FULL_VARIANTS[] = {
    TRT_C_VARIANT(trt_create_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_full, bind_full, FULL_VARIANTS);

static const trt_kernel_variant ARANGE_VARIANTS[] = {
    TRT_C_VARIANT(trt_create_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_arange, bind_arange, ARANGE_VARIANTS);

static const trt_kernel_variant ARANGE_START_VARIANTS[] = {
    TRT_C_VARIANT(trt_create_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_arange_start, bind_arange_start, ARANGE_START_VARIANTS);
