/*
 * The loaded program's values and tensors, as trt_load resolves them: plain data
 * shared by the loader (runtime.c) and the operator bindings (ops/). Nothing here
 * points outside the program buffer or the arena once a load has succeeded.
 */
#ifndef TINYRPS_VALUES_H
#define TINYRPS_VALUES_H

#include <stddef.h>
#include <stdint.h>

#define TRT_MAX_RANK 6
#define TRT_ALIGN 16

/* ExecuTorch ScalarType codes used here. */
enum { TRT_UINT8 = 0, TRT_INT8 = 1, TRT_INT16 = 2, TRT_INT32 = 3, TRT_INT64 = 4, TRT_FLOAT32 = 6,
       TRT_FLOAT64 = 7, TRT_BOOL = 11 };

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
    uint16_t index;            /* TENSOR: tensor table index; INT_LIST: first item in list_items */
    uint16_t count;            /* INT_LIST: items */
    union {
        int64_t i;             /* INT, BOOL (0/1) */
        double d;              /* DOUBLE */
    } u;
} trt_value;

/* The value tables a kernel call's arguments index into. */
typedef struct {
    const trt_value *values;
    uint16_t n_values;
    const trt_tensor *tensors;
    const int64_t *list_items;
} trt_value_tables;

#endif
