/* The bind steps' shared checks of elementwise operands (broadcast.h). */
#include "broadcast.h"

int trt_same_shape(const trt_tensor *a, const trt_tensor *b) {
    if (a->rank != b->rank) return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->sizes[d] != b->sizes[d]) return 0;
    return 1;
}

int trt_reference_channels_last(const trt_tensor *t) {
    if (t->rank != 4) return 0;
    if (t->sizes[1] == 1 || (t->sizes[2] == 1 && t->sizes[3] == 1)) return 1;
    return t->dim_order[0] == 0 && t->dim_order[1] == 2;
}

static int channels_only(const trt_tensor *t) { return t->numel == (uint32_t)t->sizes[1]; }

int trt_is_channel_broadcast(const trt_tensor *a, const trt_tensor *b) {
    return a->rank == b->rank && trt_reference_channels_last(a) && trt_reference_channels_last(b) &&
           a->sizes[1] == b->sizes[1] && (channels_only(a) || channels_only(b));
}

/* Operand x's size along out's dim d (right-aligned; 1 where x has no such dim), and its step. */
static int32_t aligned_size(const trt_tensor *x, int rank, int d) {
    int dx = d - (rank - x->rank);
    return dx < 0 ? 1 : x->sizes[dx];
}

static int32_t aligned_step(const trt_tensor *x, int rank, int d) {
    int dx = d - (rank - x->rank);
    return dx < 0 || x->sizes[dx] == 1 ? 0 : x->strides[dx];
}

trt_status trt_bind_broadcast(const trt_call *c, const trt_tensor *a, const trt_tensor *b, const trt_tensor *out,
                              trt_broadcast *shape) {
    const int rank = out->rank;
    if (a->rank > rank || b->rank > rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "operand of higher rank than the output in");
    for (int d = 0; d < rank; d++) {
        int32_t sa = aligned_size(a, rank, d), sb = aligned_size(b, rank, d);
        if ((sa != 1 && sb != 1 && sa != sb) || out->sizes[d] != (sa == 1 ? sb : sa))
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "operand shapes do not broadcast to the output in");
    }
    /* out's dims in memory order, size-1 ones dropped, each merged into the one before it where
     * both operands continue it without a gap (out is dense in its dim order, so it always does) */
    int32_t sizes[TRT_MAX_RANK], as[TRT_MAX_RANK], bs[TRT_MAX_RANK];
    int n = 0;
    for (int k = 0; k < rank; k++) {
        int d = out->dim_order[k];
        int32_t size = out->sizes[d], sa = aligned_step(a, rank, d), sb = aligned_step(b, rank, d);
        if (size == 1) continue;
        if (n > 0 && as[n - 1] == (int64_t)sa * size && bs[n - 1] == (int64_t)sb * size) {
            sizes[n - 1] *= size;
            as[n - 1] = sa;
            bs[n - 1] = sb;
            continue;
        }
        sizes[n] = size;
        as[n] = sa;
        bs[n] = sb;
        n++;
    }
    if (n > TRT_BROADCAST_DIMS) return trt_bad_arg(c, TRT_ERR_LIMIT, "broadcast over more than 4 separate dimensions in");
    for (int k = 0; k < TRT_BROADCAST_DIMS; k++) {
        int from = k - (TRT_BROADCAST_DIMS - n);
        shape->sizes[k] = from < 0 ? 1 : sizes[from];
        shape->a_steps[k] = from < 0 ? 0 : as[from];
        shape->b_steps[k] = from < 0 ? 0 : bs[from];
    }
    return TRT_OK;
}

trt_status trt_bind_binary(const trt_call *c, uint32_t a_arg, uint32_t b_arg, uint32_t out_arg, uint8_t dtype,
                           const trt_tensor **a, const trt_tensor **b, const trt_tensor **out, trt_broadcast *shape) {
    trt_status s;
    if ((s = trt_arg_tensor(c, a_arg, a)) != TRT_OK || (s = trt_need_input(c, *a, dtype)) != TRT_OK ||
        (s = trt_arg_tensor(c, b_arg, b)) != TRT_OK || (s = trt_need_input(c, *b, dtype)) != TRT_OK ||
        (s = trt_need_output(c, out_arg, out, dtype)) != TRT_OK || (s = trt_need_disjoint(c, *out, *a)) != TRT_OK ||
        (s = trt_need_disjoint(c, *out, *b)) != TRT_OK)
        return s;
    return trt_bind_broadcast(c, *a, *b, *out, shape);
}

trt_status trt_bind_minmax(const trt_call *c, trt_minmax_params *p) {
    const trt_tensor *a = NULL, *b = NULL, *out = NULL;
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, &a)) != TRT_OK) return s;
    if (a->dtype != TRT_INT8 && a->dtype != TRT_INT32) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "neither int8 nor int32 in");
    if ((s = trt_bind_binary(c, 0, 1, 2, a->dtype, &a, &b, &out, &p->shape)) != TRT_OK) return s;
    p->a = a->data;
    p->b = b->data;
    p->output = out->mutable_data;
    p->elem_size = a->elem_size;
    return TRT_OK;
}

trt_status trt_need_quantized_operands(const trt_call *c, const trt_tensor *a, const trt_tensor *b) {
    if (!trt_same_shape(a, b) && !trt_is_channel_broadcast(a, b))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "operands neither of one shape nor broadcast along the channels in");
    return TRT_OK;
}
