/* The operator table (operator_table.h): the rows and the variant choice. */
#include "operator_table.h"

#include <string.h>

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
    if (overload_len != 3 || memcmp(overload, "out", 3) != 0) return NULL;
    for (size_t i = 0; i < sizeof OPERATORS / sizeof OPERATORS[0]; i++) {
        const char *known = OPERATORS[i]->name;
        if (strlen(known) == name_len && memcmp(known, name, name_len) == 0) return OPERATORS[i];
    }
    return NULL;
}

const trt_kernel_variant *trt_choose_variant(const trt_operator *op, const trt_params *p) {
    for (uint8_t i = 0; i + 1 < op->n_variants; i++)
        if (!op->variants[i].accepts || op->variants[i].accepts(p)) return &op->variants[i];
    return &op->variants[op->n_variants - 1];   /* plain C takes every call its bind admits */
}
