/* The portable gathering operators ExecuTorch's Cortex-M lowering leaves to the CPU: bind steps and
 * variants of aten::repeat.out, aten::upsample_nearest2d.vec_out and aten::amax.out, on any dtype and
 * dim order. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

static int known_dtype(uint8_t dtype) {
    return dtype == TRT_UINT8 || dtype == TRT_INT8 || dtype == TRT_INT16 || dtype == TRT_INT32 || dtype == TRT_INT64 ||
           dtype == TRT_FLOAT32 || dtype == TRT_BOOL;
}

/* input (argument 0) and output (out_arg): one known dtype, disjoint, of at most TRT_PORTABLE_MAX_RANK dims. */
static trt_status tensors(const trt_call *c, trt_gather_params *p, uint8_t op, uint32_t out_arg, const trt_tensor **in,
                          const trt_tensor **out) {
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, in)) != TRT_OK) return s;
    if (!known_dtype((*in)->dtype)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a dtype it does not take in");
    if ((s = trt_need_input(c, *in, (*in)->dtype)) != TRT_OK || (s = trt_need_output(c, out_arg, out, (*in)->dtype)) != TRT_OK ||
        (s = trt_need_disjoint(c, *out, *in)) != TRT_OK)
        return s;
    if ((*in)->rank > TRT_PORTABLE_MAX_RANK || (*out)->rank > TRT_PORTABLE_MAX_RANK)
        return trt_bad_arg(c, TRT_ERR_LIMIT, "more dims than the runtime takes in");
    if ((*in)->numel == 0) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an empty input in");
    p->op = op;
    p->input = (*in)->data;
    p->output = (*out)->mutable_data;
    p->elem_size = (*in)->elem_size;
    p->dtype = (*in)->dtype;
    return TRT_OK;
}

/* repeat.out(self, SymInt[] repeats, *, out): the output's dims are the repeats times the input's (its
 * dims aligned right, 1 before them). */
static trt_status bind_repeat(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_gather_params *p = &params->aten_repeat;
    const trt_tensor *in = NULL, *out = NULL;
    const trt_value *repeats = NULL;
    trt_status s;
    (void)macs;
    if ((s = tensors(c, p, TRT_GATHER_REPEAT, 2, &in, &out)) != TRT_OK || (s = trt_arg_value(c, 1, &repeats)) != TRT_OK)
        return s;
    if (repeats->kind != PTE_VALUE_INT_LIST || repeats->count != out->rank || out->rank < in->rank)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "repeats that do not match the output in");
    p->rank = out->rank;
    for (int d = 0; d < out->rank; d++) {
        const int id = d - (out->rank - in->rank);
        const int32_t in_size = id < 0 ? 1 : in->sizes[id];
        if (c->tables->list_items[repeats->index + d] * in_size != out->sizes[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "repeats that do not match the output in");
        p->sizes[d] = out->sizes[d];
        p->in_sizes[d] = in_size;
        p->in_strides[d] = id < 0 ? 0 : in->strides[id];
        p->out_strides[d] = out->strides[d];
    }
    return TRT_OK;
}

/* upsample_nearest2d.vec_out(input, SymInt[]? output_size, float[]? scale_factors, *, out): 4-D; the scale
 * per dim is input / output in float32 (with scale factors, ExecuTorch takes 1 / factor, which the
 * runtime does not read: it takes them where the output is the input or twice it, whose indices need no
 * scale). */
static trt_status bind_upsample_nearest2d(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_gather_params *p = &params->aten_upsample_nearest2d;
    const trt_tensor *in = NULL, *out = NULL;
    const trt_value *factors = NULL;
    trt_status s;
    (void)macs;
    if ((s = tensors(c, p, TRT_GATHER_NEAREST, 3, &in, &out)) != TRT_OK || (s = trt_arg_value(c, 2, &factors)) != TRT_OK)
        return s;
    if (in->rank != 4 || out->rank != 4 || out->sizes[0] != in->sizes[0] || out->sizes[1] != in->sizes[1])
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an input or output other than 4-D of the same N and C in");
    for (int d = 2; d < 4; d++)
        if (factors->kind != PTE_VALUE_NULL && out->sizes[d] != in->sizes[d] && out->sizes[d] != 2 * in->sizes[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "scale factors other than 1 or 2 in");
    p->rank = 4;
    for (int d = 0; d < 4; d++) {
        p->sizes[d] = out->sizes[d];
        p->in_sizes[d] = in->sizes[d];
        p->in_strides[d] = in->strides[d];
        p->out_strides[d] = out->strides[d];
    }
    p->scale_h = (float)in->sizes[2] / (float)out->sizes[2];
    p->scale_w = (float)in->sizes[3] / (float)out->sizes[3];
    return TRT_OK;
}

/* amax.out(self, int[1] dim, bool keepdim, *, out): the dims listed (an empty list: every dim) reduced; the
 * output keeps them as size 1 or drops them. */
static trt_status bind_amax(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_gather_params *p = &params->aten_amax;
    const trt_tensor *in = NULL, *out = NULL;
    const trt_value *dims = NULL;
    int keepdim = 0;
    trt_status s;
    (void)macs;
    if ((s = tensors(c, p, TRT_GATHER_AMAX, 3, &in, &out)) != TRT_OK || (s = trt_arg_value(c, 1, &dims)) != TRT_OK ||
        (s = trt_arg_bool(c, 2, &keepdim)) != TRT_OK)
        return s;
    if (dims->kind != PTE_VALUE_INT_LIST) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] dim in");
    p->reduced = dims->count ? 0u : (1u << in->rank) - 1u;
    for (uint16_t k = 0; k < dims->count; k++) {
        int64_t d = c->tables->list_items[dims->index + k];
        if (d < -(int64_t)in->rank || d >= in->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "dim out of range in");
        if (d < 0) d += in->rank;
        p->reduced |= 1u << d;
    }
    int od = 0;
    for (int d = 0; d < in->rank; d++) {
        const int reduced = (int)(p->reduced >> d & 1u);
        p->sizes[d] = in->sizes[d];
        p->in_strides[d] = in->strides[d];
        p->out_strides[d] = 0;
        if (reduced && !keepdim) continue;
        if (od >= out->rank || out->sizes[od] != (reduced ? 1 : in->sizes[d]))
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the reduction in");
        if (!reduced) p->out_strides[d] = out->strides[od];
        od++;
    }
    if (od != out->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the reduction in");
    p->rank = in->rank;
    return TRT_OK;
}

/* Every row shares one kernel and one parameter struct: the union's members of them lie at its start. */
TRT_RUN_ALONE(trt_gather_c, aten_repeat)

static const trt_kernel_variant REPEAT_VARIANTS[] = {
    TRT_C_VARIANT(trt_gather_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_repeat, bind_repeat, REPEAT_VARIANTS);

static const trt_kernel_variant UPSAMPLE_NEAREST2D_VARIANTS[] = {
    TRT_C_VARIANT(trt_gather_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_upsample_nearest2d, bind_upsample_nearest2d, UPSAMPLE_NEAREST2D_VARIANTS);

static const trt_kernel_variant AMAX_VARIANTS[] = {
    TRT_C_VARIANT(trt_gather_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_amax, bind_amax, AMAX_VARIANTS);
