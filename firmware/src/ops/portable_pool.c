/* The portable pools ExecuTorch's Cortex-M lowering leaves to the CPU (the forms the cortex_m pools do
 * not take: ceil_mode, dilation, divisor_override): bind steps and variants of
 * aten::max_pool2d_with_indices.out (any integer dtype or float32) and aten::avg_pool2d.out (float32),
 * on 3-D or 4-D tensors in any dim order. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

/* A stride: an int[] of two items in [lo, hi], one standing for both, or none (torch's default): out[]
 * then keeps what it holds, the kernel size. */
static trt_status stride_pair(const trt_call *c, uint32_t i, int64_t lo, int64_t hi, int32_t out[2]) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_INT_LIST) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] argument in");
    if (v->count == 0) return TRT_OK;
    return trt_arg_pair(c, i, lo, hi, out);
}

/* torch's pooled extent: (in + 2 pad - dilation (kernel - 1) - 1 [+ stride - 1 with ceil_mode]) / stride + 1,
 * less one when ceil_mode would start the last window past the input and its padding on the right. */
static int32_t pooled(int32_t in, int32_t kernel, int32_t stride, int32_t pad, int32_t dilation, int ceil_mode) {
    const int64_t span = (int64_t)in + 2 * pad - (int64_t)dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    if (span < 0) return 0;
    int32_t out = (int32_t)(span / stride + 1);
    if (ceil_mode && (int64_t)(out - 1) * stride >= (int64_t)in + pad) out--;
    return out;
}

/* Every window along one dim has a tap inside the input (a window of none has no value to give). */
static int every_window_reaches(int32_t in, int32_t out, int32_t kernel, int32_t stride, int32_t pad,
                                int32_t dilation) {
    for (int32_t o = 0; o < out; o++) {
        int hit = 0;
        for (int32_t k = 0; k < kernel && !hit; k++) {
            const int64_t at = (int64_t)o * stride - pad + (int64_t)k * dilation;
            hit = at >= 0 && at < in;
        }
        if (!hit) return 0;
    }
    return 1;
}

static int pool_dtype(uint8_t dtype) {
    return dtype == TRT_UINT8 || dtype == TRT_INT8 || dtype == TRT_INT16 || dtype == TRT_INT32 || dtype == TRT_FLOAT32;
}

/* The input (argument 0) and out (out_arg) of one dtype, and the window, checked against out's shape. */
static trt_status bind_window(const trt_call *c, trt_window_pool_params *p, uint32_t out_arg, const int32_t kernel[2],
                              const int32_t stride[2], const int32_t pad[2], const int32_t dilation[2], int ceil_mode,
                              const trt_tensor **out_t) {
    const trt_tensor *in = NULL, *out = NULL;
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK) return s;
    if (!pool_dtype(in->dtype)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an input dtype it does not take in");
    if ((s = trt_need_input(c, in, in->dtype)) != TRT_OK) return s;
    if ((s = trt_arg_tensor(c, out_arg, &out)) != TRT_OK) return s;
    if (out->dtype != in->dtype) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "wrong output dtype in");
    if (!out->in_arena || out->numel == 0)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output is not a memory-planned tensor in");
    if ((s = trt_need_disjoint(c, out, in)) != TRT_OK) return s;
    if (in->rank != 3 && in->rank != 4)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an input of neither 3 nor 4 dims in");
    if (out->rank != in->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "rank mismatch in");
    const int lead = in->rank - 3;   /* 1: a batch dim */
    p->batches = lead ? in->sizes[0] : 1;
    p->channels = in->sizes[lead];
    p->in_h = in->sizes[lead + 1];
    p->in_w = in->sizes[lead + 2];
    const int32_t in_hw[2] = {p->in_h, p->in_w};
    for (int d = 0; d < 2; d++) {
        if (kernel[d] > INT16_MAX) return trt_bad_arg(c, TRT_ERR_LIMIT, "a kernel larger than the runtime takes in");
        if (pad[d] > kernel[d] / 2) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "padding above half the kernel in");
        const int32_t want = pooled(in_hw[d], kernel[d], stride[d], pad[d], dilation[d], ceil_mode);
        if (want < 1 || out->sizes[lead + 1 + d] != want)
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the pool in");
        if (!every_window_reaches(in_hw[d], want, kernel[d], stride[d], pad[d], dilation[d]))
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a window outside the input in");
        p->kernel[d] = (int16_t)kernel[d];
        p->stride[d] = (int16_t)stride[d];
        p->pad[d] = (int16_t)pad[d];
        p->dilation[d] = (int16_t)dilation[d];
    }
    if ((lead && out->sizes[0] != p->batches) || out->sizes[lead] != p->channels)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the pool in");
    p->out_h = out->sizes[lead + 1];
    p->out_w = out->sizes[lead + 2];
    for (int d = 0; d < 4; d++) {
        p->in_strides[d] = d < 1 - lead ? 0 : in->strides[d - (1 - lead)];
        p->out_strides[d] = d < 1 - lead ? 0 : out->strides[d - (1 - lead)];
    }
    p->dtype = in->dtype;
    p->elem_size = in->elem_size;
    p->input = in->data;
    p->output = out->mutable_data;
    *out_t = out;
    return TRT_OK;
}

/* Two tensors of one dtype at one place of the memory plan. */
static int same_place(const trt_tensor *a, const trt_tensor *b) {
    return a->in_arena && b->in_arena && a->arena_offset == b->arena_offset && a->nbytes == b->nbytes &&
           a->dtype == b->dtype;
}

