/* cortex_m::transpose.out(Tensor input, int[] perm, *, Tensor(a!) out) and
 * aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out): one bind step and kernel.
 * The lowering makes a transpose of an int8 permute; it leaves some (after a convolution whose
 * output it had not typed int8 yet) as the portable permute_copy, which is the same operation. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

static trt_status bind_permutation(const trt_call *c, trt_copy_params *p) {
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

static trt_status bind_transpose(const trt_call *c, trt_params *params, uint64_t *macs) {
    (void)macs;
    return bind_permutation(c, &params->transpose);
}

static trt_status bind_permute_copy(const trt_call *c, trt_params *params, uint64_t *macs) {
    (void)macs;
    return bind_permutation(c, &params->permute_copy);
}

static void run_transpose(const trt_params *p, void *temp) { (void)temp; trt_transpose_c(&p->transpose); }
static void run_permute_copy(const trt_params *p, void *temp) { (void)temp; trt_transpose_c(&p->permute_copy); }

static const trt_kernel_variant TRANSPOSE_VARIANTS[] = {
    {"c", NULL, NULL, NULL, NULL, run_transpose},
};
static const trt_kernel_variant PERMUTE_COPY_VARIANTS[] = {
    {"c", NULL, NULL, NULL, NULL, run_permute_copy},
};

TRT_DEFINE_OPERATOR(transpose, bind_transpose, TRANSPOSE_VARIANTS);
TRT_DEFINE_OPERATOR(permute_copy, bind_permute_copy, PERMUTE_COPY_VARIANTS);
