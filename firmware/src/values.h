/*
 * The values and tensors of the kernel call being bound, as trt_load resolves them from
 * the program: plain data shared by the loader (runtime.c) and the operator bindings
 * (ops/). Nothing here points outside the program buffer or the arena once a load has
 * succeeded.
 */
#ifndef TINYRPS_VALUES_H
#define TINYRPS_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "tinyrps_runtime.h"   /* TRT_MAX_RANK, the dtype codes (TRT_INT8, TRT_FLOAT32, ...) */

#define TRT_ALIGN 16

typedef struct {
    uint8_t dtype;
    uint8_t rank;
    uint8_t elem_size;
    uint8_t in_arena;          /* 1: memory planned (writable); 0: constant or no data */
    int32_t sizes[TRT_MAX_RANK];
    int32_t strides[TRT_MAX_RANK];   /* in elements, from dim_order */
    uint8_t dim_order[TRT_MAX_RANK];
    uint32_t numel;
    uint32_t nbytes;
    size_t arena_offset;       /* in_arena: position in the arena */
    const uint8_t *data;       /* NULL if the tensor has no storage */
    uint8_t *mutable_data;     /* == data when in_arena */
} trt_tensor;

typedef struct {
    uint8_t kind;              /* PTE_VALUE_* */
    uint16_t index;            /* TENSOR: index in `tensors`; INT_LIST, TENSOR_LIST: first item in `list_items` */
    uint16_t count;            /* INT_LIST, TENSOR_LIST: items (a TENSOR_LIST's are indices in `tensors`) */
    union {
        int64_t i;             /* INT, BOOL (0/1) */
        double d;              /* DOUBLE */
    } u;
} trt_value;

/* One kernel call's arguments, resolved: args[i] is argument i (not value index i), its
 * tensors and int-list items in the two tables beside it. Valid while the call is bound. */
typedef struct {
    const trt_value *args;
    uint16_t n_args;
    const trt_tensor *tensors;
    const int64_t *list_items;
} trt_value_tables;

#endif
