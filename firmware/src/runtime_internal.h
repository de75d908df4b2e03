/*
 * The loaded program: static tables built by trt_load (runtime.c). Each kernel call
 * is bound to a row of the operator table and to one kernel variant (ops/).
 * Nothing here points outside the program buffer or the arena once trt_load has
 * returned TRT_OK.
 */
#ifndef TINYRPS_RUNTIME_INTERNAL_H
#define TINYRPS_RUNTIME_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "load_detail.h"
#include "ops/operator_table.h"
#include "pte_reader.h"
#include "tinyrps_runtime.h"
#include "values.h"

/* Static table sizes: generous for TinyRPS-sized programs (158 values, 48 tensors, 10 calls). */
#define TRT_MAX_VALUES 256
#define TRT_MAX_TENSORS 80
#define TRT_MAX_LIST_ITEMS 160
#define TRT_MAX_OPERATORS 16
#define TRT_MAX_INSTRUCTIONS 32
#define TRT_MAX_MEMORY_IDS 4

typedef struct {
    const trt_operator *op;            /* its row of the operator table */
    const trt_kernel_variant *kernel;  /* the variant chosen at load */
    uint8_t operator_index;            /* into prog->operators */
    uint16_t output_tensor;            /* tensor table index of the output */
    int16_t input_tensor;              /* first tensor input (int8 output of a dequantize's producer) */
    uint32_t macs;                     /* multiply-accumulates per run (set by binding) */
    uint32_t counted;                  /* counter advance in the last profiled run (wraps past 2^32) */
    size_t scratch_offset;             /* the variant's own workspace in the arena (scratch_bytes) */
    size_t scratch_bytes;
    trt_params p;
} trt_instruction;

struct trt_program {
    int loaded;
    const uint8_t *pte;
    size_t pte_len;
    uint8_t *arena;
    size_t arena_len;
    size_t arena_needed;
    size_t workspace_base;     /* after the planned memory: the variants' workspace, then temp */
    size_t workspace_used;
    size_t temp_bytes;         /* working memory shared by all kernel calls while they run */
    uint8_t *temp;
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
    const trt_operator *operators[TRT_MAX_OPERATORS];
    trt_instruction instructions[TRT_MAX_INSTRUCTIONS];

    uint16_t input_tensor, output_tensor, output_int8_tensor;

    trt_counter_fn counter;    /* per-layer profiling, NULL when off */

    trt_detail detail;         /* the caller's buffer, during trt_load only */
};

#endif
