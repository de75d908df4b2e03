/* cortex_m::quantized_add.out(Tensor self, int self_zero_point, int self_multiplier, int self_shift,
 * Tensor other, int other_zero_point, int other_multiplier, int other_shift, int output_zero_point,
 * int output_multiplier, int output_shift, int activation_min, int activation_max, *,
 * Tensor(a!) out): bind step and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/mve/kernels_mve.h"
#include "broadcast.h"
#include "operator_table.h"

static trt_status bind_requant(const trt_call *c, uint32_t first, int32_t *zero_point, int32_t *multiplier,
                               int32_t *shift) {
    trt_status s;
    if ((s = trt_arg_int(c, first, -TRT_MAX_ZERO_POINT, TRT_MAX_ZERO_POINT, zero_point)) != TRT_OK ||
        (s = trt_arg_int(c, first + 1, INT32_MIN, INT32_MAX, multiplier)) != TRT_OK ||
        (s = trt_arg_int(c, first + 2, -TRT_MAX_SHIFT, TRT_MAX_SHIFT, shift)) != TRT_OK)
        return s;
    return TRT_OK;
}

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_add_params *p = &params->quantized_add;
    const trt_tensor *a = NULL, *b = NULL, *out = NULL;
    trt_status s;
    (void)macs;
    if ((s = trt_bind_binary(c, 0, 4, 13, TRT_INT8, &a, &b, &out, &p->shape)) != TRT_OK ||
        (s = bind_requant(c, 1, &p->a_zero_point, &p->a_multiplier, &p->a_shift)) != TRT_OK ||
        (s = bind_requant(c, 5, &p->b_zero_point, &p->b_multiplier, &p->b_shift)) != TRT_OK ||
        (s = bind_requant(c, 8, &p->output_zero_point, &p->output_multiplier, &p->output_shift)) != TRT_OK ||
        (s = trt_need_act_range(c, 11, 12, &p->activation_min, &p->activation_max)) != TRT_OK)
        return s;
    if ((s = trt_need_quantized_operands(c, a, b)) != TRT_OK) return s;
    p->a = (const int8_t *)(const void *)a->data;
    p->b = (const int8_t *)(const void *)b->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    return TRT_OK;
}

TRT_ACCEPTS(trt_quantized_add_table_mve_accepts, quantized_add)
TRT_BYTES(trt_quantized_add_table_mve_temp_bytes, quantized_add)
TRT_RUN(trt_quantized_add_table_mve, quantized_add)
TRT_ACCEPTS(trt_quantized_add_mve_accepts, quantized_add)
TRT_RUN_ALONE(trt_quantized_add_mve, quantized_add)
TRT_ACCEPTS(trt_quantized_add_dsp_accepts, quantized_add)
TRT_BYTES(trt_quantized_add_dsp_temp_bytes, quantized_add)
TRT_RUN(trt_quantized_add_dsp, quantized_add)
TRT_RUN_ALONE(trt_quantized_add_c, quantized_add)

/* Fastest first: with Helium, operands of one layout through their tables, then any. */
static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_quantized_add_table_mve, trt_quantized_add_table_mve_accepts_p, NULL, NULL, trt_quantized_add_table_mve_temp_bytes_p)
    TRT_MVE_VARIANT(trt_quantized_add_mve, trt_quantized_add_mve_accepts_p, NULL, NULL, NULL)
    TRT_DSP_VARIANT(trt_quantized_add_dsp, trt_quantized_add_dsp_accepts_p, NULL, NULL, trt_quantized_add_dsp_temp_bytes_p)
    TRT_C_VARIANT(trt_quantized_add_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(quantized_add, bind, VARIANTS);
