/* aten::split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim, *, Tensor(a!)[] out): bind
 * step and variant. The loader binds the call once per item of `out` (c->out_item, bind_args.h): each
 * binding copies its slice of self (any dtype, any dim order) with the pointwise kernel. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_pointwise_params *p = &params->aten_split_with_sizes_copy;
    const trt_tensor *in = NULL;
    const trt_value *sizes = NULL, *list = NULL;
    int32_t dim = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, in->dtype)) != TRT_OK ||
        (s = trt_arg_value(c, 1, &sizes)) != TRT_OK || (s = trt_arg_value(c, 3, &list)) != TRT_OK)
        return s;
    if (in->rank < 1 || in->rank > TRT_PORTABLE_MAX_RANK) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an input of 0 or too many dims in");
    if ((s = trt_arg_int(c, 2, -(int64_t)in->rank, (int64_t)in->rank - 1, &dim)) != TRT_OK) return s;
    if (dim < 0) dim += in->rank;
    if (sizes->kind != PTE_VALUE_INT_LIST || list->kind != PTE_VALUE_TENSOR_LIST || sizes->count != list->count ||
        c->n_args != 5 || c->out_item >= list->count)
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "split sizes and out tensors that do not match in");
    int64_t start = 0, total = 0;
    for (uint16_t k = 0; k < sizes->count; k++) {
        const int64_t size = c->tables->list_items[sizes->index + k];
        if (size < 0) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a negative split size in");
        if (k < c->out_item) start += size;
        total += size;
    }
    if (total != in->sizes[dim]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "split sizes that do not sum to the dim in");
    const trt_tensor *out = &c->tables->tensors[c->tables->list_items[list->index + c->out_item]];
    if (out->dtype != in->dtype || out->rank != in->rank || !out->in_arena || out->numel == 0)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an out tensor of another dtype or rank, or not planned, in");
    if ((s = trt_need_disjoint(c, out, in)) != TRT_OK) return s;
    for (int d = 0; d < in->rank; d++)
        if (out->sizes[d] != (d == dim ? c->tables->list_items[sizes->index + c->out_item] : in->sizes[d]))
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an out tensor of another shape in");
    p->op = TRT_PW_COPY;
    p->a = in->data + (size_t)start * (size_t)in->strides[dim] * in->elem_size;
    p->output = out->mutable_data;
    p->a_dtype = p->b_dtype = p->out_dtype = in->dtype;
    p->rank = in->rank;
    for (int d = 0; d < in->rank; d++) {
        p->sizes[d] = out->sizes[d];
        p->a_strides[d] = in->strides[d];
        p->out_strides[d] = out->strides[d];
    }
    return TRT_OK;
}

TRT_RUN_ALONE(trt_pointwise_c, aten_split_with_sizes_copy)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_pointwise_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_split_with_sizes_copy, bind, VARIANTS);
