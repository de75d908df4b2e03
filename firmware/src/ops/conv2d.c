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
static size_t c_temp(const trt_params *p) { return trt_conv2d_c_temp_bytes(&p->quantized_conv2d); }
static void run_c(const trt_params *p, void *temp) { trt_conv2d_c(&p->quantized_conv2d, temp); }

static const trt_kernel_variant VARIANTS[] = {
#if TRT_HAVE_MVE
    {"mve", mve_accepts, mve_scratch, mve_prepare, mve_temp, run_mve},
#endif
#if TRT_HAVE_DSP
    {"dsp", dsp_accepts, dsp_scratch, dsp_prepare, dsp_temp, run_dsp},
#endif
    {"c", NULL, sums_bytes, prepare_sums, c_temp, run_c},
};

/*
 * A max pool right after the convolution, on its output, done in the convolution's epilogue
 * (the kernels' pool_h/pool_w): the largest int32 accumulator (bias included) of each pool window,
 * requantized once. It is the pool of the requantized outputs, bit for bit, where requantization
 * never decreases as the accumulator grows, for every value an int32 accumulator can take:
 *   multiplier > 0 and shift <= 0: (acc * m + 2^30) >> 31 and the rounding right shift are
 *   non-decreasing, and |requantize(acc)| <= ((m + 1) >> -shift) + 1; that plus |output_offset|
 *   must stay within int32, or the offset's add could wrap (a left shift could wrap as well);
 * then max_i clamp(f(acc_i)) = clamp(f(max_i acc_i)). A negative multiplier reverses the order
 * (the pool would want the smallest accumulator): such a layer is not fused, and neither is any
 * other case below. The pool: windows side by side (stride = kernel, no padding: floor mode then
 * pools exactly the windows that fit), the convolution's batches, map and channels as its input;
 * its activation range joins the convolution's (the two clamps are one when they meet). Its zero
 * points are equal (its bind step checks): max pooling passes the codes through unchanged.
 */
/* By name: a library built for one program has only the operators it calls (library.md). */
static int is_max_pool(const trt_operator *op) {
    static const char name[] = "cortex_m::quantized_max_pool2d";
    size_t i = 0;
    for (; name[i]; i++)
        if (op->name[i] != name[i]) return 0;
    return op->name[i] == '\0' || (op->name[i] == '_' && op->name[i + 1] == 'n' && op->name[i + 2] == 'h' &&
                                    op->name[i + 3] == 'w' && op->name[i + 4] == 'c' && op->name[i + 5] == '\0');
}

static int requantization_keeps_order(const trt_conv_params *p) {
    const int64_t offset = p->output_offset < 0 ? -(int64_t)p->output_offset : p->output_offset;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const int32_t m = p->multipliers[oc], shift = p->shifts[oc];
        if (m <= 0 || shift > 0 || ((((int64_t)m + 1) >> -shift) + 1 + offset > INT32_MAX)) return 0;
    }
    return 1;
}

static int fuse_max_pool(const trt_params *self, const trt_operator *next, const trt_params *next_params,
                         trt_params *fused, const trt_fusion_place *place) {
    const trt_conv_params *p = &self->quantized_conv2d;
    if (!is_max_pool(next) || p->pool_h) return 0;
    /* both pool rows bind this struct; the union's member is reached by a cast (a union's members all
     * start at its address), as a library without the pool operators has no member of that name */
    const trt_max_pool_params *q = (const trt_max_pool_params *)(const void *)next_params;
    const int32_t lo = p->activation_min > q->activation_min ? p->activation_min : q->activation_min;
    const int32_t hi = p->activation_max < q->activation_max ? p->activation_max : q->activation_max;
    if (q->batches != p->batches || q->in_h != p->out_h || q->in_w != p->out_w || q->channels != p->out_c ||
        q->kernel_h != q->stride_h || q->kernel_w != q->stride_w || q->pad_h || q->pad_w || lo > hi ||
        !requantization_keeps_order(p))
        return 0;
    if (fused) {
        trt_conv_params *f = &fused->quantized_conv2d;
        *f = *p;
        f->output = place->staged ? p->output : q->output;   /* staged: copied into place by the pool's call */
        f->pool_spare = place->spare;
        f->pool_spare_bytes = place->spare_bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)place->spare_bytes;
        f->pool_h = (int16_t)q->kernel_h;   /* at most TRT_MAX_SPATIAL_STEP; out_h / kernel_h = the pool's out_h */
        f->pool_w = (int16_t)q->kernel_w;
        f->activation_min = lo;
        f->activation_max = hi;
    }
    return 1;
}

TRT_DEFINE_FUSING_OPERATOR(quantized_conv2d, bind_legacy, VARIANTS, fuse_max_pool);
TRT_DEFINE_FUSING_OPERATOR(quantized_conv2d_nhwc, bind_nhwc, VARIANTS, fuse_max_pool);
