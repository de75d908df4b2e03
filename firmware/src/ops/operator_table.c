/* The operator table (operator_table.h): the rows and the variant choice. */
#include "operator_table.h"

static const trt_operator *const OPERATORS[] = {
    &trt_op_quantize_per_tensor,
    &trt_op_dequantize_per_tensor,
    &trt_op_quantized_conv2d,
    &trt_op_quantized_conv2d_nhwc,
    &trt_op_quantized_depthwise_conv2d,
    &trt_op_quantized_depthwise_conv2d_nhwc,
    &trt_op_quantized_transpose_conv2d,
    &trt_op_quantized_transpose_conv2d_nhwc,
    &trt_op_quantized_max_pool2d,
    &trt_op_quantized_max_pool2d_nhwc,
    &trt_op_quantized_avg_pool2d,
    &trt_op_quantized_avg_pool2d_nhwc,
    &trt_op_quantized_linear,
    &trt_op_quantized_batch_matmul,
    &trt_op_clone_dim_order,
};

const trt_operator *trt_find_operator(const char *name, uint32_t name_len, const char *overload,
                                      uint32_t overload_len) {
    if (!pte_text_is(overload, overload_len, "out")) return NULL;
    for (size_t i = 0; i < sizeof OPERATORS / sizeof OPERATORS[0]; i++)
        if (pte_text_is(name, name_len, OPERATORS[i]->name)) return OPERATORS[i];
    return NULL;
}

const trt_kernel_variant *trt_choose_variant(const trt_operator *op, const trt_params *p) {
    /* plain C, last, has no `accepts`: it takes every call its bind admits */
    for (uint8_t i = 0; i < op->n_variants; i++)
        if (!op->variants[i].accepts || op->variants[i].accepts(p)) return &op->variants[i];
    return NULL;   /* a build without plain C (a deploy library's) and no variant that takes the call */
}
