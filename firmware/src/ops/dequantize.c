/* cortex_m::dequantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min,
 * int quant_max, ScalarType dtype, *, Tensor(a!) out): bind step and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/mve/kernels_mve.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_dequantize_params *p = &params->dequantize_per_tensor;
    const trt_tensor *in = NULL, *out = NULL;
    trt_qparams q;
    trt_status s;
    (void)macs;
    if ((s = trt_bind_quantization(c, TRT_INT8, TRT_FLOAT32, &in, &out, &q)) != TRT_OK) return s;
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (float *)(void *)out->mutable_data;
    p->count = out->numel;
    p->scale = (float)q.scale;
    p->zero_point = (float)q.zero_point;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_dequantize_mve, dequantize_per_tensor)
TRT_RUN_ALONE(trt_dequantize_c, dequantize_per_tensor)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_dequantize_mve, NULL, NULL, NULL, NULL)
    TRT_C_VARIANT(trt_dequantize_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(dequantize_per_tensor, bind, VARIANTS);
