/*
 * Bounds-checked reader for the ExecuTorch program format (.pte).
 *
 * A .pte is a FlatBuffer (schema: executorch/exir/_serialize/program.fbs,
 * file identifier "ET12") optionally followed by segments: an extended header
 * "eh00" at byte 8 gives the size of the flatbuffer part and where the segment
 * data starts. Every accessor checks offsets and lengths against the buffer it
 * reads from and returns a trt_status; none reads outside it, whatever the bytes.
 * Nothing is copied: tables, vectors and strings are positions in the buffer.
 */
#ifndef TINYRPS_PTE_READER_H
#define TINYRPS_PTE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "tinyrps_runtime.h"

/* The n bytes at `bytes` are exactly the NUL-terminated `text`. (The runtime compares names itself: it
 * needs nothing of the C library but memcpy and memset.) One function for every caller: the loader,
 * the operator table and the Ethos-U delegate compare names only while a program loads. */
int pte_text_is(const void *bytes, size_t n, const char *text);

/* ---- FlatBuffer primitives -------------------------------------------------------------- */

typedef struct {
    const uint8_t *data;
    size_t len;
} fb_buffer;

typedef struct {
    size_t pos;          /* absolute position of the table */
    size_t vtable;       /* absolute position of its vtable */
    uint16_t vtable_len; /* bytes */
    uint16_t table_len;  /* bytes of inline table data, from pos */
} fb_table;

typedef struct {
    size_t pos;          /* absolute position of element 0 */
    uint32_t count;
} fb_vector;

trt_status fb_table_at(const fb_buffer *fb, size_t pos, fb_table *out);

/* Absolute position of a scalar field of `size` bytes, or 0 when the field is absent. */
trt_status fb_field_pos(const fb_buffer *fb, const fb_table *t, unsigned field, size_t size, size_t *pos);

/* Scalar fields; an absent field yields its schema default. */
trt_status fb_u8(const fb_buffer *fb, const fb_table *t, unsigned field, uint8_t dflt, uint8_t *out);
trt_status fb_u32(const fb_buffer *fb, const fb_table *t, unsigned field, uint32_t dflt, uint32_t *out);
trt_status fb_i32(const fb_buffer *fb, const fb_table *t, unsigned field, int32_t dflt, int32_t *out);
trt_status fb_i64(const fb_buffer *fb, const fb_table *t, unsigned field, int64_t dflt, int64_t *out);
trt_status fb_u64(const fb_buffer *fb, const fb_table *t, unsigned field, uint64_t dflt, uint64_t *out);
trt_status fb_f64(const fb_buffer *fb, const fb_table *t, unsigned field, double dflt, double *out);

/* Reference fields. `present` (may be NULL when the field is required) tells whether it was set. */
trt_status fb_table_field(const fb_buffer *fb, const fb_table *t, unsigned field, fb_table *out, int *present);
trt_status fb_vector_field(const fb_buffer *fb, const fb_table *t, unsigned field, size_t elem_size,
                           fb_vector *out);                       /* absent: empty vector */
trt_status fb_string_field(const fb_buffer *fb, const fb_table *t, unsigned field,
                           const char **str, uint32_t *len);       /* absent: "" */

/* Elements of vectors (index checked against count). */
trt_status fb_vector_table(const fb_buffer *fb, const fb_vector *v, uint32_t index, fb_table *out);
int32_t fb_vector_i32(const fb_buffer *fb, const fb_vector *v, uint32_t index);
int64_t fb_vector_i64(const fb_buffer *fb, const fb_vector *v, uint32_t index);
uint64_t fb_vector_u64(const fb_buffer *fb, const fb_vector *v, uint32_t index);
uint8_t fb_vector_u8(const fb_buffer *fb, const fb_vector *v, uint32_t index);

/* ---- ExecuTorch program schema ---------------------------------------------------------- */

/* Field numbers (vtable slots) of the tables used, in program.fbs declaration order.
 * A union takes two slots: its type, then its value. */
enum { PROGRAM_EXECUTION_PLAN = 1, PROGRAM_CONSTANT_BUFFER = 2, PROGRAM_SEGMENTS = 4, PROGRAM_CONSTANT_SEGMENT = 5 };
enum { SUBSEGMENT_INDEX = 0, SUBSEGMENT_OFFSETS = 1 };
enum { SEGMENT_OFFSET = 0, SEGMENT_SIZE = 1 };
enum { BUFFER_STORAGE = 0 };
enum {
    PLAN_NAME = 0, PLAN_VALUES = 2, PLAN_INPUTS = 3, PLAN_OUTPUTS = 4, PLAN_CHAINS = 5,
    PLAN_OPERATORS = 6, PLAN_DELEGATES = 7, PLAN_MEMORY_SIZES = 8,
};
enum { EVALUE_TYPE = 0, EVALUE_VAL = 1 };
enum { SCALAR_VALUE = 0 };   /* Int.int_val, Bool.bool_val, Double.double_val, IntList.items */
enum {
    TENSOR_SCALAR_TYPE = 0, TENSOR_STORAGE_OFFSET = 1, TENSOR_SIZES = 2, TENSOR_DIM_ORDER = 3,
    TENSOR_DATA_BUFFER_IDX = 5, TENSOR_ALLOCATION_INFO = 6, TENSOR_SHAPE_DYNAMISM = 8, TENSOR_EXTRA_INFO = 9,
};
enum { ALLOC_MEMORY_ID = 0, ALLOC_OFFSET_LOW = 1, ALLOC_OFFSET_HIGH = 2 };
enum { OPERATOR_NAME = 0, OPERATOR_OVERLOAD = 1 };
enum { CHAIN_INSTRUCTIONS = 2 };   /* Chain.instructions: the schema's word for the chain's calls */
enum { DELEGATE_ID = 0 };
enum { INSTRUCTION_TYPE = 0, INSTRUCTION_ARGS = 1 };
enum { KERNEL_CALL_OP_INDEX = 0, KERNEL_CALL_ARGS = 1 };

