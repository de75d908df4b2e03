/* cortex_m::pad.out(Tensor input, int[] pre_pad, int[] post_pad, int pad_value, *, Tensor(a!) out):
 * bind step and variants.
 *
 * The exporter gives four values before and after, in the input's memory order when the
 * reference (operators.pad_impl) deems it channels-last (passes_utils.is_channels_last: NHWC,
 * or C == 1, or H == W == 1), else in logical order; a rank below 4 uses the last entries. */
#include "../kernels/c/kernels_c.h"
#include "broadcast.h"
#include "operator_table.h"

#define PAD_ENTRIES 4

static const int NHWC_TO_LOGICAL[PAD_ENTRIES] = {0, 3, 1, 2};   /* logical dim i's entry of an NHWC list */

static trt_status pad_list(const trt_call *c, uint32_t i, int32_t out[PAD_ENTRIES]) {
    const trt_value *v = NULL;
    trt_status s = trt_arg_value(c, i, &v);
    if (s != TRT_OK) return s;
    if (v->kind != PTE_VALUE_INT_LIST || v->count != PAD_ENTRIES) return trt_bad_arg(c, TRT_ERR_MALFORMED, "expected 4 paddings in");
    for (int k = 0; k < PAD_ENTRIES; k++) {
        int64_t item = c->tables->list_items[v->index + k];
        if (item < 0 || item > TRT_MAX_SPATIAL_STEP)
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "padding negative or too large in");
        out[k] = (int32_t)item;
    }
    return TRT_OK;
}

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_pad_params *p = &params->pad;
    const trt_tensor *in = NULL, *out = NULL;
    int32_t pre[PAD_ENTRIES], post[PAD_ENTRIES], value = 0, before[PAD_ENTRIES], after[PAD_ENTRIES];
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = pad_list(c, 1, pre)) != TRT_OK || (s = pad_list(c, 2, post)) != TRT_OK ||
        (s = trt_arg_int(c, 3, -128, 127, &value)) != TRT_OK || (s = trt_need_output(c, 4, &out, TRT_INT8)) != TRT_OK ||
        (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (in->rank < 1 || in->rank > PAD_ENTRIES || out->rank != in->rank)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "rank outside 1..4 in");
    /* the paddings of the input's logical dims, and the output shape they give */
    const int offset = PAD_ENTRIES - in->rank, nhwc = trt_reference_channels_last(in);
    for (int d = 0; d < in->rank; d++) {
        const int entry = nhwc ? NHWC_TO_LOGICAL[d] : offset + d;
        before[d] = pre[entry];
        after[d] = post[entry];
        if (out->sizes[d] != in->sizes[d] + before[d] + after[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the padding in");
    }
    for (int k = 0; k < in->rank; k++)
        if (out->dim_order[k] != in->dim_order[k]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output dim orders differ in");
    /* in memory order, four extents (leading ones 1) */
    for (int k = 0; k < PAD_ENTRIES; k++) {
        const int from = k - offset, d = from < 0 ? -1 : in->dim_order[from];
        p->in_sizes[k] = d < 0 ? 1 : in->sizes[d];
        p->before[k] = d < 0 ? 0 : before[d];
        p->after[k] = d < 0 ? 0 : after[d];
    }
    /* an unpadded innermost extent continues the one before it: merge them, so each copy is as
     * long as it can be (no padding at all: one copy) */
    for (int merged = 0; merged < PAD_ENTRIES - 1 && p->before[3] == 0 && p->after[3] == 0; merged++) {
        p->before[3] = p->before[2] * p->in_sizes[3];
        p->after[3] = p->after[2] * p->in_sizes[3];
        p->in_sizes[3] *= p->in_sizes[2];
        for (int k = 2; k > 0; k--) {
            p->in_sizes[k] = p->in_sizes[k - 1];
            p->before[k] = p->before[k - 1];
            p->after[k] = p->after[k - 1];
        }
        p->in_sizes[0] = 1;
        p->before[0] = p->after[0] = 0;
    }
    p->value = (int8_t)value;
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_pad_c, pad)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_pad_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(pad, bind, VARIANTS);
