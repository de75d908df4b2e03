/* The arguments the convolutions share (conv_common.h). */
#include "conv_common.h"

trt_status trt_bind_conv_common(const trt_call *c, const trt_conv_layout *layout, trt_conv_params *p,
                                const trt_tensor **weight) {
    int32_t stride[2], pad[2], dilation[2], in[4], out_nhwc[4];
    const uint32_t x = layout->extra;
    const trt_tensor *input = NULL, *out = NULL, *scratch = NULL;
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, &input)) != TRT_OK || (s = trt_need_input(c, input, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_tensor(c, 1, weight)) != TRT_OK || (s = trt_need_constant(c, *weight, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_pair(c, layout->stride, 1, TRT_MAX_SPATIAL_STEP, stride)) != TRT_OK ||
        (s = trt_arg_pair(c, layout->padding, 0, TRT_MAX_SPATIAL_STEP, pad)) != TRT_OK ||
        (s = trt_arg_pair(c, layout->dilation, 1, TRT_MAX_SPATIAL_STEP, dilation)) != TRT_OK ||
        (s = trt_arg_int(c, 6 + x, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &p->input_offset)) != TRT_OK ||
        (s = trt_arg_int(c, 7 + x, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &p->output_offset)) != TRT_OK ||
        (s = trt_need_act_range(c, 10 + x, 11 + x, &p->activation_min, &p->activation_max)) != TRT_OK ||
        (s = trt_arg_scratch(c, 12 + x, &scratch)) != TRT_OK)
        return s;
    /* the exporter's scratch tensors are not used (the variants size their own working memory),
     * but they must be tensors */
    const uint32_t out_arg = 12 + x + layout->scratch_tensors;
    for (uint32_t k = 13 + x; k < out_arg; k++)
        if ((s = trt_arg_scratch(c, k, &scratch)) != TRT_OK) return s;
    if ((s = trt_need_output(c, out_arg, &out, TRT_INT8)) != TRT_OK || (s = trt_need_disjoint(c, out, input)) != TRT_OK ||
        (s = trt_need_activation(c, input, layout->nhwc, in)) != TRT_OK ||
        (s = trt_need_activation(c, out, layout->nhwc, out_nhwc)) != TRT_OK)
        return s;
    if ((*weight)->rank != 4) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "weight is not 4-D in");
    p->batches = in[0];
    p->in_h = in[1];
    p->in_w = in[2];
    p->in_c = in[3];
    p->out_h = out_nhwc[1];
    p->out_w = out_nhwc[2];
    p->out_c = out_nhwc[3];
    p->kernel_h = (*weight)->sizes[1];
    p->kernel_w = (*weight)->sizes[2];
    p->stride_h = stride[0];
    p->stride_w = stride[1];
    p->pad_h = pad[0];
    p->pad_w = pad[1];
    p->dilation_h = dilation[0];
    p->dilation_w = dilation[1];
    if (p->in_c < 1 || p->out_c < 1 || p->kernel_h < 1 || p->kernel_w < 1 || out_nhwc[0] != p->batches)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the input in");
    p->input = (const int8_t *)(const void *)input->data;
    p->weights = (const int8_t *)(const void *)(*weight)->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    if ((s = trt_need_bias(c, 2, p->out_c, &p->bias)) != TRT_OK ||
        (s = trt_need_requant(c, 8 + x, 9 + x, p->out_c, &p->multipliers, &p->shifts)) != TRT_OK)
        return s;
    return TRT_OK;
}

trt_status trt_conv_output_extent(const trt_call *c, trt_conv_params *p) {
    const int32_t out_h = trt_pooled_extent(p->in_h, p->kernel_h, p->stride_h, p->pad_h, p->dilation_h);
    const int32_t out_w = trt_pooled_extent(p->in_w, p->kernel_w, p->stride_w, p->pad_w, p->dilation_w);
    if (out_h < 1 || out_w < 1 || out_h != p->out_h || out_w != p->out_w)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the input in");
    return TRT_OK;
}
