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

#define M quantized_conv2d
TRT_ACCEPTS(trt_conv2d_long_mve_accepts, M)
TRT_BYTES(trt_conv2d_long_mve_scratch_bytes, M)
TRT_PREPARE(trt_conv2d_long_mve_prepare, M)
TRT_RUN(trt_conv2d_long_mve, M)
TRT_ACCEPTS(trt_conv2d_pooled_mve_accepts, M)
TRT_BYTES(trt_conv2d_pooled_mve_temp_bytes, M)
TRT_RUN(trt_conv2d_pooled_mve, M)
TRT_ACCEPTS(trt_conv2d_mve_accepts, M)
TRT_BYTES(trt_conv2d_mve_scratch_bytes, M)
TRT_PREPARE(trt_conv2d_mve_prepare, M)
TRT_BYTES(trt_conv2d_mve_temp_bytes, M)
TRT_RUN(trt_conv2d_mve, M)
TRT_ALL_ENTRY_POINTS(trt_conv2d_dsp, trt_conv2d_dsp, M)
TRT_BYTES(trt_conv_sums_bytes, M)
TRT_PREPARE(trt_conv_prepare_sums, M)
TRT_RUN_ALONE(trt_conv2d_c, M)
#undef M

/* Helium: windows over 64 bytes, then any (the short windows' loops: a variant of their own, so that
 * a build without them links none of their code); both take the general kernel's working memory. The
 * long windows' layers of one shape with a pool fused after them run read in place (conv2d_pooled.c):
 * fuse_next switches them to it, so it comes after the long windows' row, which binds them first (a
 * program's own image that keeps only the in-place row binds it directly). */
static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_conv2d_long_mve, trt_conv2d_long_mve_accepts_p, trt_conv2d_long_mve_scratch_bytes_p, trt_conv2d_long_mve_prepare_p, trt_conv2d_mve_temp_bytes_p)
    TRT_MVE_VARIANT(trt_conv2d_pooled_mve, trt_conv2d_pooled_mve_accepts_p, trt_conv2d_long_mve_scratch_bytes_p, trt_conv2d_long_mve_prepare_p, trt_conv2d_pooled_mve_temp_bytes_p)
    TRT_MVE_VARIANT(trt_conv2d_mve, TRT_ENTRY_POINTS_OF(trt_conv2d_mve))
    TRT_DSP_VARIANT(trt_conv2d_dsp, TRT_ENTRY_POINTS_OF(trt_conv2d_dsp))
    TRT_C_VARIANT(trt_conv2d_c, NULL, trt_conv_sums_bytes_p, trt_conv_prepare_sums_p, NULL)
};

/* A max pool after the layer: the long windows' Helium kernel may pool its sums itself, and then runs
 * read in place when its in-place row takes the layer. The kernels are known by their functions, not
 * their places in VARIANTS: a program's own image leaves out the rows no call binds. */
static int fuse_next(trt_params *p, const trt_kernel_variant **kernel, const trt_operator *next, trt_params *next_p) {
#if TRT_HAVE_MVE && TRT_KEEPS(TRT_WITH_quantized_max_pool2d)   /* a build without max pools: none to fuse */
    const trt_kernel_variant *k = *kernel;
    if ((k->accepts == trt_conv2d_long_mve_accepts_p || k->accepts == trt_conv2d_pooled_mve_accepts_p) &&
        trt_is_max_pool(next)) {
        if (!trt_conv2d_mve_fuse_pool(&p->quantized_conv2d, trt_max_pool_params_of(next_p))) return 0;
        for (const trt_kernel_variant *v = VARIANTS; v < VARIANTS + sizeof VARIANTS / sizeof VARIANTS[0]; v++)
            if (v->accepts == trt_conv2d_pooled_mve_accepts_p && v->accepts(p)) *kernel = v;
        return 1;
    }
#endif
    (void)p, (void)kernel, (void)next, (void)next_p;
    return 0;
}

TRT_DEFINE_FUSING_OPERATOR(quantized_conv2d, bind_legacy, VARIANTS, fuse_next);
TRT_DEFINE_FUSING_OPERATOR(quantized_conv2d_nhwc, bind_nhwc, VARIANTS, fuse_next);
