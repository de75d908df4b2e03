/* aten::clamp.out(Tensor self, Scalar? min=None, Scalar? max=None, *, Tensor(a!) out) on int8 with
 * int bounds (what QuantizedClampActivationPass leaves): bind step and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/mve/kernels_mve.h"
#include "operator_table.h"

/* An optional int bound; torch converts it to the tensor's int8 and refuses one outside that range. */
static trt_status bound(const trt_call *c, uint32_t i, int32_t missing, int32_t *value, int *present) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    *present = v->kind != PTE_VALUE_NULL;
    if (!*present) {
        *value = missing;
        return TRT_OK;
    }
    return trt_arg_int(c, i, -128, 127, value);
}

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_clamp_params *p = &params->clamp;
    const trt_tensor *in = NULL, *out = NULL;
    int has_lo = 0, has_hi = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = bound(c, 1, -128, &p->lo, &has_lo)) != TRT_OK || (s = bound(c, 2, 127, &p->hi, &has_hi)) != TRT_OK ||
        (s = trt_need_output(c, 3, &out, TRT_INT8)) != TRT_OK || (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (!has_lo && !has_hi) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "neither bound given in");
    if (!trt_same_layout(in, out)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output layouts differ in");
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    p->count = out->numel;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_clamp_mve, clamp)
TRT_RUN_ALONE(trt_clamp_c, clamp)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_clamp_mve, NULL, NULL, NULL, NULL)
    TRT_C_VARIANT(trt_clamp_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(clamp, bind, VARIANTS);
