/* What transpose and permute_copy share (ops/permutation.c): the binding of a permuting copy. */
#ifndef TINYRPS_OPS_PERMUTATION_H
#define TINYRPS_OPS_PERMUTATION_H

#include "../kernels/kernels.h"
#include "bind_args.h"

/* (Tensor input, int[] perm, *, Tensor(a!) out): out's dim k is the input's dim perm[k]; fills p with
 * out's sizes, the input's stride along the dim each output dim walks, and out's strides. */
trt_status trt_bind_permutation(const trt_call *c, trt_copy_params *p);

#endif
