/* dim_order_ops::_clone_dim_order.out(Tensor self, *, bool non_blocking, int[]? dim_order,
 * Tensor(a!) out): bind step and variants. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/mve/kernels_mve.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_copy_params *p = &params->clone_dim_order;
    const trt_tensor *in = NULL, *out = NULL;
    const trt_value *order = NULL;
    int non_blocking = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_arg_bool(c, 1, &non_blocking)) != TRT_OK ||
        (s = trt_arg_value(c, 2, &order)) != TRT_OK || (s = trt_need_output(c, 3, &out, in->dtype)) != TRT_OK ||
        (s = trt_need_input(c, in, in->dtype)) != TRT_OK || (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (in->rank != out->rank || in->rank > TRT_COPY_MAX_RANK) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "rank mismatch in");
    for (int d = 0; d < in->rank; d++)
        if (in->sizes[d] != out->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shape mismatch in");
    if (order->kind == PTE_VALUE_INT_LIST) {
        if (order->count != out->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "dim_order does not match the output in");
        for (int d = 0; d < out->rank; d++)
            if (c->tables->list_items[order->index + d] != out->dim_order[d])
                return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "dim_order does not match the output in");
    } else if (order->kind != PTE_VALUE_NULL) {
        return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] dim_order in");
    }
    p->input = in->data;
    p->output = out->mutable_data;
    p->rank = in->rank;
    p->elem_size = in->elem_size;
    for (int d = 0; d < in->rank; d++) {
        p->sizes[d] = in->sizes[d];
        p->in_strides[d] = in->strides[d];
        p->out_strides[d] = out->strides[d];
    }
    return TRT_OK;
}

TRT_ACCEPTS(trt_clone_dim_order_mve_accepts, clone_dim_order)
TRT_RUN_ALONE(trt_clone_dim_order_mve, clone_dim_order)
TRT_RUN_ALONE(trt_clone_dim_order_c, clone_dim_order)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_clone_dim_order_mve, trt_clone_dim_order_mve_accepts_p, NULL, NULL, NULL)
    TRT_C_VARIANT(trt_clone_dim_order_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(clone_dim_order, bind, VARIANTS);
