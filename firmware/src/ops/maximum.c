/* cortex_m::maximum.out(Tensor self, Tensor other, *, Tensor(a!) out): bind step and variants.
 * int8 or int32, the same on every side; torch's broadcasting. */
#include "../kernels/c/kernels_c.h"
#include "../kernels/mve/kernels_mve.h"
#include "broadcast.h"
#include "operator_table.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    (void)macs;
    return trt_bind_minmax(c, &params->maximum);
}

TRT_ACCEPTS(trt_minmax_mve_accepts, maximum)
TRT_RUN_ALONE(trt_maximum_mve, maximum)
TRT_RUN_ALONE(trt_maximum_c, maximum)

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(trt_maximum_mve, trt_minmax_mve_accepts_p, NULL, NULL, NULL)
    TRT_C_VARIANT(trt_maximum_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(maximum, bind, VARIANTS);
