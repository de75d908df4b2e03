/* cortex_m::quantized_div.out(Tensor self, int self_zero_point, Tensor other, int other_zero_point,
 * int output_zero_point, float output_scale, *, Tensor(a!) out): bind step and variants. int8
 * operands (the int16 form needs int16 quantize/dequantize, which this runtime does not run). */
#include <float.h>

#include "../kernels/c/kernels_c.h"
#include "broadcast.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_div_params *p = &params->quantized_div;
    const trt_tensor *a = NULL, *b = NULL, *out = NULL;
    int32_t out_zp = 0;
    double scale = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_bind_binary(c, 0, 2, 6, TRT_INT8, &a, &b, &out, &p->shape)) != TRT_OK ||
        (s = trt_arg_int(c, 1, -TRT_MAX_ZERO_POINT, TRT_MAX_ZERO_POINT, &p->a_zero_point)) != TRT_OK ||
        (s = trt_arg_int(c, 3, -TRT_MAX_ZERO_POINT, TRT_MAX_ZERO_POINT, &p->b_zero_point)) != TRT_OK ||
        (s = trt_arg_int(c, 4, -TRT_MAX_ZERO_POINT, TRT_MAX_ZERO_POINT, &out_zp)) != TRT_OK ||
        (s = trt_arg_double(c, 5, &scale)) != TRT_OK)
        return s;
    if (!trt_same_shape(a, b)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "operands of different shapes in");
    /* a finite float32 scale: the product with any quotient is then a number (or an infinity, the rail) */
    if (!(scale <= FLT_MAX && scale >= -FLT_MAX)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output scale not a finite float in");
    p->scale = (float)scale;
    p->output_zero_point = (float)out_zp;
    p->a = (const int8_t *)(const void *)a->data;
    p->b = (const int8_t *)(const void *)b->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_quantized_div_c, quantized_div)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_quantized_div_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(quantized_div, bind, VARIANTS);
