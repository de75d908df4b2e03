/* aten::squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out): bind step and variants.
 * The listed dims that have size 1 are dropped (others stay, as torch.squeeze does). */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"
#include "reshape.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_reshape_params *p = &params->squeeze_copy;
    const trt_tensor *in = NULL, *out = NULL;
    const trt_value *dims = NULL;
    trt_status s;
    (void)macs;
    if ((s = trt_bind_reshape(c, 2, &in, &out, p)) != TRT_OK || (s = trt_arg_value(c, 1, &dims)) != TRT_OK) return s;
    if (dims->kind != PTE_VALUE_INT_LIST) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected an int[] dim in");
    const int rank = in->rank > 0 ? in->rank : 1;   /* torch wraps dims of a 0-dim tensor as if it had one */
    unsigned dropped = 0;
    for (uint16_t k = 0; k < dims->count; k++) {
        int64_t d = c->tables->list_items[dims->index + k];
        if (d < -rank || d >= rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "dim out of range in");
        if (d < 0) d += rank;
        if (in->rank > 0 && in->sizes[d] == 1) dropped |= 1u << d;
    }
    int kept = 0;
    for (int d = 0; d < in->rank; d++) {
        if (dropped & (1u << d)) continue;
        if (kept >= out->rank || out->sizes[kept] != in->sizes[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the dims in");
        kept++;
    }
    if (kept != out->rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the dims in");
    return TRT_OK;
}

TRT_RUN_ALONE(trt_reshape_copy_c, squeeze_copy)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_reshape_copy_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(squeeze_copy, bind, VARIANTS);
