/* cortex_m::dequantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min,
 * int quant_max, ScalarType dtype, *, Tensor(a!) out): bind step and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/mve/kernels_mve.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    const trt_tensor *in = NULL, *out = NULL;
    double scale = 0;
    int32_t zp = 0, qmin = 0, qmax = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = trt_need_qparams(c, &scale, &zp, &qmin, &qmax)) != TRT_OK ||
        (s = trt_need_output(c, 6, &out, TRT_FLOAT32)) != TRT_OK || (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (!trt_same_layout(in, out)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output layouts differ in");
    trt_dequantize_params *p = &params->dequantize_per_tensor;
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (float *)(void *)out->mutable_data;
    p->count = out->numel;
    p->scale = (float)scale;
    p->zero_point = (float)zp;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_dequantize_mve, dequantize_per_tensor)
TRT_RUN_ALONE(trt_dequantize_c, dequantize_per_tensor)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(NULL, NULL, NULL, NULL, trt_dequantize_mve_p)
    TRT_C_VARIANT(NULL, NULL, NULL, NULL, trt_dequantize_c_p)
};

TRT_DEFINE_OPERATOR(dequantize_per_tensor, bind, VARIANTS);
