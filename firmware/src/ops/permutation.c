/* The permuting copies' shared binding (permutation.h). */
#include "permutation.h"

trt_status trt_bind_permutation(const trt_call *c, trt_copy_params *p) {
    const trt_tensor *in = NULL, *out = NULL;
    const trt_value *perm = NULL;
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, in->dtype)) != TRT_OK ||
        (s = trt_arg_value(c, 1, &perm)) != TRT_OK || (s = trt_need_output(c, 2, &out, in->dtype)) != TRT_OK ||
        (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (perm->kind != PTE_VALUE_INT_LIST) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] perm in");
    if (out->rank != in->rank || perm->count != in->rank || in->rank > TRT_COPY_MAX_RANK)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "perm does not match the rank in");
    unsigned seen = 0;
    p->rank = in->rank;
    p->elem_size = in->elem_size;
    for (int k = 0; k < in->rank; k++) {
        int64_t d = c->tables->list_items[perm->index + k];
        if (d < -(int64_t)in->rank || d >= in->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "perm entry out of range in");
        if (d < 0) d += in->rank;
        if (seen & (1u << d)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "perm is not a permutation in");
        seen |= 1u << d;
        if (out->sizes[k] != in->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from perm in");
        /* output dim k walks the input's dim d */
        p->sizes[k] = out->sizes[k];
        p->in_strides[k] = in->strides[d];
        p->out_strides[k] = out->strides[k];
    }
    p->input = in->data;
    p->output = out->mutable_data;
    return TRT_OK;
}
