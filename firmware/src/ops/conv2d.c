/* cortex_m::quantized_conv2d.out(Tensor input, Tensor weight, Tensor? bias, int[] stride,
 * int[] padding, int[] dilation, int input_offset, int output_offset, Tensor requantize_multipliers,
 * Tensor requantize_shifts, int activation_min, int activation_max, Tensor scratch, *,
 * Tensor(a!) out), and cortex_m::quantized_conv2d_nhwc.out with the same arguments (its
 * activations NHWC in logical order: the same bytes): bind steps and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/isa.h"
#include "../kernels/mve/kernels_mve.h"
#include "../kernels/weight_sums.h"
#include "conv_common.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs, int nhwc) {
    const trt_conv_layout layout = {3, 4, 5, 0, 1, nhwc};
    trt_conv_params *p = &params->quantized_conv2d;
    const trt_tensor *weight = NULL;
    trt_status s;
    if ((s = trt_bind_conv_common(c, &layout, p, &weight)) != TRT_OK || (s = trt_conv_output_extent(c, p)) != TRT_OK)
        return s;
    /* weight [out_c, kernel_h, kernel_w, kernel_c]; groups = in_c / kernel_c (F.conv2d's rule) */
    p->kernel_c = weight->sizes[3];
    if (weight->sizes[0] != p->out_c || p->kernel_c < 1 || p->in_c % p->kernel_c != 0)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "weight shape does not match the channels in");
    p->groups = p->in_c / p->kernel_c;
    if (p->out_c % p->groups != 0) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "channels not divisible by groups in");
    int64_t reduction = (int64_t)p->kernel_h * p->kernel_w * p->kernel_c;
    if (reduction > TRT_MAX_REDUCTION) return trt_bad_arg(c, TRT_ERR_LIMIT, "reduction too long in");
    *macs += (uint64_t)p->batches * p->out_h * p->out_w * p->out_c * (uint64_t)reduction;
    return TRT_OK;
}

static trt_status bind_legacy(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 0); }
static trt_status bind_nhwc(const trt_call *c, trt_params *p, uint64_t *macs) { return bind(c, p, macs, 1); }

#if TRT_HAVE_MVE
static int mve_long_accepts(const trt_params *p) { return trt_conv2d_long_mve_accepts(&p->quantized_conv2d); }
static size_t mve_long_scratch(const trt_params *p) { return trt_conv2d_long_mve_scratch_bytes(&p->quantized_conv2d); }
static void mve_long_prepare(trt_params *p, void *scratch) { trt_conv2d_long_mve_prepare(&p->quantized_conv2d, scratch); }
static void run_mve_long(const trt_params *p, void *temp) { trt_conv2d_long_mve(&p->quantized_conv2d, temp); }
static int mve_accepts(const trt_params *p) { return trt_conv2d_mve_accepts(&p->quantized_conv2d); }
static size_t mve_scratch(const trt_params *p) { return trt_conv2d_mve_scratch_bytes(&p->quantized_conv2d); }
static void mve_prepare(trt_params *p, void *scratch) { trt_conv2d_mve_prepare(&p->quantized_conv2d, scratch); }
static size_t mve_temp(const trt_params *p) { return trt_conv2d_mve_temp_bytes(&p->quantized_conv2d); }
static void run_mve(const trt_params *p, void *temp) { trt_conv2d_mve(&p->quantized_conv2d, temp); }
#endif
#if TRT_HAVE_DSP
static int dsp_accepts(const trt_params *p) { return trt_conv2d_dsp_accepts(&p->quantized_conv2d); }
static size_t dsp_scratch(const trt_params *p) { return trt_conv2d_dsp_scratch_bytes(&p->quantized_conv2d); }
static void dsp_prepare(trt_params *p, void *scratch) { trt_conv2d_dsp_prepare(&p->quantized_conv2d, scratch); }
static size_t dsp_temp(const trt_params *p) { return trt_conv2d_dsp_temp_bytes(&p->quantized_conv2d); }
static void run_dsp(const trt_params *p, void *temp) { trt_conv2d_dsp(&p->quantized_conv2d, temp); }
#endif
static size_t sums_bytes(const trt_params *p) { return trt_conv_sums_bytes(&p->quantized_conv2d); }
static void prepare_sums(trt_params *p, void *scratch) { trt_conv_prepare_sums(&p->quantized_conv2d, scratch); }
static void run_c(const trt_params *p, void *temp) { (void)temp; trt_conv2d_c(&p->quantized_conv2d); }

/* Helium: windows over 64 bytes, then any (the short windows' loops: a variant of their own, so that
 * a build without them links none of their code). */
static const trt_kernel_variant VARIANTS[] = {
#if TRT_HAVE_MVE
    {"mve", mve_long_accepts, mve_long_scratch, mve_long_prepare, mve_temp, run_mve_long},
    {"mve", mve_accepts, mve_scratch, mve_prepare, mve_temp, run_mve},
#endif
#if TRT_HAVE_DSP
    {"dsp", dsp_accepts, dsp_scratch, dsp_prepare, dsp_temp, run_dsp},
#endif
    {"c", NULL, sums_bytes, prepare_sums, NULL, run_c},
};

/* A max pool after the layer: the long windows' Helium kernel may pool its sums itself. The kernel is
 * known by its function, not its place in VARIANTS: a program's own image leaves out the rows no call
 * binds, and the general kernel then comes first. */
static int fuse_next(trt_params *p, const trt_kernel_variant *kernel, const trt_operator *next, trt_params *next_p) {
#if TRT_HAVE_MVE
    if (kernel->accepts == mve_long_accepts && trt_is_max_pool(next))
        return trt_conv2d_mve_fuse_pool(&p->quantized_conv2d, &next_p->quantized_max_pool2d);
#endif
    (void)p, (void)kernel, (void)next, (void)next_p;
    return 0;
}

TRT_DEFINE_FUSING_OPERATOR(quantized_conv2d, bind_legacy, VARIANTS, fuse_next);
TRT_DEFINE_FUSING_OPERATOR(quantized_conv2d_nhwc, bind_nhwc, VARIANTS, fuse_next);
