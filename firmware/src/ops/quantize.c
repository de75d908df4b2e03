/* cortex_m::quantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min,
 * int quant_max, ScalarType dtype, *, Tensor(a!) out): bind step and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/mve/kernels_mve.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_quantize_params *p = &params->quantize_per_tensor;
    const trt_tensor *in = NULL, *out = NULL;
    trt_qparams q;
    trt_status s;
    (void)macs;
    if ((s = trt_bind_quantization(c, TRT_FLOAT32, TRT_INT8, &in, &out, &q)) != TRT_OK) return s;
    p->input = (const float *)(const void *)in->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    p->count = out->numel;
    p->inv_scale = (float)(1.0 / q.scale);
    p->zero_point = (float)q.zero_point;
    p->quant_min = (float)q.quant_min;
    p->quant_max = (float)q.quant_max;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_quantize_mve, quantize_per_tensor)
TRT_RUN_ALONE(trt_quantize_dsp, quantize_per_tensor)
TRT_RUN_ALONE(trt_quantize_c, quantize_per_tensor)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_quantize_mve, NULL, NULL, NULL, NULL)
    TRT_DSP_VARIANT(trt_quantize_dsp, NULL, NULL, NULL, NULL)
    TRT_C_VARIANT(trt_quantize_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(quantize_per_tensor, bind, VARIANTS);
