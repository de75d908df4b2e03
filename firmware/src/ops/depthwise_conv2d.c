/* cortex_m::quantized_depthwise_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride,
 * int[] padding, int[] dilation, int depth_multiplier, int input_offset, int output_offset,
 * Tensor requantize_multipliers, Tensor requantize_shifts, int activation_min, int activation_max,
 * Tensor scratch, *, Tensor(a!) out), and cortex_m::quantized_depthwise_conv2d_nhwc.out with the
 * same arguments (activations NHWC in logical order: the same bytes): bind steps and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/isa.h"
#include "../kernels/mve/kernels_mve.h"
#include "conv_common.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs, int nhwc) {
    const trt_conv_layout layout = {3, 4, 5, 1, 1, nhwc};
    trt_conv_params *p = &params->quantized_depthwise_conv2d;
    const trt_tensor *weight = NULL;
    trt_status s;
    if ((s = trt_bind_conv_common(c, &layout, p, &weight)) != TRT_OK || (s = trt_conv_output_extent(c, p)) != TRT_OK)
        return s;
    /* weight [1, kernel_h, kernel_w, out_c]; output channel oc reads input channel oc / multiplier */
    if (weight->sizes[0] != 1 || weight->sizes[3] != p->out_c || p->out_c % p->in_c != 0)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "weight shape does not match the channels in");
    if ((s = trt_arg_int(c, 6, 1, p->out_c, &p->depth_multiplier)) != TRT_OK) return s;
    if (p->depth_multiplier != p->out_c / p->in_c) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong depth_multiplier in");
    p->kernel_c = 1;
    p->groups = p->in_c;
    int64_t taps = (int64_t)p->kernel_h * p->kernel_w;
    if (taps > TRT_MAX_DEPTHWISE_TAPS) return trt_bad_arg(c, TRT_ERR_LIMIT, "depthwise window over 121 taps in");
    *macs += (uint64_t)p->batches * p->out_h * p->out_w * p->out_c * (uint64_t)taps;
    return TRT_OK;
}

static trt_status bind_legacy(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 0); }
static trt_status bind_nhwc(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 1); }

#define M quantized_depthwise_conv2d
TRT_ALL_ENTRY_POINTS(trt_depthwise_mve, trt_depthwise_conv2d_mve, M)
TRT_ALL_ENTRY_POINTS(trt_depthwise_one_channel_mve, trt_depthwise_one_channel_mve, M)
TRT_ALL_ENTRY_POINTS(trt_depthwise_channels_mve, trt_depthwise_channels_mve, M)
TRT_ALL_ENTRY_POINTS(trt_depthwise_long_window_dsp, trt_depthwise_long_window_dsp, M)
TRT_ALL_ENTRY_POINTS(trt_depthwise_dsp, trt_depthwise_conv2d_dsp, M)
TRT_ALL_ENTRY_POINTS(trt_depthwise_channels_dsp, trt_depthwise_channels_dsp, M)
TRT_RUN_ALONE(trt_depthwise_conv2d_c, M)
#undef M

/* Fastest first: one input channel with a window of at most 16 taps (one gather per pixel), one
 * input channel as a convolution, then any depthwise layer; with DSP, one input channel with a
 * window over 10 taps, any other one-channel window, then any depthwise layer. */
static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_depthwise_conv2d_mve, TRT_ENTRY_POINTS_OF(trt_depthwise_mve))
    TRT_MVE_VARIANT(trt_depthwise_one_channel_mve, TRT_ENTRY_POINTS_OF(trt_depthwise_one_channel_mve))
    TRT_MVE_VARIANT(trt_depthwise_channels_mve, TRT_ENTRY_POINTS_OF(trt_depthwise_channels_mve))
    TRT_DSP_VARIANT(trt_depthwise_long_window_dsp, TRT_ENTRY_POINTS_OF(trt_depthwise_long_window_dsp))
    TRT_DSP_VARIANT(trt_depthwise_conv2d_dsp, TRT_ENTRY_POINTS_OF(trt_depthwise_dsp))
    TRT_DSP_VARIANT(trt_depthwise_channels_dsp, TRT_ENTRY_POINTS_OF(trt_depthwise_channels_dsp))
    TRT_C_VARIANT(trt_depthwise_conv2d_c, NULL, NULL, NULL, NULL)
};

/* A max pool after the layer: the one-gather Helium kernel may pool its sums itself. It comes first,
 * so a call it accepts has bound it; asked so, not by its place in VARIANTS nor by its entry points,
 * which a program's own image leaves out when no call binds it. */
static int fuse_next(trt_params *p, const trt_kernel_variant **kernel, const trt_operator *next, trt_params *next_p) {
#if TRT_HAVE_MVE && TRT_KEEPS(TRT_WITH_quantized_max_pool2d)   /* a build without max pools: none to fuse */
    if (trt_depthwise_mve_accepts(&p->quantized_depthwise_conv2d) && trt_is_max_pool(next))
        return trt_depthwise_mve_fuse_pool(&p->quantized_depthwise_conv2d, trt_max_pool_params_of(next_p));
#endif
    (void)p, (void)kernel, (void)next, (void)next_p;
    return 0;
}

TRT_DEFINE_FUSING_OPERATOR(quantized_depthwise_conv2d, bind_legacy, VARIANTS, fuse_next);
TRT_DEFINE_FUSING_OPERATOR(quantized_depthwise_conv2d_nhwc, bind_nhwc, VARIANTS, fuse_next);
