/* aten::index.Tensor_out(Tensor self, Tensor?[] indices, *, out): bind step and variant (the gathering
 * kernel). One index tensor (int32 or int64, any shape) at dim d, None before it: the output is
 * self's dims before d, the index's, then self's after d. self, the indices and the output row-major. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_gather_params *p = &params->aten_index;
    const trt_tensor *in = NULL, *out = NULL, *index = NULL;
    const trt_value *list = NULL;
    int dim = -1;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, in->dtype)) != TRT_OK ||
        (s = trt_arg_value(c, 1, &list)) != TRT_OK || (s = trt_need_output(c, 2, &out, in->dtype)) != TRT_OK ||
        (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (list->kind != PTE_VALUE_OPTIONAL_TENSOR_LIST || list->count > in->rank)
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected a Tensor?[] of at most the input's dims in");
    for (uint16_t k = 0; k < list->count; k++) {
        const int64_t slot = c->tables->list_items[list->index + k];
        if (slot < 0) continue;
        if (dim >= 0) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "more than one index tensor in");
        dim = k;
        index = &c->tables->tensors[slot];
    }
    if (!index) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "no index tensor in");
    if (index->dtype != TRT_INT64 && index->dtype != TRT_INT32)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an index tensor other than int32 or int64 (a mask) in");
    if ((s = trt_need_input(c, index, index->dtype)) != TRT_OK || (s = trt_need_disjoint(c, out, index)) != TRT_OK) return s;
    if (!trt_is_row_major(in) || !trt_is_row_major(out) || !trt_is_row_major(index))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an input, index or output not row-major in");
    /* the output's shape: in[:dim] + index + in[dim + 1:] */
    int od = 0, ok = out->rank == in->rank - 1 + index->rank;
    int64_t outer = 1, inner = 1;
    for (int d = 0; ok && d < in->rank; d++) {
        if (d == dim) {
            for (int k = 0; ok && k < index->rank; k++) ok = out->sizes[od++] == index->sizes[k];
            continue;
        }
        ok = out->sizes[od++] == in->sizes[d];
        if (d < dim) outer *= in->sizes[d];
        else inner *= in->sizes[d];
    }
    if (!ok) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the index in");
    p->op = TRT_GATHER_INDEX;
    p->input = in->data;
    p->output = out->mutable_data;
    p->index = index->data;
    p->index_is_64 = index->dtype == TRT_INT64;
    p->elem_size = in->elem_size;
    p->dtype = in->dtype;
    p->outer = (int32_t)outer;
    p->count = (int32_t)index->numel;
    p->inner_bytes = (int32_t)(inner * in->elem_size);
    p->dim_size = in->sizes[dim];
    return TRT_OK;
}

TRT_RUN_ALONE(trt_gather_c, aten_index)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_gather_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_index, bind, VARIANTS);
