/* cortex_m::quantized_linear.out(Tensor input, Tensor weights, Tensor? bias, Tensor? kernel_sum,
 * int input_offset, int filter_offset, int output_offset, int[] requantize_multipliers,
 * int[] requantize_shifts, int activation_max, int activation_min, *, Tensor(a!) out):
 * bind step and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/mve/kernels_mve.h"
#include "../kernels/weight_sums.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_linear_params *p = &params->quantized_linear;
    const trt_tensor *in = NULL, *weight = NULL, *ksum = NULL, *out = NULL;
    int32_t mult = 0, shift = 0;
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_tensor(c, 1, &weight)) != TRT_OK || (s = trt_need_constant(c, weight, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_optional_tensor(c, 3, &ksum)) != TRT_OK ||
        (s = trt_arg_int(c, 4, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &p->input_offset)) != TRT_OK ||
        (s = trt_arg_int(c, 5, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &p->filter_offset)) != TRT_OK ||
        (s = trt_arg_int(c, 6, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &p->output_offset)) != TRT_OK ||
        (s = trt_arg_list_first(c, 7, INT32_MIN, INT32_MAX, &mult)) != TRT_OK ||
        (s = trt_arg_list_first(c, 8, -TRT_MAX_SHIFT, TRT_MAX_SHIFT, &shift)) != TRT_OK ||
        (s = trt_need_act_range(c, 10, 9, &p->activation_min, &p->activation_max)) != TRT_OK ||  /* max before min */
        (s = trt_need_output(c, 11, &out, TRT_INT8)) != TRT_OK || (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (weight->rank != 2 || in->rank < 1 || out->rank != in->rank || !trt_is_row_major(in) || !trt_is_row_major(out))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "linear tensors not [.., depth] row-major in");
    p->out_features = weight->sizes[0];
    p->depth = weight->sizes[1];
    if (p->depth < 1 || p->out_features < 1 || in->sizes[in->rank - 1] != p->depth ||
        out->sizes[out->rank - 1] != p->out_features)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "linear shapes do not match in");
    for (int d = 0; d + 1 < in->rank; d++)
        if (in->sizes[d] != out->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "linear shapes do not match in");
    if (p->depth > TRT_MAX_REDUCTION) return trt_bad_arg(c, TRT_ERR_LIMIT, "reduction too long in");
    p->rows = (int32_t)(in->numel / (uint32_t)p->depth);
    p->multiplier = mult;   /* the reference uses element 0 of the per-tensor lists */
    p->shift = shift;
    p->input = (const int8_t *)(const void *)in->data;
    p->weights = (const int8_t *)(const void *)weight->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    p->kernel_sum = NULL;
    p->bias = NULL;
    p->weight_sums = NULL;
    if (ksum) {
        if ((s = trt_need_constant(c, ksum, TRT_INT32)) != TRT_OK) return s;
        if ((int64_t)ksum->numel != p->out_features) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "kernel_sum does not match in");
        p->kernel_sum = (const int32_t *)(const void *)ksum->data;
    } else {
        if ((s = trt_need_bias(c, 2, p->out_features, &p->bias)) != TRT_OK) return s;
    }
    *macs += (uint64_t)p->rows * (uint64_t)p->out_features * (uint64_t)p->depth;
    return TRT_OK;
}

/* Every variant folds the input offset of the bias form with the same load-time row sums. */
TRT_BYTES(trt_linear_sums_bytes, quantized_linear)
TRT_PREPARE(trt_linear_prepare_sums, quantized_linear)
TRT_BYTES(trt_linear_mve_scratch_bytes, quantized_linear)
TRT_PREPARE(trt_linear_mve_prepare, quantized_linear)
TRT_RUN_ALONE(trt_linear_mve, quantized_linear)
TRT_ACCEPTS(trt_linear_words_mve_accepts, quantized_linear)
TRT_RUN_ALONE(trt_linear_words_mve, quantized_linear)
TRT_BYTES(trt_linear_dsp_scratch_bytes, quantized_linear)
TRT_PREPARE(trt_linear_dsp_prepare, quantized_linear)
TRT_BYTES(trt_linear_dsp_temp_bytes, quantized_linear)
TRT_RUN(trt_linear_dsp, quantized_linear)
TRT_RUN_ALONE(trt_linear_c, quantized_linear)

/* Helium: word-aligned rows, then any (the byte loop: a variant of its own, so that a build without it
 * links none of its code). */
static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_linear_words_mve, trt_linear_words_mve_accepts_p, trt_linear_mve_scratch_bytes_p, trt_linear_mve_prepare_p, NULL)
    TRT_MVE_VARIANT(trt_linear_mve, NULL, trt_linear_mve_scratch_bytes_p, trt_linear_mve_prepare_p, NULL)
    TRT_DSP_VARIANT(trt_linear_dsp, NULL, trt_linear_dsp_scratch_bytes_p, trt_linear_dsp_prepare_p, trt_linear_dsp_temp_bytes_p)
    TRT_C_VARIANT(trt_linear_c, NULL, trt_linear_sums_bytes_p, trt_linear_prepare_sums_p, NULL)
};

TRT_DEFINE_OPERATOR(quantized_linear, bind, VARIANTS);
