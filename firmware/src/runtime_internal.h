/*
 * The loaded program: static tables built by trt_load (runtime.c) and the
 * operator bindings (operators.c). Nothing here points outside the program
 * buffer or the arena once trt_load has returned TRT_OK.
 */
#ifndef TINYRPS_RUNTIME_INTERNAL_H
#define TINYRPS_RUNTIME_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "pte_reader.h"
#include "tinyrps_runtime.h"

/* Static table sizes: generous for TinyRPS-sized programs (158 values, 48 tensors, 10 calls). */
#define TRT_MAX_VALUES 256
#define TRT_MAX_TENSORS 80
#define TRT_MAX_LIST_ITEMS 160
#define TRT_MAX_OPERATORS 16
#define TRT_MAX_INSTRUCTIONS 32
#define TRT_MAX_MEMORY_IDS 4
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

typedef enum {
    TRT_OP_QUANTIZE, TRT_OP_DEQUANTIZE, TRT_OP_CONV2D, TRT_OP_DEPTHWISE_CONV2D, TRT_OP_MAX_POOL2D,
    TRT_OP_LINEAR, TRT_OP_CLONE_DIM_ORDER,
} trt_op_kind;

typedef struct {
    uint8_t op;                /* trt_op_kind */
    uint8_t operator_index;    /* into prog->operator_names */
    uint16_t output_tensor;    /* tensor table index of the output */
    int16_t input_tensor;      /* first tensor input (int8 output of a dequantize's producer) */
    uint32_t macs;             /* multiply-accumulates per run (set by binding) */
    uint32_t counted;          /* counter advance in the last profiled run (wraps past 2^32) */
    union {
        trt_quantize_params quantize;
        trt_dequantize_params dequantize;
        trt_conv_params conv;
        trt_max_pool_params pool;
        trt_linear_params linear;
        trt_copy_params copy;
    } p;
} trt_instruction;

struct trt_program {
    int loaded;
    const uint8_t *pte;
    size_t pte_len;
    uint8_t *arena;
    size_t arena_len;
    size_t arena_needed;
    size_t workspace_used;     /* bytes of the workspace (after the planned memory) handed out */
    size_t workspace_base;
    uint64_t macs;

    pte_file file;
    pte_plan plan;

    uint16_t n_values, n_tensors, n_list_items, n_instructions;
    uint8_t n_operators, n_memory_ids;
    size_t memory_base[TRT_MAX_MEMORY_IDS];
    size_t memory_size[TRT_MAX_MEMORY_IDS];

    trt_value values[TRT_MAX_VALUES];
    trt_tensor tensors[TRT_MAX_TENSORS];
    int64_t list_items[TRT_MAX_LIST_ITEMS];
    const char *operator_names[TRT_MAX_OPERATORS];   /* static strings of the supported table */
    uint8_t operator_kinds[TRT_MAX_OPERATORS];
    trt_instruction instructions[TRT_MAX_INSTRUCTIONS];

    uint16_t input_tensor, output_tensor, output_int8_tensor;

    trt_counter_fn counter;    /* per-layer profiling, NULL when off */

    char *detail;
    size_t detail_len;
};

/* Error reporting: status plus a short reason in the caller's detail buffer. */
trt_status trt_fail(trt_program *prog, trt_status status, const char *reason);
trt_status trt_fail_named(trt_program *prog, trt_status status, const char *reason, const char *name,
                          size_t name_len);

/* Operator table (operators.c). */
int trt_find_operator(const char *name, uint32_t name_len, const char *overload, uint32_t overload_len,
                      const char **canonical);
/* Validate one kernel call's arguments and fill its instruction; args are value indices. */
trt_status trt_bind_instruction(trt_program *prog, trt_instruction *ins, const int32_t *args, uint32_t n_args);
/* After a successful load: fill the instruction's workspace (weight sums). */
void trt_prepare_instruction(const trt_instruction *ins);
/* Run one bound instruction. */
void trt_execute_instruction(const trt_instruction *ins);

/* Dense in logical (row-major) order; size-1 dims may sit anywhere. */
int trt_is_row_major(const trt_tensor *t);

/* Workspace in the arena after the memory plan (operators.c asks for weight sums). */
trt_status trt_workspace(trt_program *prog, size_t bytes, void **out);

#endif
