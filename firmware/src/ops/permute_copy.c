/* aten::permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out): bind step and variants. The
 * lowering leaves some int8 permutes (after a squeeze-excitation gate) as this portable operator: the
 * same copy as cortex_m::transpose, on its kernel. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"
#include "permutation.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    (void)macs;
    return trt_bind_permutation(c, &params->permute_copy);
}

TRT_RUN_ALONE(trt_transpose_c, permute_copy)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_transpose_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(permute_copy, bind, VARIANTS);
