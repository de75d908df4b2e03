/* cortex_m::quantized_max_pool2d.out(Tensor input, int[] kernel_size, int[] stride, int[] padding,
 * int[] dilation, bool ceil_mode, int input_zero_point, int output_zero_point, int activation_min,
 * int activation_max, *, Tensor(a!) out), and cortex_m::quantized_max_pool2d_nhwc.out with the same
 * arguments (activations NHWC in logical order: the same bytes): bind steps and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/mve/kernels_mve.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs, int nhwc) {
    trt_max_pool_params *p = &params->quantized_max_pool2d;
    const trt_tensor *in = NULL, *out = NULL;
    int32_t kernel[2], stride[2], pad[2], dilation[2], in_zp, out_zp, in_dims[4], out_dims[4];
    int ceil_mode = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_pair(c, 1, 1, TRT_MAX_SPATIAL_STEP, kernel)) != TRT_OK ||
        (s = trt_arg_pair(c, 2, 1, TRT_MAX_SPATIAL_STEP, stride)) != TRT_OK ||
        (s = trt_arg_pair(c, 3, 0, TRT_MAX_SPATIAL_STEP, pad)) != TRT_OK ||
        (s = trt_arg_pair(c, 4, 1, 1, dilation)) != TRT_OK || (s = trt_arg_bool(c, 5, &ceil_mode)) != TRT_OK ||
        (s = trt_arg_int(c, 6, -128, 127, &in_zp)) != TRT_OK || (s = trt_arg_int(c, 7, -128, 127, &out_zp)) != TRT_OK ||
        (s = trt_need_act_range(c, 8, 9, &p->activation_min, &p->activation_max)) != TRT_OK ||
        (s = trt_need_output(c, 10, &out, TRT_INT8)) != TRT_OK || (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (ceil_mode || in_zp != out_zp) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "ceil_mode or unequal zero points in");
    /* torch's rule; it also guarantees every window has an in-bounds tap */
    if (pad[0] > kernel[0] / 2 || pad[1] > kernel[1] / 2) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "padding over half the kernel in");
    if ((s = trt_need_activation(c, in, nhwc, in_dims)) != TRT_OK || (s = trt_need_activation(c, out, nhwc, out_dims)) != TRT_OK)
        return s;
    p->batches = in_dims[0];
    p->in_h = in_dims[1];
    p->in_w = in_dims[2];
    p->channels = in_dims[3];
    p->kernel_h = kernel[0];
    p->kernel_w = kernel[1];
    p->stride_h = stride[0];
    p->stride_w = stride[1];
    p->pad_h = pad[0];
    p->pad_w = pad[1];
    p->out_h = trt_pooled_extent(p->in_h, p->kernel_h, p->stride_h, p->pad_h, 1);
    p->out_w = trt_pooled_extent(p->in_w, p->kernel_w, p->stride_w, p->pad_w, 1);
    if (p->out_h < 1 || p->out_w < 1 || p->channels < 1 || out_dims[0] != p->batches || out_dims[1] != p->out_h ||
        out_dims[2] != p->out_w || out_dims[3] != p->channels)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the input in");
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    return TRT_OK;
}

static trt_status bind_legacy(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 0); }
static trt_status bind_nhwc(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 1); }

TRT_RUN_ALONE(trt_max_pool2d_mve, quantized_max_pool2d)
TRT_RUN_ALONE(trt_max_pool2d_dsp, quantized_max_pool2d)
TRT_RUN_ALONE(trt_max_pool2d_c, quantized_max_pool2d)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_max_pool2d_mve, NULL, NULL, NULL, NULL)
    TRT_DSP_VARIANT(trt_max_pool2d_dsp, NULL, NULL, NULL, NULL)
    TRT_C_VARIANT(trt_max_pool2d_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(quantized_max_pool2d, bind_legacy, VARIANTS);
TRT_DEFINE_OPERATOR(quantized_max_pool2d_nhwc, bind_nhwc, VARIANTS);
