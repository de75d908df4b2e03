/* cortex_m::quantized_avg_pool2d.out(Tensor input, int[] kernel_size, int[] stride, int[] padding,
 * bool ceil_mode, int zero_point, int multiplier, int shift, Tensor scratch, *, Tensor(a!) out), and
 * cortex_m::quantized_avg_pool2d_nhwc.out with the same arguments (activations NHWC in logical
 * order: the same bytes): bind steps and variants. */
#include "../kernels/avg_pool_finish.h"
#include "../kernels/c/kernels_c.h"
#include "../kernels/isa.h"
#include "../kernels/mve/kernels_mve.h"
#include "operator_table.h"

/* torch's pooling_output_shape (dilation 1): floor or ceil division, and in ceil mode a last
 * window must start inside the input or its left padding. */
static int32_t pooled_extent(int32_t in, int32_t kernel, int32_t stride, int32_t pad, int ceil_mode) {
    const int64_t span = (int64_t)in + 2 * (int64_t)pad - kernel + (ceil_mode ? stride - 1 : 0);
    if (span < 0) return 0;
    int64_t out = span / stride + 1;
    if (ceil_mode && (out - 1) * stride >= (int64_t)in + pad) out--;
    return (int32_t)out;
}

/* multiplier * 2^shift / 2^31 (exact in double: a 31-bit integer times a power of two), as a float. */
static float cmsis_scale(int32_t multiplier, int32_t shift) {
    double scale = (double)multiplier / 2147483648.0;
    for (int32_t k = 0; k < shift; k++) scale *= 2.0;
    for (int32_t k = 0; k > shift; k--) scale *= 0.5;
    return (float)scale;
}

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs, int nhwc) {
    trt_avg_pool_params *p = &params->quantized_avg_pool2d;
    const trt_tensor *in = NULL, *out = NULL, *scratch = NULL;
    int32_t kernel[2], stride[2], pad[2], in_dims[4], out_dims[4], multiplier, shift;
    int ceil_mode = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_pair(c, 1, 1, TRT_MAX_SPATIAL_STEP, kernel)) != TRT_OK ||
        (s = trt_arg_pair(c, 2, 1, TRT_MAX_SPATIAL_STEP, stride)) != TRT_OK ||
        (s = trt_arg_pair(c, 3, 0, TRT_MAX_SPATIAL_STEP, pad)) != TRT_OK || (s = trt_arg_bool(c, 4, &ceil_mode)) != TRT_OK ||
        (s = trt_arg_int(c, 5, -128, 127, &p->zero_point)) != TRT_OK ||
        (s = trt_arg_int(c, 6, 1, INT32_MAX, &multiplier)) != TRT_OK ||
        (s = trt_arg_int(c, 7, -TRT_MAX_SHIFT, TRT_MAX_SHIFT, &shift)) != TRT_OK ||
        (s = trt_arg_scratch(c, 8, &scratch)) != TRT_OK || (s = trt_need_output(c, 9, &out, TRT_INT8)) != TRT_OK ||
        (s = trt_need_disjoint(c, out, in)) != TRT_OK || (s = trt_need_activation(c, in, nhwc, in_dims)) != TRT_OK ||
        (s = trt_need_activation(c, out, nhwc, out_dims)) != TRT_OK)
        return s;
    /* torch's rule; with the output size below it leaves every window an in-bounds tap */
    if (pad[0] > kernel[0] / 2 || pad[1] > kernel[1] / 2) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "padding over half the kernel in");
    /* at most 2^24 taps, so the count is an exact float (and far below any planned tensor) */
    if ((int64_t)kernel[0] * kernel[1] > TRT_MAX_FLOAT_EXACT_INT) return trt_bad_arg(c, TRT_ERR_LIMIT, "pooling window too large in");
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
    p->out_h = pooled_extent(p->in_h, p->kernel_h, p->stride_h, p->pad_h, ceil_mode);
    p->out_w = pooled_extent(p->in_w, p->kernel_w, p->stride_w, p->pad_w, ceil_mode);
    if (p->out_h < 1 || p->out_w < 1 || p->channels < 1 || out_dims[0] != p->batches || out_dims[1] != p->out_h ||
        out_dims[2] != p->out_w || out_dims[3] != p->channels)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the input in");
    /* a scale of at least 2^-62: every dequantized value, sum and average is a normal float or
     * zero, so vector and scalar floating point agree (no flush of subnormals) */
    p->scale = cmsis_scale(multiplier, shift);
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    p->dequantized = NULL;
    return TRT_OK;
}

static trt_status bind_legacy(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 0); }
static trt_status bind_nhwc(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 1); }

/* The plain-C kernel's reciprocal table: the same for every call. */
TRT_ADAPTER size_t table_bytes(const trt_params *p) {
    (void)p;
    return trt_avg_pool_table_bytes();
}
TRT_PREPARE(trt_avg_pool_prepare_table, quantized_avg_pool2d)
TRT_RUN_ALONE(trt_avg_pool2d_mve, quantized_avg_pool2d)
TRT_BYTES(trt_avg_pool2d_c_temp_bytes, quantized_avg_pool2d)
TRT_RUN(trt_avg_pool2d_c, quantized_avg_pool2d)

/* Helium with its floating point (the kernel divides in float). */
static const trt_kernel_variant VARIANTS[] = {
#if TRT_HAVE_MVE_FLOAT
    TRT_MVE_VARIANT(trt_avg_pool2d_mve, NULL, NULL, NULL, NULL)
#endif
    TRT_C_VARIANT(trt_avg_pool2d_c, NULL, table_bytes, trt_avg_pool_prepare_table_p, trt_avg_pool2d_c_temp_bytes_p)
};

TRT_DEFINE_OPERATOR(quantized_avg_pool2d, bind_legacy, VARIANTS);
TRT_DEFINE_OPERATOR(quantized_avg_pool2d_nhwc, bind_nhwc, VARIANTS);
