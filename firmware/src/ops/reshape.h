/* What squeeze_copy and unsqueeze_copy share (ops/reshape.c): the copy of the same elements into
 * another shape, once the operator's bind step has checked the output shape. */
#ifndef TINYRPS_OPS_RESHAPE_H
#define TINYRPS_OPS_RESHAPE_H

#include "../kernels/elementwise.h"
#include "bind_args.h"

/* in (arg 0) and out (arg out_arg) of the same dtype and element count, disjoint; fills p. */
trt_status trt_bind_reshape(const trt_call *c, uint32_t out_arg, const trt_tensor **in, const trt_tensor **out,
                            trt_reshape_params *p);

#endif
