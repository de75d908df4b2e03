/* cortex_m::quantized_mul.out(Tensor self, int self_zero_point, Tensor other, int other_zero_point,
 * int output_zero_point, int output_multiplier, int output_shift, *, Tensor(a!) out): bind step
 * and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/mve/kernels_mve.h"
#include "broadcast.h"
#include "operator_table.h"

/* The operands' zero points: any for which x - zero_point of an int8 x is an exact int32, as the kernels
 * and the reference compute it. Hardswish's shifted one is zero_point - round(3 / scale), which a layer
 * whose calibration saw one value only (scale = float32's epsilon) takes to -25,165,952. */
#define MAX_OPERAND_ZERO_POINT (INT32_MAX - 128)

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_mul_params *p = &params->quantized_mul;
    const trt_tensor *a = NULL, *b = NULL, *out = NULL;
    trt_status s;
    (void)macs;
    if ((s = trt_bind_binary(c, 0, 2, 7, TRT_INT8, &a, &b, &out, &p->shape)) != TRT_OK ||
        (s = trt_arg_int(c, 1, -MAX_OPERAND_ZERO_POINT, MAX_OPERAND_ZERO_POINT, &p->a_zero_point)) != TRT_OK ||
        (s = trt_arg_int(c, 3, -MAX_OPERAND_ZERO_POINT, MAX_OPERAND_ZERO_POINT, &p->b_zero_point)) != TRT_OK ||
        (s = trt_arg_int(c, 4, -TRT_MAX_ZERO_POINT, TRT_MAX_ZERO_POINT, &p->output_zero_point)) != TRT_OK ||
        (s = trt_arg_int(c, 5, INT32_MIN, INT32_MAX, &p->output_multiplier)) != TRT_OK ||
        (s = trt_arg_int(c, 6, -TRT_MAX_SHIFT, TRT_MAX_SHIFT, &p->output_shift)) != TRT_OK)
        return s;
    if ((s = trt_need_quantized_operands(c, a, b)) != TRT_OK) return s;
    p->a = (const int8_t *)(const void *)a->data;
    p->b = (const int8_t *)(const void *)b->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    return TRT_OK;
}

TRT_ACCEPTS(trt_quantized_mul_mve_accepts, quantized_mul)
TRT_RUN_ALONE(trt_quantized_mul_mve, quantized_mul)
TRT_ACCEPTS(trt_quantized_mul_dsp_accepts, quantized_mul)
TRT_RUN_ALONE(trt_quantized_mul_dsp, quantized_mul)
TRT_RUN_ALONE(trt_quantized_mul_c, quantized_mul)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_quantized_mul_mve, trt_quantized_mul_mve_accepts_p, NULL, NULL, NULL)
    TRT_DSP_VARIANT(trt_quantized_mul_dsp, trt_quantized_mul_dsp_accepts_p, NULL, NULL, NULL)
    TRT_C_VARIANT(trt_quantized_mul_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(quantized_mul, bind, VARIANTS);
