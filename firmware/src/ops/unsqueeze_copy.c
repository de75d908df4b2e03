/* aten::unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out): bind step and variants. A
 * dim of size 1 inserted before dim (dim in [-rank - 1, rank]). */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"
#include "reshape.h"

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_reshape_params *p = &params->unsqueeze_copy;
    const trt_tensor *in = NULL, *out = NULL;
    int32_t dim = 0;
    trt_status s;
    (void)macs;
    if ((s = trt_bind_reshape(c, 2, &in, &out, p)) != TRT_OK ||
        (s = trt_arg_int(c, 1, -(int64_t)in->rank - 1, in->rank, &dim)) != TRT_OK)
        return s;
    if (dim < 0) dim += in->rank + 1;
    if (out->rank != in->rank + 1 || out->sizes[dim] != 1)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the dim in");
    for (int d = 0; d < in->rank; d++)
        if (out->sizes[d < dim ? d : d + 1] != in->sizes[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not follow from the dim in");
    return TRT_OK;
}

TRT_RUN_ALONE(trt_reshape_copy_c, unsqueeze_copy)

static const trt_kernel_variant VARIANTS[] = {
    TRT_C_VARIANT(trt_reshape_copy_c, NULL, NULL, NULL, NULL)
};

TRT_DEFINE_OPERATOR(unsqueeze_copy, bind, VARIANTS);