/* EValue kinds: the KernelTypes union tags of program.fbs. */
enum {
    PTE_VALUE_NONE = 0, PTE_VALUE_NULL = 1, PTE_VALUE_INT = 2, PTE_VALUE_BOOL = 3, PTE_VALUE_DOUBLE = 4,
    PTE_VALUE_TENSOR = 5, PTE_VALUE_STRING = 6, PTE_VALUE_INT_LIST = 7, PTE_VALUE_DOUBLE_LIST = 8,
    PTE_VALUE_BOOL_LIST = 9, PTE_VALUE_TENSOR_LIST = 10, PTE_VALUE_OPTIONAL_TENSOR_LIST = 11,
};

/* Kinds of call: the InstructionArguments union tags of program.fbs. */
enum {
    PTE_KERNEL_CALL = 1, PTE_DELEGATE_CALL = 2, PTE_MOVE_CALL = 3,
    PTE_JUMP_FALSE_CALL = 4, PTE_FREE_CALL = 5,
};

typedef struct {
    fb_buffer whole;             /* the whole file */
    fb_buffer flat;              /* the flatbuffer part: [0, program_size) */
    size_t segment_base;         /* absolute offset of segment data (0 = none) */
    size_t segment_data_len;     /* bytes of segment data */
    fb_table program;
    fb_vector execution_plans;   /* of ExecutionPlan tables */
    fb_vector constant_buffers;  /* inline Buffer tables */
    fb_vector segments;          /* DataSegment tables */
    fb_vector constant_offsets;  /* constant_segment.offsets (uint64), empty if constants are inline */
    uint32_t constant_segment;   /* constant_segment.segment_index */
} pte_file;

typedef struct {
    fb_table table;
    const char *name;
    uint32_t name_len;
    fb_vector values, inputs, outputs, chains, operators, delegates, memory_sizes;
} pte_plan;

typedef struct {
    int8_t scalar_type;
    fb_vector sizes;             /* int32 */
    fb_vector dim_order;         /* uint8 */
    uint32_t data_buffer_idx;    /* > 0: constant; 0: memory planned */
    int has_allocation;
    uint32_t memory_id;
    uint64_t memory_offset;
    uint8_t shape_dynamism;
    int has_extra_info;
} pte_tensor;

typedef struct {
    uint8_t kind;                /* PTE_VALUE_* */
    int64_t int_val;
    int bool_val;
    double double_val;
    fb_vector list;              /* IntList items (int64 value indices), TensorList items (int32 value indices) */
    pte_tensor tensor;
} pte_value;

/* The extended header "eh00" at byte 8: u32 header length (24, or 32 with the segment size),
 * u64 program size (the flatbuffer part), u64 segment base offset, [u64 segment data size].
 * The one parser of it: pte_open and trt_program_extent (what a board's loader calls) use it. */
typedef struct {
    int present;
    int has_segment_size;
    uint32_t header_len;
    uint64_t program_size, segment_base, segment_size;
} pte_extended_header;

/* Parse it from the first `len` bytes; present = 0 when there is none. Checks only the header's
 * own consistency; callers check its positions against what they hold. */
trt_status pte_read_extended_header(const uint8_t *data, size_t len, pte_extended_header *h);

/* Check the header, the extended header and the Program root; locate plans, constants, segments. */
trt_status pte_open(const uint8_t *data, size_t len, pte_file *out);

trt_status pte_plan_at(const pte_file *f, uint32_t index, pte_plan *out);
trt_status pte_value_at(const pte_file *f, const pte_plan *p, uint32_t index, pte_value *out);
/* The table behind EValue `index` (an Int, a Tensor, ...) and its kind; present = 0 for Null. */
trt_status pte_value_table(const pte_file *f, const pte_plan *p, uint32_t index, uint8_t *kind, fb_table *val,
                           int *present);
trt_status pte_operator_at(const pte_file *f, const pte_plan *p, uint32_t index,
                           const char **name, uint32_t *name_len, const char **overload, uint32_t *overload_len);

/* Backend id of delegate `index` ("XnnpackBackend"), to name it in errors. */
trt_status pte_delegate_id(const pte_file *f, const pte_plan *p, uint32_t index, const char **id, uint32_t *len);

/* The calls of chain `chain` (program.fbs's Chain.instructions); then each one's kind and, for
 * kernel calls, operator and args (for delegate calls, delegate and args). */
trt_status pte_chain_calls(const pte_file *f, const pte_plan *p, uint32_t chain, fb_vector *out);
trt_status pte_call_at(const pte_file *f, const fb_vector *calls, uint32_t index,
                       uint8_t *kind, int32_t *op_index, fb_vector *args);

/* Bytes of constant buffer `index` (from the constant segment, or inline). */
trt_status pte_constant(const pte_file *f, uint32_t index, const uint8_t **data, size_t *len);

#endif
