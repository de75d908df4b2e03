#include "tensor_desc.h"

#include <string.h>

#include "link_frame.h"

void tensor_desc_encode(const trt_tensor_info *t, uint8_t out[TENSOR_DESC_BYTES])
{
    memset(out, 0, TENSOR_DESC_BYTES);
    out[TENSOR_DESC_DTYPE] = (uint8_t)t->dtype;
    out[TENSOR_DESC_RANK] = (uint8_t)t->rank;
    out[TENSOR_DESC_FLAGS] = t->has_int8 ? TENSOR_DESC_HAS_INT8 : 0;
    link_put_u32(out + TENSOR_DESC_NUMEL, (uint32_t)t->numel);
    link_put_u32(out + TENSOR_DESC_NBYTES, (uint32_t)t->nbytes);
    for (int d = 0; d < t->rank && d < TRT_MAX_RANK; d++) {
        link_put_u32(out + TENSOR_DESC_SIZES + 4 * d, (uint32_t)t->sizes[d]);
        out[TENSOR_DESC_DIM_ORDER + d] = t->dim_order[d];
    }
}
