/* cortex_m::softmax.out(Tensor input, int dim, int input_zero_point, int output_zero_point,
 * int input_multiplier, int input_shift, int diff_min, *, Tensor(a!) out): bind step and variants. */
#include <math.h>   /* isfinite */

#include "../kernels/c/kernels_c.h"
#include "broadcast.h"
#include "operator_table.h"

#define SOFTMAX_INPUT_INTEGER_BITS 5
#define SOFTMAX_OUTPUT_ZERO_POINT (-128)

/* operators.softmax_impl's scale, multiplier / 2^31 * 2^shift / 2^(31 - 5): every step is exact in
 * double, so it is multiplier * 2^(shift - 57), the power of two built by exact doublings. */
static double input_scale(int32_t multiplier, int32_t shift) {
    double power = 1.0;
    for (int32_t e = shift - 31 - (31 - SOFTMAX_INPUT_INTEGER_BITS); e > 0; e--) power *= 2.0;
    for (int32_t e = shift - 31 - (31 - SOFTMAX_INPUT_INTEGER_BITS); e < 0; e++) power *= 0.5;
    return (double)multiplier * power;
}

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_softmax_params *p = &params->softmax;
    const trt_tensor *in = NULL, *out = NULL;
    int32_t dim = 0, out_zp = 0, multiplier = 0, shift = 0, diff_min = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &in)) != TRT_OK || (s = trt_need_input(c, in, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_int(c, 1, -(int64_t)in->rank, (int64_t)in->rank - 1, &dim)) != TRT_OK ||
        (s = trt_arg_int(c, 2, -TRT_MAX_ZERO_POINT, TRT_MAX_ZERO_POINT, &p->input_zero_point)) != TRT_OK ||
        (s = trt_arg_int(c, 3, SOFTMAX_OUTPUT_ZERO_POINT, SOFTMAX_OUTPUT_ZERO_POINT, &out_zp)) != TRT_OK ||
        (s = trt_arg_int(c, 4, 1, INT32_MAX, &multiplier)) != TRT_OK ||
        (s = trt_arg_int(c, 5, -100, 100, &shift)) != TRT_OK ||
        (s = trt_arg_int(c, 6, INT32_MIN, INT32_MAX, &diff_min)) != TRT_OK ||   /* the reference ignores it */
        (s = trt_need_output(c, 7, &out, TRT_INT8)) != TRT_OK || (s = trt_need_disjoint(c, out, in)) != TRT_OK)
        return s;
    if (in->rank < 1) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "0-dim input in");
    if (!trt_same_layout(in, out)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "input and output layouts differ in");
    const double scale = input_scale(multiplier, shift);
    if (!isfinite((float)scale)) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "input scale out of float range in");
    if (dim < 0) dim += in->rank;
    /* the dimension's place in memory order splits the tensor into outer x length x inner */
    p->outer = 1;
    p->inner = 1;
    int seen = 0;
    for (int k = 0; k < in->rank; k++) {
        int d = in->dim_order[k];
        if (d == dim) seen = 1;
        else if (seen) p->inner *= in->sizes[d];
        else p->outer *= in->sizes[d];
    }
    p->length = in->sizes[dim];
    p->input_scale = (float)scale;
    p->output_zero_point = (float)SOFTMAX_OUTPUT_ZERO_POINT;
    p->input = (const int8_t *)(const void *)in->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    return TRT_OK;
}

TRT_RUN_ALONE(trt_softmax_c, softmax)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_softmax_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(softmax, bind, VARIANTS);