/* (self, kernel_size, stride, padding, dilation, ceil_mode, *, out, indices) -> (out, indices). The
 * loader's `out` of a call is its next-to-last argument, here the indices, which the kernel writes
 * beside the values; a later reader of the values keeps their bytes live (runtime.c). */
static trt_status bind_max_pool(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_window_pool_params *p = &params->aten_max_pool2d_with_indices;
    int32_t kernel[2], stride[2], pad[2] = {0, 0}, dilation[2] = {1, 1};
    int ceil_mode = 0;
    const trt_tensor *out = NULL, *indices = NULL, *in = NULL;
    const trt_value *ret = NULL;
    trt_status s;
    if ((s = trt_arg_pair(c, 1, 1, INT16_MAX, kernel)) != TRT_OK) return s;
    stride[0] = kernel[0], stride[1] = kernel[1];
    if ((s = stride_pair(c, 2, 1, TRT_MAX_SPATIAL_STEP, stride)) != TRT_OK ||
        (s = trt_arg_pair(c, 3, 0, TRT_MAX_SPATIAL_STEP, pad)) != TRT_OK ||
        (s = trt_arg_pair(c, 4, 1, TRT_MAX_SPATIAL_STEP, dilation)) != TRT_OK ||
        (s = trt_arg_bool(c, 5, &ceil_mode)) != TRT_OK ||
        (s = bind_window(c, p, 6, kernel, stride, pad, dilation, ceil_mode, &out)) != TRT_OK)
        return s;
    if (c->n_args != 9 || (s = trt_arg_tensor(c, 7, &indices)) != TRT_OK || (s = trt_arg_value(c, 8, &ret)) != TRT_OK)
        return s != TRT_OK ? s : trt_bad_arg(c, TRT_ERR_MALFORMED, "wrong argument count in");
    if (ret->kind != PTE_VALUE_TENSOR_LIST || ret->count != 2 ||
        !same_place(&c->tables->tensors[c->tables->list_items[ret->index]], out) ||
        !same_place(&c->tables->tensors[c->tables->list_items[ret->index + 1]], indices))
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "return value is not (out, indices) in");
    if (indices->dtype != TRT_INT64 || !indices->in_arena || indices->rank != out->rank ||
        !trt_same_layout(indices, out))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "indices not an int64 tensor of the output's shape in");
    for (int d = 0; d < out->rank; d++)
        if (indices->sizes[d] != out->sizes[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "indices not an int64 tensor of the output's shape in");
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_disjoint(c, indices, in)) != TRT_OK ||
        (s = trt_need_disjoint(c, indices, out)) != TRT_OK)
        return s;
    p->op = TRT_WINDOW_MAX;
    p->indices = (int64_t *)(void *)indices->mutable_data;
    *macs += (uint64_t)out->numel * (uint64_t)kernel[0] * (uint64_t)kernel[1];
    return TRT_OK;
}

/* (self, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override?, *, out) */
static trt_status bind_avg_pool(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_window_pool_params *p = &params->aten_avg_pool2d;
    int32_t kernel[2], stride[2], pad[2] = {0, 0};
    const int32_t dilation[2] = {1, 1};
    int ceil_mode = 0, include_pad = 0;
    const trt_tensor *out = NULL;
    const trt_value *divisor = NULL;
    trt_status s;
    if ((s = trt_arg_pair(c, 1, 1, INT16_MAX, kernel)) != TRT_OK) return s;
    stride[0] = kernel[0], stride[1] = kernel[1];
    if ((s = stride_pair(c, 2, 1, TRT_MAX_SPATIAL_STEP, stride)) != TRT_OK ||
        (s = trt_arg_pair(c, 3, 0, TRT_MAX_SPATIAL_STEP, pad)) != TRT_OK ||
        (s = trt_arg_bool(c, 4, &ceil_mode)) != TRT_OK ||
        (s = trt_arg_bool(c, 5, &include_pad)) != TRT_OK || (s = trt_arg_value(c, 6, &divisor)) != TRT_OK ||
        (s = bind_window(c, p, 7, kernel, stride, pad, dilation, ceil_mode, &out)) != TRT_OK ||
        (s = trt_need_output(c, 7, &out, TRT_FLOAT32)) != TRT_OK)
        return s;
    p->divisor = 0;
    if (divisor->kind == PTE_VALUE_INT) {
        if (divisor->u.i == 0 || divisor->u.i > TRT_MAX_FLOAT_EXACT_INT || divisor->u.i < -TRT_MAX_FLOAT_EXACT_INT)
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "divisor_override out of range in");
        p->divisor = (int32_t)divisor->u.i;
    } else if (divisor->kind != PTE_VALUE_NULL) {
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int or None divisor_override in");
    }
    p->op = TRT_WINDOW_AVG;
    p->count_include_pad = (uint8_t)include_pad;
    p->indices = NULL;
    *macs += (uint64_t)out->numel * (uint64_t)kernel[0] * (uint64_t)kernel[1];
    return TRT_OK;
}

/* Both rows share one kernel and one parameter struct: the union's members of them lie at its start. */
TRT_RUN_ALONE(trt_window_pool_c, aten_max_pool2d_with_indices)

static const trt_kernel_variant MAX_POOL_VARIANTS[] = {
    TRT_C_VARIANT(trt_window_pool_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_max_pool2d_with_indices, bind_max_pool, MAX_POOL_VARIANTS);

static const trt_kernel_variant AVG_POOL_VARIANTS[] = {
    TRT_C_VARIANT(trt_window_pool_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_avg_pool2d, bind_avg_pool, AVG_POOL_VARIANTS);
