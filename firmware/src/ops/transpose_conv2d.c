/* cortex_m::quantized_transpose_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride,
 * int[] padding, int[] output_padding, int[] dilation, int input_offset, int output_offset,
 * Tensor requantize_multipliers, Tensor requantize_shifts, int activation_min, int activation_max,
 * Tensor scratch, Tensor output_scratch, *, Tensor(a!) out), and
 * cortex_m::quantized_transpose_conv2d_nhwc.out with the same arguments (activations NHWC in
 * logical order: the same bytes): bind steps and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/mve/kernels_mve.h"
#include "../kernels/weight_sums.h"
#include "conv_common.h"
#include "operator_table.h"

/* out = (in - 1) * stride - 2 * pad + dilation * (kernel - 1) + output_padding + 1 */
static int64_t transposed_extent(int32_t in, int32_t kernel, int32_t stride, int32_t pad, int32_t dilation,
                                 int32_t output_padding) {
    return (int64_t)(in - 1) * stride - 2 * (int64_t)pad + (int64_t)dilation * (kernel - 1) + output_padding + 1;
}

/* How many (output position, tap) pairs along one axis read an input position. */
static uint64_t landings(int32_t out, int32_t kernel, int32_t stride, int32_t pad, int32_t dilation, int32_t in) {
    uint64_t n = 0;
    for (int32_t o = 0; o < out; o++)
        for (int32_t k = 0; k < kernel; k++) {
            const int64_t t = (int64_t)o + pad - (int64_t)k * dilation;
            n += t >= 0 && t % stride == 0 && t / stride < in;
        }
    return n;
}

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs, int nhwc) {
    const trt_conv_layout layout = {3, 4, 6, 1, 2, nhwc};
    trt_conv_params *p = &params->quantized_transpose_conv2d;
    const trt_tensor *weight = NULL;
    int32_t output_padding[2];
    trt_status s;
    if ((s = trt_bind_conv_common(c, &layout, p, &weight)) != TRT_OK ||
        (s = trt_arg_pair(c, 5, 0, TRT_MAX_SPATIAL_STEP, output_padding)) != TRT_OK)
        return s;
    /* torch's rule: output padding below the stride or the dilation */
    if (output_padding[0] >= (p->stride_h > p->dilation_h ? p->stride_h : p->dilation_h) ||
        output_padding[1] >= (p->stride_w > p->dilation_w ? p->stride_w : p->dilation_w))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output_padding not below the stride or dilation in");
    if (transposed_extent(p->in_h, p->kernel_h, p->stride_h, p->pad_h, p->dilation_h, output_padding[0]) != p->out_h ||
        transposed_extent(p->in_w, p->kernel_w, p->stride_w, p->pad_w, p->dilation_w, output_padding[1]) != p->out_w ||
        p->out_h < 1 || p->out_w < 1)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the input in");
    /* weight [out_c, kernel_h, kernel_w, in_c] */
    if (weight->sizes[0] != p->out_c || weight->sizes[3] != p->in_c)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "weight shape does not match the channels in");
    p->kernel_c = p->in_c;
    p->groups = 1;
    const int64_t taps = (int64_t)p->kernel_h * p->kernel_w;
    if (taps > TRT_MAX_TRANSPOSE_TAPS) return trt_bad_arg(c, TRT_ERR_LIMIT, "transpose conv window over 121 taps in");
    if (taps * p->in_c > TRT_MAX_REDUCTION) return trt_bad_arg(c, TRT_ERR_LIMIT, "reduction too long in");
    /* the multiply-accumulates of the taps that land inside the output */
    *macs += (uint64_t)p->batches * landings(p->out_h, p->kernel_h, p->stride_h, p->pad_h, p->dilation_h, p->in_h) *
             landings(p->out_w, p->kernel_w, p->stride_w, p->pad_w, p->dilation_w, p->in_w) * (uint64_t)p->in_c *
             (uint64_t)p->out_c;
    return TRT_OK;
}

static trt_status bind_legacy(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 0); }
static trt_status bind_nhwc(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 1); }

#define M quantized_transpose_conv2d
TRT_ALL_ENTRY_POINTS(trt_transpose_conv2d_mve, trt_transpose_conv2d_mve, M)
TRT_ALL_ENTRY_POINTS(trt_transpose_conv2d_dsp, trt_transpose_conv2d_dsp, M)
TRT_BYTES(trt_conv_sums_bytes, M)
TRT_PREPARE(trt_conv_prepare_sums, M)
TRT_RUN_ALONE(trt_transpose_conv2d_c, M)
#undef M

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_transpose_conv2d_mve, TRT_ENTRY_POINTS_OF(trt_transpose_conv2d_mve))
    TRT_DSP_VARIANT(trt_transpose_conv2d_dsp, TRT_ENTRY_POINTS_OF(trt_transpose_conv2d_dsp))
    TRT_C_VARIANT(trt_transpose_conv2d_c, NULL, trt_conv_sums_bytes_p, trt_conv_prepare_sums_p, NULL)
};

TRT_DEFINE_OPERATOR(quantized_transpose_conv2d, bind_legacy, VARIANTS);
TRT_DEFINE_OPERATOR(quantized_transpose_conv2d_nhwc, bind_nhwc, VARIANTS);
