/*
 * The description of one input or output tensor, as the device link's TENSOR reply and the
 * batch file's header carry it: what a host needs to lay out the tensor's bytes (dtype,
 * shape, the order of the dimensions in memory) and whether the output has raw int8 values.
 * The host reads this layout from here (src/tinyrps/firmware/c_facts.py). Little-endian.
 */
#ifndef TINYRPS_TENSOR_DESC_H
#define TINYRPS_TENSOR_DESC_H

#include <stdint.h>

#include "tinyrps_runtime.h"

#define TENSOR_DESC_FIELDS(X)                                                                         \
    X(DTYPE, 0, u8)          /* ScalarType code (TRT_DTYPE_LIST) */                                   \
    X(RANK, 1, u8)                                                                                    \
    X(FLAGS, 2, u8)          /* TENSOR_DESC_HAS_INT8 */                                               \
    X(PAD, 3, u8)                                                                                     \
    X(NUMEL, 4, u32)                                                                                  \
    X(NBYTES, 8, u32)                                                                                 \
    X(SIZES, 12, i32x6)      /* the logical shape, rank of them, 0 after */                           \
    X(DIM_ORDER, 36, bytes6) /* logical dims from outermost to innermost in memory, rank of them */  \
    X(PAD2, 42, u16)
#define TENSOR_DESC_BYTES 44
#define TENSOR_DESC_HAS_INT8 1 /* an output with raw int8 values (trt_output_int8) */

#define TENSOR_DESC_FIELD(f, o, t) TENSOR_DESC_##f = o,
enum { TENSOR_DESC_FIELDS(TENSOR_DESC_FIELD) };
#undef TENSOR_DESC_FIELD

void tensor_desc_encode(const trt_tensor_info *t, uint8_t out[TENSOR_DESC_BYTES]);

#endif
