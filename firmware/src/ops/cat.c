/* aten::cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out): bind step and variants. Up to
 * eight tensors of the output's dtype and dim order, equal but along `dim`. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_cat_params *p = &params->cat;
    const trt_value *list = NULL;
    const trt_tensor *out = NULL;
    int32_t dim = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_value(c, 0, &list)) != TRT_OK) return s;
    if (list->kind != PTE_VALUE_TENSOR_LIST) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected a tensor list in");
    if (list->count < 1 || list->count > TRT_CAT_MAX_INPUTS) return trt_bad_arg(c, TRT_ERR_LIMIT, "not 1 to 8 tensors in");
    const trt_tensor *first = &c->tables->tensors[c->tables->list_items[list->index]];
    if ((s = trt_need_output(c, 2, &out, first->dtype)) != TRT_OK ||
        (s = trt_arg_int(c, 1, -(int64_t)out->rank, (int64_t)out->rank - 1, &dim)) != TRT_OK)
        return s;
    if (out->rank < 1) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "0-dim output in");
    if (dim < 0) dim += out->rank;
    /* dim's place in out's memory order: outer rows before it, contiguous elements after it */
    int64_t outer = 1, inner = 1;
    int seen = 0;
    for (int k = 0; k < out->rank; k++) {
        int d = out->dim_order[k];
        if (d == dim) seen = 1;
        else if (seen) inner *= out->sizes[d];
        else outer *= out->sizes[d];
    }
    int64_t along = 0;
    for (uint16_t i = 0; i < list->count; i++) {
        const trt_tensor *t = &c->tables->tensors[c->tables->list_items[list->index + i]];
        if ((s = trt_need_input(c, t, out->dtype)) != TRT_OK || (s = trt_need_disjoint(c, out, t)) != TRT_OK) return s;
        if (t->rank != out->rank || t->numel == 0) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "tensor of another rank, or empty, in");
        for (int d = 0; d < out->rank; d++)
            if (d != dim && t->sizes[d] != out->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "tensor shapes differ off the dim in");
        if (!trt_dense_in_order(t, out->dim_order)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "tensor not in the output's dim order in");
        along += t->sizes[dim];
        p->input[i] = t->data;
        p->slab_bytes[i] = (uint32_t)(t->sizes[dim] * inner * out->elem_size);
    }
    if (along != out->sizes[dim]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the tensors in");
    p->inputs = list->count;
    p->outer = (int32_t)outer;
    p->output = out->mutable_data;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_cat_c, cat)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_cat_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(cat, bind, VARIANTS);
