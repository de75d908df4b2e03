/*
 * The loaded program: static tables built by trt_load (runtime.c). Each kernel call
 * is bound to a row of the operator table and to one kernel variant (ops/). Values
 * and tensors are not kept: a call's arguments are resolved from the program into
 * the call_* tables while it is bound, and only what runs (the kernel parameters)
 * and what the caller reads (the inputs and outputs) stays. Nothing here points
 * outside the program buffer or the arena once trt_load has returned TRT_OK.
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

#if TRT_MAX_VALUES > 65535
#error "TRT_MAX_VALUES above 65535: value indices are stored in 16 bits"
#endif
#if TRT_MAX_KERNEL_CALLS > 32767 || TRT_MAX_OPERATORS > 255 || TRT_MAX_MEMORY_IDS > 255 || \
    TRT_MAX_INPUTS > 255 || TRT_MAX_OUTPUTS > 255 || TRT_MAX_CALL_LIST_ITEMS > 65535 || TRT_MAX_KERNEL_ARGS > 65535
#error "a TRT_MAX_* limit is above what its table's index holds"
#endif

typedef struct {
    uint32_t offset, bytes;
} trt_byte_range;
#define TRT_KEPT_RANGES 4

typedef struct {
    const trt_operator *op;            /* its row of the operator table */
    const trt_kernel_variant *kernel;  /* the variant chosen at load */
    uint16_t out_value;                /* value index of its `out` argument */
    int16_t live_until;                /* the last call reading its out (INT16_MAX: read after the run) */
    uint8_t operator_index;            /* into prog->operators */
#if TRT_LIST_OUTS
    uint16_t instruction;              /* its instruction in the chain: a call of a Tensor[] out is one per item */
#endif
    uint32_t out_offset, out_bytes;    /* the arena bytes it writes */
    uint32_t macs;                     /* multiply-accumulates per run (set by binding) */
    uint32_t counted;                  /* counter advance in the last profiled run (wraps past 2^32) */
    uint32_t scratch_offset;           /* the variant's own workspace in the arena (scratch_bytes), live
                                        * from the load on: every run reads it */
    uint32_t scratch_bytes;
    uint32_t temp_offset;              /* its working memory while it runs, in the arena (place_by_lifetime) */
    /* After the call runs, copy_bytes arena bytes are copied from copy_from to copy_to: the raw
     * int8 values of an output that a later call reuses the bytes of (0: nothing to copy). */
    uint32_t copy_from, copy_to, copy_bytes;
    trt_params p;
} trt_chain_call;

/* An input or output of the program. */
typedef struct {
    trt_tensor t;                      /* always memory planned */
    uint16_t value;                    /* value index */
    int16_t last_reader;               /* inputs: the last call reading it, -1 when none does */
    int16_t producer;                  /* outputs: the call that writes it */
    int16_t live_until;                /* inputs: the last call reading bytes of it (-1: none) */
    uint8_t has_int8;                  /* outputs: raw int8 values exist (the producer is a dequantize) */
    uint8_t int8_in_arena;             /* 1: at int8_offset in the arena; 0: int8_const (a constant) */
    uint8_t int8_copied;               /* 1: int8_offset is the producer's copy_to (a later call reuses them) */
    uint32_t int8_offset;
    const int8_t *int8_const;
} trt_io;

struct trt_program {
    int loaded;
    const uint8_t *pte;
    size_t pte_len;
    uint8_t *arena;
    size_t arena_len;
    size_t arena_needed;
    size_t workspace_base;     /* the planned memory's end; what is placed by lifetime (runtime.c,
                                * place_by_lifetime) lies in its free bytes or above it */
    size_t working_top;        /* the plan's end, or the highest end of a call's working memory above it */
    uint64_t macs;

    pte_file file;
    pte_plan plan;

    uint16_t n_values, n_calls;
    uint8_t n_operators, n_memory_ids, n_inputs, n_outputs;
    uint8_t has_copies;        /* some call copies raw int8 values after it runs */
    uint8_t n_kept;
    trt_byte_range kept[TRT_KEPT_RANGES];   /* planned bytes live always (runtime.c, keep_always) */
    size_t memory_base[TRT_MAX_MEMORY_IDS];
    size_t memory_size[TRT_MAX_MEMORY_IDS];

    const trt_operator *operators[TRT_MAX_OPERATORS];
    trt_chain_call calls[TRT_MAX_KERNEL_CALLS];
    trt_io inputs[TRT_MAX_INPUTS];
    trt_io outputs[TRT_MAX_OUTPUTS];

    /* The kernel call being bound: its arguments, their tensors and int-list items. */
    trt_value call_args[TRT_MAX_KERNEL_ARGS];
    trt_tensor call_tensors[TRT_MAX_KERNEL_ARGS];
    int64_t call_items[TRT_MAX_CALL_LIST_ITEMS];

    trt_counter_fn counter;    /* per-layer profiling, NULL when off */

    trt_detail detail;         /* the caller's buffer, during trt_load only */
};

#endif
