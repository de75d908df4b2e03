/* cortex_m::transpose.out(Tensor input, int[] perm, *, Tensor(a!) out): bind step and variants.
 * What the lowering makes of an int8 permute (and of the layout permutes). */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"
#include "permutation.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    (void)macs;
    return trt_bind_permutation(c, &params->transpose);
}

TRT_RUN_ALONE(trt_transpose_c, transpose)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_transpose_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(transpose, bind, VARIANTS);
