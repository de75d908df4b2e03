/* The portable float32 reductions ExecuTorch's Cortex-M lowering leaves to the CPU: bind steps and
 * variants of aten::sum.IntList_out, aten::mean.out, aten::_softmax.out and aten::_log_softmax.out,
 * over any dims of a tensor of any shape and dim order. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

/* input (argument 0) and output (out_arg): float32, disjoint, of at most TRT_PORTABLE_MAX_RANK dims. */
static trt_status tensors(const trt_call *c, uint32_t out_arg, const trt_tensor **in, const trt_tensor **out) {
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, in)) != TRT_OK || (s = trt_need_input(c, *in, TRT_FLOAT32)) != TRT_OK ||
        (s = trt_need_output(c, out_arg, out, TRT_FLOAT32)) != TRT_OK || (s = trt_need_disjoint(c, *out, *in)) != TRT_OK)
        return s;
    if ((*in)->rank > TRT_PORTABLE_MAX_RANK) return trt_bad_arg(c, TRT_ERR_LIMIT, "more dims than the runtime takes in");
    return TRT_OK;
}

/* sum / mean (self, int[1]? dim, bool keepdim, ScalarType? dtype, *, out): the dims listed (none or an
 * empty list: every dim) are summed; the output keeps them as size 1 or drops them. */
static trt_status bind_reduction(const trt_call *c, trt_reduce_params *p, int32_t op) {
    const trt_tensor *in = NULL, *out = NULL;
    const trt_value *dims = NULL, *dtype = NULL;
    int keepdim = 0;
    trt_status s;
    if ((s = tensors(c, 4, &in, &out)) != TRT_OK || (s = trt_arg_value(c, 1, &dims)) != TRT_OK ||
        (s = trt_arg_bool(c, 2, &keepdim)) != TRT_OK || (s = trt_arg_value(c, 3, &dtype)) != TRT_OK)
        return s;
    if (dtype->kind != PTE_VALUE_NULL && !(dtype->kind == PTE_VALUE_INT && dtype->u.i == TRT_FLOAT32))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a dtype other than float32 in");
    p->reduced = 0;
    if (dims->kind == PTE_VALUE_INT_LIST && dims->count > 0) {
        for (uint16_t k = 0; k < dims->count; k++) {
            int64_t d = c->tables->list_items[dims->index + k];
            if (d < -(int64_t)in->rank || d >= in->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "dim out of range in");
            if (d < 0) d += in->rank;
            p->reduced |= 1u << d;
        }
    } else if (dims->kind == PTE_VALUE_NULL || dims->kind == PTE_VALUE_INT_LIST) {
        p->reduced = (1u << in->rank) - 1u;
    } else {
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] dim in");
    }
    /* the output's dims are the input's kept ones (and, with keepdim, the summed ones as size 1) */
    int od = 0;
    p->count = 1;
    for (int d = 0; d < in->rank; d++) {
        const int summed = (int)(p->reduced >> d & 1u);
        if (summed) p->count *= (uint32_t)in->sizes[d];
        if (summed && !keepdim) {
            p->out_strides[d] = 0;
            continue;
        }
        if (od >= out->rank || out->sizes[od] != (summed ? 1 : in->sizes[d]))
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the reduction in");
        p->out_strides[d] = summed ? 0 : out->strides[od];
        od++;
    }
    if (od != out->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the reduction in");
    if (in->numel == 0) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an empty input in");
    p->op = op;
    p->rank = in->rank;
    for (int d = 0; d < in->rank; d++) {
        p->sizes[d] = in->sizes[d];
        p->in_strides[d] = in->strides[d];
    }
    p->input = (const float *)(const void *)in->data;
    p->output = (float *)(void *)out->mutable_data;
    return TRT_OK;
}

/* _softmax / _log_softmax (self, int dim, bool half_to_float, *, out): the output has the input's shape,
 * in any dim order. */
static trt_status bind_softmax(const trt_call *c, trt_reduce_params *p, int32_t op) {
    const trt_tensor *in = NULL, *out = NULL;
    int32_t dim = 0;
    int half_to_float = 0;
    trt_status s;
    if ((s = tensors(c, 3, &in, &out)) != TRT_OK || (s = trt_arg_bool(c, 2, &half_to_float)) != TRT_OK) return s;
    if (in->rank < 1) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "0-dim input in");
    if ((s = trt_arg_int(c, 1, -(int64_t)in->rank, (int64_t)in->rank - 1, &dim)) != TRT_OK) return s;
    if (half_to_float) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "half_to_float on a float32 input in");
    if (out->rank != in->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "rank mismatch in");
    if (dim < 0) dim += in->rank;
    p->op = op;
    p->rank = in->rank;
    p->reduced = 1u << dim;
    p->count = (uint32_t)in->sizes[dim];
    for (int d = 0; d < in->rank; d++) {
        if (in->sizes[d] != out->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shape mismatch in");
        p->sizes[d] = in->sizes[d];
        p->in_strides[d] = in->strides[d];
        p->out_strides[d] = out->strides[d];
    }
    p->input = (const float *)(const void *)in->data;
    p->output = (float *)(void *)out->mutable_data;
    return TRT_OK;
}

static trt_status bind_sum(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_reduction(c, &p->aten_sum, TRT_REDUCE_SUM);
}
static trt_status bind_mean(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_reduction(c, &p->aten_mean, TRT_REDUCE_MEAN);
}
static trt_status bind_softmax_op(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_softmax(c, &p->aten_softmax, TRT_REDUCE_SOFTMAX);
}
static trt_status bind_log_softmax(const trt_call *c, trt_params *p, uint64_t *macs) {
    (void)macs;
    return bind_softmax(c, &p->aten_log_softmax, TRT_REDUCE_LOG_SOFTMAX);
}

/* Every row shares one kernel and one parameter struct: the union's members of them lie at its start. */
TRT_RUN_ALONE(trt_reduce_c, aten_sum)

static const trt_kernel_variant SUM_VARIANTS[] = {
    TRT_C_VARIANT(trt_reduce_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_sum, bind_sum, SUM_VARIANTS);

static const trt_kernel_variant MEAN_VARIANTS[] = {
    TRT_C_VARIANT(trt_reduce_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_mean, bind_mean, MEAN_VARIANTS);

static const trt_kernel_variant SOFTMAX_VARIANTS[] = {
    TRT_C_VARIANT(trt_reduce_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_softmax, bind_softmax_op, SOFTMAX_VARIANTS);

static const trt_kernel_variant LOG_SOFTMAX_VARIANTS[] = {
    TRT_C_VARIANT(trt_reduce_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_log_softmax, bind_log_softmax, LOG_SOFTMAX_VARIANTS);
