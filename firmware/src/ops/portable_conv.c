/* The portable float32 convolution ExecuTorch's Cortex-M lowering leaves to the CPU: the bind step and
 * variant of aten::convolution.out, 1-D, 2-D and 3-D, transposed or not (output_padding), with any
 * stride, padding, dilation and groups, every tensor in any dim order. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

/* The generic firmware's per-call storage (trt_params) stays the size of its largest member. */
typedef char float_conv_params_fit[sizeof(trt_float_conv_params) <= sizeof(trt_conv_params) ? 1 : -1];

/* An int[] of one item (standing for every spatial dim) or of `dims` items in [lo, hi], placed at the
 * end of out[3] (a 1-D or 2-D convolution's missing leading dims keep `fill`). */
static trt_status spatial_list(const trt_call *c, uint32_t i, int dims, int64_t lo, int64_t hi, int16_t fill,
                               int16_t out[3]) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_INT_LIST) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] argument in");
    if (v->count != 1 && v->count != dims)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "int[] argument of wrong length in");
    for (int d = 0; d < 3; d++) {
        const int k = d - (3 - dims);
        if (k < 0) {
            out[d] = fill;
            continue;
        }
        const int64_t item = c->tables->list_items[v->index + (v->count == 1 ? 0 : k)];
        if (item < lo || item > hi) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "int[] argument out of range in");
        out[d] = (int16_t)item;
    }
    return TRT_OK;
}

/* A tensor's sizes and strides in the kernel's shape [n, c, d, h, w]: a missing spatial dim has size 1. */
static void shape5(const trt_tensor *t, int32_t *sizes3, int32_t *strides5) {
    const int dims = t->rank - 2;
    strides5[0] = t->strides[0];
    strides5[1] = t->strides[1];
    for (int d = 0; d < 3; d++) {
        const int k = d - (3 - dims);
        if (sizes3) sizes3[d] = k < 0 ? 1 : t->sizes[2 + k];
        strides5[2 + d] = k < 0 ? 0 : t->strides[2 + k];
    }
}

/* The weight: a float32 constant of the input's rank, in any dim order. */
static trt_status need_weight(const trt_call *c, const trt_tensor *w, int rank) {
    if (w->dtype != TRT_FLOAT32) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong weight dtype in");
    if (w->in_arena || w->data == NULL) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "expected a constant weight in");
    if (w->rank != rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "weight rank does not match the input in");
    return TRT_OK;
}

/* (input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups, *, out) */
static trt_status bind_convolution(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_float_conv_params *p = &params->aten_convolution;
    const trt_tensor *in = NULL, *w = NULL, *bias = NULL, *out = NULL;
    int transposed = 0;
    int16_t out_pad[3];
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, TRT_FLOAT32)) != TRT_OK) return s;
    if (in->rank < 3 || in->rank > 5)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an input of neither 3, 4 nor 5 dims in");
    const int dims = in->rank - 2;
    if ((s = trt_arg_tensor(c, 1, &w)) != TRT_OK || (s = need_weight(c, w, in->rank)) != TRT_OK ||
        (s = trt_arg_optional_tensor(c, 2, &bias)) != TRT_OK ||
        (s = spatial_list(c, 3, dims, 1, TRT_MAX_SPATIAL_STEP, 1, p->stride)) != TRT_OK ||
        (s = spatial_list(c, 4, dims, 0, TRT_MAX_SPATIAL_STEP, 0, p->pad)) != TRT_OK ||
        (s = spatial_list(c, 5, dims, 1, TRT_MAX_SPATIAL_STEP, 1, p->dilation)) != TRT_OK ||
        (s = trt_arg_bool(c, 6, &transposed)) != TRT_OK ||
        (s = spatial_list(c, 7, dims, 0, TRT_MAX_SPATIAL_STEP, 0, out_pad)) != TRT_OK ||
        (s = trt_arg_int(c, 8, 1, INT32_MAX, &p->groups)) != TRT_OK ||
        (s = trt_need_output(c, 9, &out, TRT_FLOAT32)) != TRT_OK || (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (out->rank != in->rank || out->sizes[0] != in->sizes[0])
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the convolution in");
    p->transposed = (uint8_t)transposed;
    p->batches = in->sizes[0];
    p->in_channels = in->sizes[1];
    p->out_channels = out->sizes[1];
    /* weight: [out, in / groups, k...], transposed [in, out / groups, k...] */
    const int32_t w_outer = transposed ? p->in_channels : p->out_channels;
    const int32_t grouped = transposed ? p->out_channels : p->in_channels;
    if (p->in_channels % p->groups || p->out_channels % p->groups || w->sizes[0] != w_outer ||
        (int64_t)w->sizes[1] * p->groups != grouped)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "weight shape does not match the channels and groups in");
    if (bias && ((s = trt_need_constant(c, bias, TRT_FLOAT32)) != TRT_OK)) return s;
    if (bias && (int64_t)bias->numel != p->out_channels)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "bias does not match the channels in");
    shape5(in, p->in_size, p->in_strides);
    shape5(out, p->out_size, p->out_strides);
    int32_t kernel[3];
    shape5(w, kernel, p->w_strides);
    uint64_t taps = 1;
    for (int d = 0; d < 3; d++) {
        if (kernel[d] > INT16_MAX) return trt_bad_arg(c, TRT_ERR_LIMIT, "a kernel larger than the runtime takes in");
        p->kernel[d] = (int16_t)kernel[d];
        taps *= (uint64_t)kernel[d];
        const int64_t reach = (int64_t)p->dilation[d] * (kernel[d] - 1);
        const int64_t want = transposed
            ? ((int64_t)p->in_size[d] - 1) * p->stride[d] - 2 * p->pad[d] + reach + out_pad[d] + 1
            : ((int64_t)trt_pooled_extent(p->in_size[d], kernel[d], p->stride[d], p->pad[d], p->dilation[d]));
        if (want < 1 || want != p->out_size[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the convolution in");
        if (out_pad[d] >= p->stride[d] && out_pad[d] >= p->dilation[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output_padding not below the stride or the dilation in");
    }
    p->input = (const float *)(const void *)in->data;
    p->weight = (const float *)(const void *)w->data;
    p->bias = bias ? (const float *)(const void *)bias->data : NULL;
    p->output = (float *)(void *)out->mutable_data;
    *macs += (uint64_t)(transposed ? in->numel : out->numel) * (uint64_t)w->sizes[1] * taps;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_float_conv_c, aten_convolution)

static const trt_kernel_variant CONVOLUTION_VARIANTS[] = {
    TRT_C_VARIANT(trt_float_conv_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_convolution, bind_convolution, CONVOLUTION_VARIANTS);
