/* The reshaping copies' shared binding (reshape.h). */
#include "reshape.h"

static void copy_shape(const trt_tensor *t, int32_t *rank, int32_t *sizes, int32_t *strides) {
    *rank = t->rank;
    for (int d = 0; d < t->rank; d++) {
        sizes[d] = t->sizes[d];
        strides[d] = t->strides[d];
    }
}

trt_status trt_bind_reshape(const trt_call *c, uint32_t out_arg, const trt_tensor **in, const trt_tensor **out,
                            trt_reshape_params *p) {
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, in)) != TRT_OK || (s = trt_need_input(c, *in, (*in)->dtype)) != TRT_OK ||
        (s = trt_need_output(c, out_arg, out, (*in)->dtype)) != TRT_OK || (s = trt_need_disjoint(c, *out, *in)) != TRT_OK)
        return s;
    if ((*in)->numel != (*out)->numel) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "element counts differ in");
    p->input = (*in)->data;
    p->output = (*out)->mutable_data;
    p->count = (*out)->numel;
    p->elem_size = (*in)->elem_size;
    p->dense = trt_is_row_major(*in) && trt_is_row_major(*out);
    copy_shape(*in, &p->in_rank, p->in_sizes, p->in_strides);
    copy_shape(*out, &p->out_rank, p->out_sizes, p->out_strides);
    return TRT_OK;
}
