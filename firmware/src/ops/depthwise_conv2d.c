/* cortex_m::quantized_depthwise_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride,
 * int[] padding, int[] dilation, int depth_multiplier, int input_offset, int output_offset,
 * Tensor requantize_multipliers, Tensor requantize_shifts, int activation_min, int activation_max,
 * Tensor scratch, *, Tensor(a!) out): bind step and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/isa.h"
#include "../kernels/mve/kernels_mve.h"
#include "conv_common.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_conv_params *p = &params->quantized_depthwise_conv2d;
    const trt_tensor *in = NULL, *weight = NULL, *out = NULL;
    trt_status s = trt_bind_conv_common(c, p, &in, &weight, &out, 1);
    if (s != TRT_OK) return s;
    /* weight [1, kernel_h, kernel_w, out_c]; output channel oc reads input channel oc / multiplier */
    if (weight->sizes[0] != 1 || weight->sizes[3] != p->out_c || p->out_c % p->in_c != 0)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "weight shape does not match the channels in");
    if ((s = trt_arg_int(c, 6, 1, p->out_c, &p->depth_multiplier)) != TRT_OK) return s;
    if (p->depth_multiplier != p->out_c / p->in_c) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong depth_multiplier in");
    p->kernel_c = 1;
    p->groups = p->in_c;
    int64_t taps = (int64_t)p->kernel_h * p->kernel_w;
    if (taps > TRT_MAX_DEPTHWISE_TAPS) return trt_bad_arg(c, TRT_ERR_LIMIT, "depthwise window over 121 taps in");
    *macs += (uint64_t)out->numel * (uint64_t)taps;
    return TRT_OK;
}

#if TRT_HAVE_MVE
static int mve_accepts(const trt_params *p) { return trt_depthwise_mve_accepts(&p->quantized_depthwise_conv2d); }
static size_t mve_scratch(const trt_params *p) { return trt_depthwise_mve_scratch_bytes(&p->quantized_depthwise_conv2d); }
static void mve_prepare(trt_params *p, void *scratch) { trt_depthwise_mve_prepare(&p->quantized_depthwise_conv2d, scratch); }
static size_t mve_temp(const trt_params *p) { return trt_depthwise_mve_temp_bytes(&p->quantized_depthwise_conv2d); }
static void run_mve(const trt_params *p, void *temp) { trt_depthwise_conv2d_mve(&p->quantized_depthwise_conv2d, temp); }
#endif
#if TRT_HAVE_DSP
static int dsp_accepts(const trt_params *p) { return trt_depthwise_dsp_accepts(&p->quantized_depthwise_conv2d); }
static size_t dsp_scratch(const trt_params *p) { return trt_depthwise_dsp_scratch_bytes(&p->quantized_depthwise_conv2d); }
static void dsp_prepare(trt_params *p, void *scratch) { trt_depthwise_dsp_prepare(&p->quantized_depthwise_conv2d, scratch); }
static size_t dsp_temp(const trt_params *p) { return trt_depthwise_dsp_temp_bytes(&p->quantized_depthwise_conv2d); }
static void run_dsp(const trt_params *p, void *temp) { trt_depthwise_conv2d_dsp(&p->quantized_depthwise_conv2d, temp); }
#endif
static void run_c(const trt_params *p, void *temp) { (void)temp; trt_depthwise_conv2d_c(&p->quantized_depthwise_conv2d); }

static const trt_kernel_variant VARIANTS[] = {
#if TRT_HAVE_MVE
    {"mve", mve_accepts, mve_scratch, mve_prepare, mve_temp, run_mve},
#endif
#if TRT_HAVE_DSP
    {"dsp", dsp_accepts, dsp_scratch, dsp_prepare, dsp_temp, run_dsp},
#endif
    {"c", NULL, NULL, NULL, NULL, run_c},
};

TRT_DEFINE_OPERATOR(quantized_depthwise_conv2d, bind, VARIANTS);
