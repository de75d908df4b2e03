/* cortex_m::minimum.out(Tensor self, Tensor other, *, Tensor(a!) out): bind step and variants.
 * int8 or int32, the same on every side; torch's broadcasting. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/mve/kernels_mve.h"
#include "broadcast.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_minmax_params *p = &params->minimum;
    const trt_tensor *a = NULL, *b = NULL, *out = NULL;
    trt_status s;
    (void)macs;
    if ((s = trt_arg_tensor(c, 0, &a)) != TRT_OK) return s;
    if (a->dtype != TRT_INT8 && a->dtype != TRT_INT32) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "neither int8 nor int32 in");
    if ((s = trt_bind_binary(c, 0, 1, 2, a->dtype, &a, &b, &out, &p->shape)) != TRT_OK) return s;
    p->a = a->data;
    p->b = b->data;
    p->output = out->mutable_data;
    p->elem_size = a->elem_size;
    return TRT_OK;
}

TRT_ACCEPTS(trt_minmax_mve_accepts, minimum)
TRT_RUN_ALONE(trt_minimum_mve, minimum)
TRT_RUN_ALONE(trt_minimum_c, minimum)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_minmax_mve_accepts_p, NULL, NULL, NULL, trt_minimum_mve_p)
    TRT_C_VARIANT(NULL, NULL, NULL, NULL, trt_minimum_c_p)
};

TRT_DEFINE_OPERATOR(minimum, bind, VARIANTS);
