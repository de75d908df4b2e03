/* cortex_m::quantized_activation.out(Tensor input, Tensor lut, *, Tensor(a!) out): bind step and
 * variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/mve/kernels_mve.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_lut_params *p = &params->quantized_activation;
    const trt_tensor *in = NULL, *lut = NULL, *out = NULL;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_tensor(c, 1, &lut)) != TRT_OK || (s = trt_need_constant(c, lut, TRT_INT8)) != TRT_OK ||
        (s = trt_need_output(c, 2, &out, TRT_INT8)) != TRT_OK || (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (lut->numel != 256) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "table without 256 entries in");
    if (!trt_same_layout(in, out)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output layouts differ in");
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    p->lut = (const int8_t *)(const void *)lut->data;
    p->count = out->numel;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_quantized_activation_mve, quantized_activation)
TRT_RUN_ALONE(trt_quantized_activation_c, quantized_activation)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_quantized_activation_mve, NULL, NULL, NULL, NULL)
    TRT_C_VARIANT(trt_quantized_activation_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(quantized_activation, bind, VARIANTS);
