/* The arguments quantized_conv2d and quantized_depthwise_conv2d share (conv_common.h). */
#include "conv_common.h"

trt_status trt_bind_conv_common(const trt_call *c, trt_conv_params *p, const trt_tensor **in,
                                   const trt_tensor **weight, const trt_tensor **out, uint32_t extra) {
    int32_t stride[2], pad[2], dilation[2];
    const trt_tensor *scratch = NULL;
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, in)) != TRT_OK || (s = trt_need_input(c, *in, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_tensor(c, 1, weight)) != TRT_OK || (s = trt_need_constant(c, *weight, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_pair(c, 3, 1, TRT_MAX_SPATIAL_STEP, stride)) != TRT_OK ||
        (s = trt_arg_pair(c, 4, 0, TRT_MAX_SPATIAL_STEP, pad)) != TRT_OK ||
        (s = trt_arg_pair(c, 5, 1, TRT_MAX_SPATIAL_STEP, dilation)) != TRT_OK ||
        (s = trt_arg_int(c, 6 + extra, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &p->input_offset)) != TRT_OK ||
        (s = trt_arg_int(c, 7 + extra, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &p->output_offset)) != TRT_OK ||
        (s = trt_need_act_range(c, 10 + extra, 11 + extra, &p->activation_min, &p->activation_max)) != TRT_OK ||
        (s = trt_arg_tensor(c, 12 + extra, &scratch)) != TRT_OK ||
        (s = trt_need_output(c, 13 + extra, out, TRT_INT8)) != TRT_OK || (s = trt_need_disjoint(c, *out, *in)) != TRT_OK)
        return s;
    if (!trt_is_nhwc(*in) || !trt_is_nhwc(*out)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "activations not channels-last in");
    if ((*weight)->rank != 4) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "weight is not 4-D in");
    p->batches = (*in)->sizes[0];
    p->in_c = (*in)->sizes[1];
    p->in_h = (*in)->sizes[2];
    p->in_w = (*in)->sizes[3];
    p->kernel_h = (*weight)->sizes[1];
    p->kernel_w = (*weight)->sizes[2];
    p->stride_h = stride[0];
    p->stride_w = stride[1];
    p->pad_h = pad[0];
    p->pad_w = pad[1];
    p->dilation_h = dilation[0];
    p->dilation_w = dilation[1];
    p->out_h = trt_pooled_extent(p->in_h, p->kernel_h, p->stride_h, p->pad_h, p->dilation_h);
    p->out_w = trt_pooled_extent(p->in_w, p->kernel_w, p->stride_w, p->pad_w, p->dilation_w);
    p->out_c = (*out)->sizes[1];
    if (p->in_c < 1 || p->out_c < 1 || p->out_h < 1 || p->out_w < 1 || p->kernel_h < 1 || p->kernel_w < 1 ||
        (*out)->sizes[0] != p->batches || (*out)->sizes[2] != p->out_h || (*out)->sizes[3] != p->out_w)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the input in");
    p->input = (const int8_t *)(const void *)(*in)->data;
    p->weights = (const int8_t *)(const void *)(*weight)->data;
    p->output = (int8_t *)(void *)(*out)->mutable_data;
    if ((s = trt_need_bias(c, 2, p->out_c, &p->bias)) != TRT_OK ||
        (s = trt_need_requant(c, 8 + extra, 9 + extra, p->out_c, &p->multipliers, &p->shifts)) != TRT_OK)
        return s;
    return TRT_OK;
}
