/*
 * Loading and running a program (API in tinyrps_runtime.h).
 *
 * trt_load walks the program once, in this order: header and root (pte_reader),
 * the "forward" execution plan, its memory plan, the operator table, the inputs and
 * outputs, the one chain of kernel calls (each kernel call's arguments resolved from the
 * program, validated by its operator's bind step and bound to one kernel variant,
 * ops/operator_table.h), then what the memory plan must guarantee about the inputs and
 * outputs (check_io_lifetimes). Only when all of it is consistent and fits the arena is
 * the program marked loaded (and the variants' workspace prepared); trt_run then just
 * runs the bound kernels in order.
 */
#include <string.h>

#include "runtime_internal.h"
#include "load_code.h"
#include "kernels/float_round.h"

/* TRT_ETHOS_U=1: the build links ethos_u_delegate.c and runs Ethos-U delegates (the firmware and
 * native builds: firmware/CMakeLists.txt). Without it (a deploy library of a Cortex-M program) the
 * hooks below compile to nothing and a delegate is refused as any other. */
#if TRT_ETHOS_U
#include "ethos_u_delegate.h"
#define RUN_STATUS(prog) ((prog)->plan.delegates.count ? trt_ethos_u_status(prog) : TRT_OK)
#else
#define RUN_STATUS(prog) TRT_OK
#undef TRT_ETHOS_U
#define TRT_ETHOS_U 0
#endif

/* TRT_CALL_LISTS=0: no call of the build's program has an int[] or Tensor[] argument (a deploy library
 * of such a program: src/NAME_build.h). A call with one is refused, and the code that resolves them is
 * left out. */
#ifndef TRT_CALL_LISTS
#define TRT_CALL_LISTS 1
#endif

/* TRT_INT8_COPIES=0: no call of the build's program comes after the one writing an output, so none
 * writes over an output's raw int8 values (keep_raw_int8). A program whose would be is refused, and
 * the code that copies them aside is left out. TRT_FUSIONS=0: no operator of the build has fuse_next;
 * the pass that fuses calls is left out. (A deploy library of such a program: src/NAME_build.h.) */
#ifndef TRT_INT8_COPIES
#define TRT_INT8_COPIES 1
#endif
#ifndef TRT_FUSIONS
#define TRT_FUSIONS 1
#endif

#define MAX_PLANNED_BYTES ((size_t)1 << 30)

/* TRT_PROGRAM_STORAGE_BYTES must hold the tables (a negative array size fails the build: C99). */
typedef char trt_program_storage_bytes_too_small[sizeof(struct trt_program) <= TRT_PROGRAM_STORAGE_BYTES ? 1 : -1];

/* ---- small helpers ------------------------------------------------------------------------------ */

static size_t align_up(size_t n) { return (n + (TRT_ALIGN - 1)) & ~(size_t)(TRT_ALIGN - 1); }

/* Tables, not switches and string literals: a table is an object of its own, which a build that never
 * asks for the names (a deploy library) does not link, where the literals of a file share one section. */
static int dtype_size(int dtype) {
#define TRT_DTYPE_SIZE(name, code, text, bytes) [code] = bytes,
    static const uint8_t SIZES[] = {TRT_DTYPE_LIST(TRT_DTYPE_SIZE)};
#undef TRT_DTYPE_SIZE
    return dtype >= 0 && dtype < (int)sizeof SIZES ? SIZES[dtype] : 0;
}

const char *trt_dtype_name(int dtype) {
#define TRT_DTYPE_TEXT(name, code, text, bytes) {code, text},
    static const struct { int code; char text[8]; } NAMES[] = {TRT_DTYPE_LIST(TRT_DTYPE_TEXT)};
#undef TRT_DTYPE_TEXT
    for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
        if (NAMES[i].code == dtype) return NAMES[i].text;
    return NULL;
}

static int ranges_overlap(size_t a, size_t a_len, size_t b, size_t b_len) {
    return a_len > 0 && b_len > 0 && a < b + b_len && b < a + a_len;
}

/* ---- public helpers --------------------------------------------------------------------------------- */

trt_program *trt_program_init(trt_program_storage *storage) {
    if (!storage) return NULL;
    memset(storage, 0, sizeof *storage);
    return (trt_program *)(void *)storage;
}

size_t trt_program_size(void) { return sizeof(struct trt_program); }

uint32_t trt_limit(int i, const char **name) {
#define TRT_LIMIT_NAME(limit) #limit "\0"
#define TRT_LIMIT_VALUE(limit) limit,
    static const char NAMES[] = TRT_LIMIT_LIST(TRT_LIMIT_NAME);   /* one after the other */
    static const uint32_t VALUES[] = {TRT_LIMIT_LIST(TRT_LIMIT_VALUE)};
#undef TRT_LIMIT_NAME
#undef TRT_LIMIT_VALUE
    if (i < 0 || i >= TRT_LIMIT_COUNT) {
        if (name) *name = NULL;
        return 0;
    }
    if (name) {
        const char *at = NAMES;
        for (int k = 0; k < i; k++)
            while (*at++) continue;
        *name = at;
    }
    return VALUES[i];
}

size_t trt_arena_needed(const trt_program *prog) { return prog ? prog->arena_needed : 0; }

void trt_arena_layout(const trt_program *prog, trt_arena_parts *parts) {
    if (!parts) return;
    memset(parts, 0, sizeof *parts);
    if (!prog || !prog->loaded) return;
    parts->planned = prog->workspace_base;
    parts->working = prog->working_top - prog->workspace_base;   /* place_by_lifetime */
    parts->workspace = prog->arena_needed - prog->working_top;
}

uint64_t trt_macs(const trt_program *prog) { return prog && prog->loaded ? prog->macs : 0; }

int trt_call_count(const trt_program *prog) { return prog && prog->loaded ? prog->n_calls : 0; }

const char *trt_call_name(const trt_program *prog, int i) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_calls) return NULL;
    return prog->calls[i].op->name;
}

const char *trt_call_variant(const trt_program *prog, int i) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_calls) return NULL;
    return prog->calls[i].kernel->isa;
}

int trt_call_variant_index(const trt_program *prog, int i) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_calls) return -1;
    return (int)(prog->calls[i].kernel - prog->calls[i].op->variants);
}

const char *trt_status_name(trt_status s) {
#define TRT_STATUS_TEXT(name, value, text) case name: return text;
    switch (s) { TRT_STATUS_LIST(TRT_STATUS_TEXT) }
#undef TRT_STATUS_TEXT
    return "unknown status";
}

TRT_LOAD_CODE_BEGIN

/* ---- memory plan ---------------------------------------------------------------------------------- */

/* Each planned buffer (memory id) gets its own 16-byte aligned region of the arena, in id order;
 * the kernels' workspace and working memory go where no value is live (place_by_lifetime). */
static trt_status load_memory_plan(trt_program *prog) {
    const fb_vector *sizes = &prog->plan.memory_sizes;
    if (sizes->count > TRT_MAX_MEMORY_IDS)
        return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, "memory ids above TRT_MAX_MEMORY_IDS:", sizes->count);
    size_t base = 0;
    for (uint32_t id = 0; id < sizes->count; id++) {
        int64_t size = fb_vector_i64(&prog->file.flat, sizes, id);
        if (size < 0 || (uint64_t)size > MAX_PLANNED_BYTES || base > MAX_PLANNED_BYTES)
            return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "bad memory plan size");
        prog->memory_base[id] = base;
        prog->memory_size[id] = (size_t)size;
        base += align_up((size_t)size);
    }
    prog->n_memory_ids = (uint8_t)sizes->count;
    prog->workspace_base = base;
    return TRT_OK;
}

/* ---- resolving values ------------------------------------------------------------------------------- */

static trt_status tensor_shape(trt_program *prog, const pte_tensor *src, trt_tensor *t) {
    const fb_buffer *fb = &prog->file.flat;
    if (src->sizes.count > TRT_MAX_RANK) return trt_fail(&prog->detail, TRT_ERR_LIMIT, "tensor rank above 6");
    if (src->dim_order.count != src->sizes.count) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "dim_order length differs from rank");
    if (src->shape_dynamism != 0) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "dynamic tensor shapes are not supported");
    t->dtype = (uint8_t)src->scalar_type;
    t->elem_size = (uint8_t)dtype_size(src->scalar_type);
    if (t->elem_size == 0) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "unsupported tensor dtype");
    t->rank = (uint8_t)src->sizes.count;
    uint8_t seen = 0;
    uint64_t numel = 1, extent = 1;   /* extent ignores zero sizes, so it bounds every stride */
    for (int d = 0; d < t->rank; d++) {
        int32_t size = fb_vector_i32(fb, &src->sizes, (uint32_t)d);
        uint8_t dim = fb_vector_u8(fb, &src->dim_order, (uint32_t)d);
        if (size < 0 || dim >= t->rank || (seen & (1u << dim))) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "bad tensor sizes or dim_order");
        seen |= (uint8_t)(1u << dim);
        t->sizes[d] = size;
        t->dim_order[d] = dim;
        numel *= (uint64_t)size;
        extent *= size > 0 ? (uint64_t)size : 1;
        if (extent * t->elem_size > MAX_PLANNED_BYTES) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "tensor too large");
    }
    t->numel = (uint32_t)numel;
    t->nbytes = (uint32_t)(numel * t->elem_size);
    int32_t stride = 1;   /* innermost dim of the dim_order has stride 1 */
    for (int k = t->rank - 1; k >= 0; k--) {
        t->strides[t->dim_order[k]] = stride;
        stride *= t->sizes[t->dim_order[k]];
    }
    return TRT_OK;
}

static trt_status tensor_storage(trt_program *prog, const pte_tensor *src, trt_tensor *t) {
    if (src->data_buffer_idx > 0) {
        const uint8_t *data;
        size_t len;
        if (src->has_allocation) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "tensor both constant and planned");
        trt_status s = pte_constant(&prog->file, src->data_buffer_idx, &data, &len);
        if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad constant buffer");
        if (len < t->nbytes) return trt_fail(&prog->detail, TRT_ERR_TRUNCATED, "constant buffer shorter than its tensor");
        if ((size_t)(data - prog->pte) % t->elem_size != 0) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "misaligned constant");
        t->data = data;
        return TRT_OK;
    }
    if (!src->has_allocation) return TRT_OK;   /* no storage: rejected if a kernel uses it */
    if (src->memory_id >= prog->n_memory_ids) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "tensor in an unknown memory id");
    size_t size = prog->memory_size[src->memory_id];
    if (src->memory_offset > size || t->nbytes > size - src->memory_offset)
        return trt_fail(&prog->detail, TRT_ERR_ARENA_TOO_SMALL, "tensor outside its planned memory");
    t->in_arena = 1;
    t->arena_offset = prog->memory_base[src->memory_id] + (size_t)src->memory_offset;
    if (t->arena_offset % t->elem_size != 0) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "misaligned planned tensor");
    if (prog->arena && prog->workspace_base <= prog->arena_len) {
        t->mutable_data = prog->arena + t->arena_offset;
        t->data = t->mutable_data;
    }
    return TRT_OK;
}

static trt_status resolve_tensor(trt_program *prog, const pte_tensor *src, trt_tensor *t) {
    trt_status s;
    memset(t, 0, sizeof *t);
    if ((s = tensor_shape(prog, src, t)) != TRT_OK) return s;
    return tensor_storage(prog, src, t);
}

static trt_status read_value(trt_program *prog, int64_t index, pte_value *v) {
    if (index < 0 || index >= prog->n_values) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "value index out of range");
    trt_status s = pte_value_at(&prog->file, &prog->plan, (uint32_t)index, v);
    return s == TRT_OK ? TRT_OK : trt_fail(&prog->detail, s, "bad value");
}

/* IntList items are indices of Int values: the ints themselves go into call_items. */
static trt_status resolve_int_list(trt_program *prog, const fb_vector *list, trt_value *dst, uint16_t *n_items) {
    if (list->count > (uint32_t)(TRT_MAX_CALL_LIST_ITEMS - *n_items))
        return trt_fail(&prog->detail, TRT_ERR_LIMIT, "int[] items of one kernel call above TRT_MAX_CALL_LIST_ITEMS");
    dst->index = *n_items;
    dst->count = (uint16_t)list->count;
    for (uint32_t k = 0; k < list->count; k++) {
        pte_value item;
        trt_status s = read_value(prog, fb_vector_i64(&prog->file.flat, list, k), &item);
        if (s != TRT_OK) return s;
        if (item.kind != PTE_VALUE_INT) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "int[] item is not an int value");
        prog->call_items[(*n_items)++] = item.int_val;
    }
    return TRT_OK;
}

/* TensorList items are indices of Tensor values: each tensor goes into a slot of call_tensors after
 * the call's own arguments (from *next_slot on), and its slot into call_items. */
static trt_status resolve_tensor_list(trt_program *prog, const fb_vector *list, trt_value *dst, uint16_t *n_items,
                                      uint16_t *next_slot) {
    if (list->count > (uint32_t)(TRT_MAX_CALL_LIST_ITEMS - *n_items) || list->count > (uint32_t)(TRT_MAX_KERNEL_ARGS - *next_slot))
        return trt_fail(&prog->detail, TRT_ERR_LIMIT, "Tensor[] items of one kernel call above TRT_MAX_KERNEL_ARGS");
    dst->index = *n_items;
    dst->count = (uint16_t)list->count;
    for (uint32_t k = 0; k < list->count; k++) {
        pte_value item;
        trt_status s = read_value(prog, fb_vector_i32(&prog->file.flat, list, k), &item);
        if (s != TRT_OK) return s;
        if (item.kind != PTE_VALUE_TENSOR) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Tensor[] item is not a tensor");
        if ((s = resolve_tensor(prog, &item.tensor, &prog->call_tensors[*next_slot])) != TRT_OK) return s;
        prog->call_items[(*n_items)++] = (*next_slot)++;
    }
    return TRT_OK;
}

#if TRT_OPTIONAL_LISTS
/* A Tensor?[]'s items (value indices, like a Tensor[]'s) resolved like a Tensor[]'s, a None one (a
 * negative index or a Null value) as -1 in call_items. */
static trt_status resolve_optional_list(trt_program *prog, int32_t index, trt_value *dst, uint16_t *n_items,
                                        uint16_t *next_slot) {
    uint8_t kind;
    fb_table val;
    fb_vector list;
    int present;
    trt_status s = pte_value_table(&prog->file, &prog->plan, (uint32_t)index, &kind, &val, &present);
    if (s == TRT_OK && present) s = fb_vector_field(&prog->file.flat, &val, SCALAR_VALUE, 4, &list);
    if (s != TRT_OK || !present) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "bad Tensor?[] value");
    if (list.count > (uint32_t)(TRT_MAX_CALL_LIST_ITEMS - *n_items) || list.count > (uint32_t)(TRT_MAX_KERNEL_ARGS - *next_slot))
        return trt_fail(&prog->detail, TRT_ERR_LIMIT, "Tensor?[] items of one kernel call above TRT_MAX_KERNEL_ARGS");
    dst->index = *n_items;
    dst->count = (uint16_t)list.count;
    for (uint32_t k = 0; k < list.count; k++) {
        const int32_t at = fb_vector_i32(&prog->file.flat, &list, k);
        pte_value item;
        item.kind = PTE_VALUE_NULL;
        if (at >= 0 && (s = read_value(prog, at, &item)) != TRT_OK) return s;
        if (at < 0 || item.kind == PTE_VALUE_NULL) {
            prog->call_items[(*n_items)++] = -1;
            continue;
        }
        if (item.kind != PTE_VALUE_TENSOR) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Tensor?[] item is not a tensor");
        if ((s = resolve_tensor(prog, &item.tensor, &prog->call_tensors[*next_slot])) != TRT_OK) return s;
        prog->call_items[(*n_items)++] = (*next_slot)++;
    }
    return TRT_OK;
}
#endif

/* Argument `slot` of the call being bound: value `index` of the plan, resolved. */
static trt_status resolve_argument(trt_program *prog, int32_t index, uint16_t slot, uint16_t *n_items,
                                   uint16_t *next_slot) {
    pte_value v;
    trt_value *dst = &prog->call_args[slot];
    memset(dst, 0, sizeof *dst);
    trt_status s = read_value(prog, index, &v);
    if (s != TRT_OK) return s;
    dst->kind = v.kind;
    switch (v.kind) {
    case PTE_VALUE_INT: dst->u.i = v.int_val; return TRT_OK;
    case PTE_VALUE_BOOL: dst->u.i = v.bool_val; return TRT_OK;
    case PTE_VALUE_DOUBLE: dst->u.d = v.double_val; return TRT_OK;
    case PTE_VALUE_INT_LIST:
        if (!TRT_CALL_LISTS) break;
        return resolve_int_list(prog, &v.list, dst, n_items);
    case PTE_VALUE_TENSOR_LIST:
        if (!TRT_CALL_LISTS) break;
        return resolve_tensor_list(prog, &v.list, dst, n_items, next_slot);
#if TRT_OPTIONAL_LISTS
    case PTE_VALUE_OPTIONAL_TENSOR_LIST: return resolve_optional_list(prog, index, dst, n_items, next_slot);
#endif
    case PTE_VALUE_TENSOR:
        dst->index = slot;
        return resolve_tensor(prog, &v.tensor, &prog->call_tensors[slot]);
    default:
        return TRT_OK;   /* null, strings, other lists: a kernel taking one fails its binding */
    }
    return trt_fail(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "an int[] or Tensor[] argument (TRT_CALL_LISTS=0)");
}

/* ---- operators and kernel calls ------------------------------------------------------------------------ */

/* "unsupported operator aten::convolution.out" */
static trt_status unsupported_operator(trt_program *prog, const char *name, uint32_t name_len, const char *overload,
                                       uint32_t overload_len) {
    char full[96];
    size_t used = 0;
    for (uint32_t k = 0; k < name_len && used + 1 < sizeof full; k++) full[used++] = name[k];
    if (used + 1 < sizeof full) full[used++] = '.';
    for (uint32_t k = 0; k < overload_len && used + 1 < sizeof full; k++) full[used++] = overload[k];
    return trt_fail_named(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "unsupported operator", full, used);
}

static trt_status load_operators(trt_program *prog) {
    uint32_t n = prog->plan.operators.count;
    if (n > TRT_MAX_OPERATORS) return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, "operators above TRT_MAX_OPERATORS:", n);
    for (uint32_t i = 0; i < n; i++) {
        const char *name, *overload;
        uint32_t name_len, overload_len;
        trt_status s = pte_operator_at(&prog->file, &prog->plan, i, &name, &name_len, &overload, &overload_len);
        if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad operator entry");
        const trt_operator *op = trt_find_operator(name, name_len, overload, overload_len);
#if TRT_ETHOS_U
        if (!op && prog->plan.delegates.count) op = trt_ethos_u_cpu_operator(name, name_len, overload, overload_len);
#endif
        if (!op) return unsupported_operator(prog, name, name_len, overload, overload_len);
        prog->operators[i] = op;
    }
    prog->n_operators = (uint8_t)n;
    return TRT_OK;
}

#if TRT_ETHOS_U
/* Every delegate must be one this build runs: Ethos-U. */
static trt_status reject_delegates(trt_program *prog) {
    for (uint32_t i = 0; i < prog->plan.delegates.count; i++) {
        const char *id = "";
        uint32_t len = 0;
        pte_delegate_id(&prog->file, &prog->plan, i, &id, &len);
        if (!trt_ethos_u_backend(id, len))
            return trt_fail_named(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "unsupported backend delegate", id, len);
    }
    return TRT_OK;
}
#else
static trt_status reject_delegates(trt_program *prog) {
    if (prog->plan.delegates.count == 0) return TRT_OK;
    const char *id = "";
    uint32_t len = 0;
    pte_delegate_id(&prog->file, &prog->plan, 0, &id, &len);
    return trt_fail_named(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "unsupported backend delegate", id, len);
}
#endif

/* The tensor is the input itself, or a view of it: the same elements at the same place (a tensor of
 * another dtype that happens to start there and span as many bytes is a reuse of the bytes). */
static int same_place(const trt_tensor *a, const trt_tensor *b) {
    return a->in_arena && b->in_arena && a->arena_offset == b->arena_offset && a->nbytes == b->nbytes &&
           a->dtype == b->dtype;
}

/*
 * Liveness of the planned memory, for placing each call's working memory. Every call writes one
 * planned tensor, its out; what it reads of the plan is the out of earlier calls or a program
 * input. So a call's out holds a value from that call to the last call that reads bytes of it
 * (live_until), an input from the start to its last reader, and program outputs and raw int8
 * values read after the run to the end. Bytes a call reads that no earlier call wrote and no
 * input holds may be a value kept from run to run (or a scratch buffer planned for another
 * runtime's kernels): they are live always (prog->kept; past its last entry, that entry grows to
 * cover them too, which only errs on the safe side).
 */
#define LIVE_TO_END INT16_MAX

/* The values the plan may hold, by index: the inputs, then each call's out, then the kept ranges. */
typedef struct {
    size_t offset, bytes;
    int16_t *until;   /* the last call that reads it; NULL: kept, live always */
} held_value;

static held_value held(trt_program *prog, int i) {
    if (i < prog->n_inputs) return (held_value){prog->inputs[i].t.arena_offset, prog->inputs[i].t.nbytes, &prog->inputs[i].live_until};
    i -= prog->n_inputs;
    if (i < prog->n_calls) return (held_value){prog->calls[i].out_offset, prog->calls[i].out_bytes, &prog->calls[i].live_until};
    i -= prog->n_calls;
    return (held_value){prog->kept[i].offset, prog->kept[i].bytes, NULL};
}

static int held_count(const trt_program *prog) { return prog->n_inputs + prog->n_calls + prog->n_kept; }

/* Call k (LIVE_TO_END: after the run) reads the planned bytes [offset, offset + bytes): they hold
 * what the last calls before it to write them wrote (back to one whose out covers them all), or
 * an input's values; anything else is kept always (past the table's end, its last entry grows
 * to cover it too). Returns the held value that covers them all (an input's index, below
 * n_inputs), or -1. */
static int note_planned_read(trt_program *prog, int16_t k, size_t offset, size_t bytes) {
    for (int i = prog->n_inputs + (k < (int16_t)prog->n_calls ? k : prog->n_calls) - 1; i >= 0; i--) {
        const held_value h = held(prog, i);
        if (!ranges_overlap(h.offset, h.bytes, offset, bytes)) continue;
        *h.until = k;
        if (h.offset <= offset && offset + bytes <= h.offset + h.bytes) return i;
    }
    if (bytes == 0) return -1;
    trt_byte_range *kept = &prog->kept[prog->n_kept < TRT_KEPT_RANGES ? prog->n_kept++ : TRT_KEPT_RANGES - 1];
    const size_t end = kept->bytes && kept->offset + kept->bytes > offset + bytes ? kept->offset + kept->bytes : offset + bytes;
    if (!kept->bytes || offset < kept->offset) kept->offset = (uint32_t)offset;
    kept->bytes = (uint32_t)(end - kept->offset);
    return -1;
}

/* Call k reads every planned tensor among its arguments but its `out` (a Tensor[]'s too): note the
 * inputs it reads, and the values it needs (liveness, above). A tensor at an input's place is a view
 * of the input only while the input still holds those bytes: once a call has written them (the
 * memory plan reuses an input's bytes after its last reader), it is that call's new tensor. */
static void note_input_read(trt_program *prog, int16_t k, int32_t value, const trt_tensor *t) {
    const int holder = t->in_arena ? note_planned_read(prog, k, t->arena_offset, t->nbytes) : -1;
    for (uint8_t m = 0; m < prog->n_inputs; m++) {
        trt_io *in = &prog->inputs[m];
        if (value == in->value || (holder == m && same_place(t, &in->t))) in->last_reader = k;
    }
}

static void note_input_reads(trt_program *prog, int16_t k, const int32_t *args, uint32_t n_args, uint32_t unread) {
    for (uint32_t a = 0; a + 2 < n_args; a++) {
        const trt_value *v = &prog->call_args[a];
        if (a < 32 && (unread >> a & 1)) continue;   /* a scratch tensor: never read (trt_arg_scratch) */
        if (v->kind == PTE_VALUE_TENSOR) note_input_read(prog, k, args[a], &prog->call_tensors[v->index]);
#if TRT_OPTIONAL_LISTS
        if (v->kind == PTE_VALUE_OPTIONAL_TENSOR_LIST)
            for (uint16_t i = 0; i < v->count; i++)   /* a None item reads nothing */
                if (prog->call_items[v->index + i] >= 0)
                    note_input_read(prog, k, -1, &prog->call_tensors[prog->call_items[v->index + i]]);
#endif
        if (!TRT_CALL_LISTS || v->kind != PTE_VALUE_TENSOR_LIST) continue;   /* refused without lists */
        for (uint16_t i = 0; i < v->count; i++)   /* no value index of its own: compared by place */
            note_input_read(prog, k, -1, &prog->call_tensors[prog->call_items[v->index + i]]);
    }
}

#if TRT_LIST_OUTS
/* A call whose out is a Tensor[], bound for one item (its bind step checked the list and the item): the
 * item is this binding's out, as a tensor out is a call's (its value, its planned bytes), and it reads
 * what the call reads. Its kernel writes that item only: no variant of such an operator has workspace. */
static trt_status bind_list_item(trt_program *prog, trt_chain_call *kc, int16_t k, const int32_t *args,
                                 uint32_t n_args, uint16_t item, uint32_t unread) {
    const trt_value *list = &prog->call_args[n_args - 2];
    pte_value v, returned;
    trt_status s;
    const trt_tensor *out = &prog->call_tensors[prog->call_items[list->index + item]];
    if ((s = read_value(prog, args[n_args - 2], &v)) != TRT_OK || (s = read_value(prog, args[n_args - 1], &returned)) != TRT_OK)
        return s;
    /* the call returns the out items (a list of its own, of the same values) */
    if (item >= list->count || returned.kind != PTE_VALUE_TENSOR_LIST || returned.list.count != v.list.count ||
        fb_vector_i32(&prog->file.flat, &returned.list, item) != fb_vector_i32(&prog->file.flat, &v.list, item))
        return trt_fail_text(&prog->detail, TRT_ERR_MALFORMED, "the out Tensor[] is not the call's return in",
                             kc->op->name);
    if (!out->in_arena)
        return trt_fail_text(&prog->detail, TRT_ERR_MALFORMED, "an out item is not a planned tensor in", kc->op->name);
    kc->out_value = (uint16_t)fb_vector_i32(&prog->file.flat, &v.list, item);
    kc->out_offset = (uint32_t)out->arena_offset;
    kc->out_bytes = out->nbytes;
    note_input_reads(prog, k, args, n_args, unread);
    kc->live_until = k;
    kc->scratch_bytes = 0;
    kc->kernel = trt_choose_variant(kc->op, &kc->p);
    if (!kc->kernel || kc->kernel->scratch_bytes)
        return trt_fail_text(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "no kernel variant of this build takes the call of",
                             kc->op->name);
    return TRT_OK;
}
#endif

/* Validate the call (its operator's bind step), choose its kernel variant once, ask the size of the
 * variant's workspace and note the planned bytes it touches (its workspace and working memory are
 * placed once every call is bound: place_by_lifetime). */
#if TRT_LIST_OUTS
static trt_status bind_call(trt_program *prog, trt_chain_call *kc, int16_t k, const int32_t *args,
                            uint32_t n_args, uint16_t item) {
    const trt_value_tables tables = {prog->call_args, (uint16_t)n_args, prog->call_tensors, prog->call_items};
    uint32_t unread = 0;
    const trt_call call = {&tables, &prog->detail, args, n_args, kc->op->name, &unread, item};
#else
static trt_status bind_call(trt_program *prog, trt_chain_call *kc, int16_t k, const int32_t *args,
                            uint32_t n_args) {
    const trt_value_tables tables = {prog->call_args, (uint16_t)n_args, prog->call_tensors, prog->call_items};
    uint32_t unread = 0;
    const trt_call call = {&tables, &prog->detail, args, n_args, kc->op->name, &unread};
#endif
    uint64_t macs = 0;
    memset(&kc->p, 0, sizeof kc->p);
    trt_status s = kc->op->bind(&call, &kc->p, &macs);
    if (s != TRT_OK) return s;
    kc->macs = (uint32_t)macs;
    prog->macs += macs;
    /* binding succeeded: args[n-2] is the planned output (== the return), as every bind step checks
     * (trt_need_output); a kernel writes nothing else of the memory plan but its working memory,
     * which goes where no value is live (operator_table.h, place_by_lifetime) */
#if TRT_LIST_OUTS
    if (n_args >= 2 && prog->call_args[n_args - 2].kind == PTE_VALUE_TENSOR_LIST)
        return bind_list_item(prog, kc, k, args, n_args, item, unread);
#endif
    if (n_args < 2 || prog->call_args[n_args - 2].kind != PTE_VALUE_TENSOR ||
        !prog->call_tensors[n_args - 2].in_arena)
        return trt_fail_text(&prog->detail, TRT_ERR_MALFORMED, "the out argument is not a planned tensor in",
                             kc->op->name);
    const trt_tensor *out = &prog->call_tensors[n_args - 2];
    kc->out_value = (uint16_t)args[n_args - 2];
    kc->out_offset = (uint32_t)out->arena_offset;
    kc->out_bytes = out->nbytes;
    note_input_reads(prog, k, args, n_args, unread);
    kc->live_until = k;
    kc->kernel = trt_choose_variant(kc->op, &kc->p);
    if (!kc->kernel)
        return trt_fail_text(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "no kernel variant of this build takes the call of",
                             kc->op->name);
    size_t scratch = kc->kernel->scratch_bytes ? kc->kernel->scratch_bytes(&kc->p) : 0;
    if (scratch > MAX_PLANNED_BYTES) return trt_fail(&prog->detail, TRT_ERR_LIMIT, "workspace too large");
    kc->scratch_bytes = (uint32_t)scratch;   /* placed once every value's lifetime is known */
    return TRT_OK;
}

#if TRT_ETHOS_U
/* Call i, a DelegateCall: its arguments are the delegate's inputs, then its one output, which it
 * writes as a kernel call writes its out; ethos_u_delegate.c checks them against the delegate's
 * blob and binds the call; its working memory is the NPU's scratch and fast scratch. */
static trt_status load_delegate_call(trt_program *prog, uint32_t i, int32_t delegate, const int32_t *args, uint32_t n) {
    trt_status s;
    trt_chain_call *kc = &prog->calls[i];
    memset(&kc->p, 0, sizeof kc->p);
    if ((s = trt_ethos_u_bind(prog, delegate, kc, n)) != TRT_OK) return s;
    const trt_tensor *out = &prog->call_tensors[n - 1];
    kc->out_value = (uint16_t)args[n - 1];
    kc->out_offset = (uint32_t)out->arena_offset;
    kc->out_bytes = out->nbytes;
    note_input_reads(prog, (int16_t)i, args, n + 1, 0);   /* every argument but the last */
    kc->live_until = (int16_t)i;
    kc->scratch_bytes = (uint32_t)kc->kernel->scratch_bytes(&kc->p);   /* placed with the others' */
    return TRT_OK;
}
#endif

#if TRT_LIST_OUTS
/* Instruction i, a kernel call: bound as the next call of the chain, or, when its out is a Tensor[], as
 * one call per item (each writing its item), in the items' order. */
static trt_status bind_calls(trt_program *prog, uint32_t i, int32_t op_index, const int32_t *args, uint32_t n_args) {
    const int list = n_args >= 2 && prog->call_args[n_args - 2].kind == PTE_VALUE_TENSOR_LIST;
    const uint16_t items = list ? prog->call_args[n_args - 2].count : 1;
    if (items == 0) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "a kernel call whose out Tensor[] is empty");
    for (uint16_t item = 0; item < items; item++) {
        if (prog->n_calls >= TRT_MAX_KERNEL_CALLS)
            return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, "kernel calls above TRT_MAX_KERNEL_CALLS:", prog->n_calls + 1u);
        trt_chain_call *kc = &prog->calls[prog->n_calls];
        kc->op = prog->operators[op_index];
        kc->operator_index = (uint8_t)op_index;
        kc->instruction = (uint16_t)i;
        trt_status s = bind_call(prog, kc, (int16_t)prog->n_calls, args, n_args, item);
        if (s != TRT_OK) return s;
        prog->n_calls++;
    }
    return TRT_OK;
}
#endif

static size_t call_temp_bytes(const trt_chain_call *kc) {
    return kc->kernel->temp_bytes ? kc->kernel->temp_bytes(&kc->p) : 0;
}

static trt_status load_call(trt_program *prog, const fb_vector *calls, uint32_t i) {
    uint8_t kind;
    int32_t op_index;
    fb_vector args_vec;
    int32_t args[TRT_MAX_KERNEL_ARGS];
    trt_status s = pte_call_at(&prog->file, calls, i, &kind, &op_index, &args_vec);
    if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad kernel call");
    const int delegate = TRT_ETHOS_U && kind == PTE_DELEGATE_CALL;
    if (kind != PTE_KERNEL_CALL && !delegate)
        return trt_fail_number(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "call of an unsupported kind:", kind);
    if (!delegate && (op_index < 0 || op_index >= prog->n_operators))
        return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "kernel call of an unknown operator");
    if (args_vec.count > TRT_MAX_KERNEL_ARGS)
        return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, delegate ? "delegate call arguments above TRT_MAX_KERNEL_ARGS:"
                               : "kernel call arguments above TRT_MAX_KERNEL_ARGS:", args_vec.count);
    uint32_t n_args = args_vec.count;
#if TRT_ETHOS_U
    /* an Ethos-U program's quantized_decomposed::dequantize_per_tensor has an argument more: read them all first */
    for (uint32_t k = 0; k < n_args; k++) args[k] = fb_vector_i32(&prog->file.flat, &args_vec, k);
    if (!delegate && (s = trt_ethos_u_cpu_args(prog, prog->operators[op_index], args, &n_args)) != TRT_OK) return s;
#endif
    uint16_t n_items = 0, next_slot = (uint16_t)n_args;   /* Tensor[] items after the arguments */
    for (uint32_t k = 0; k < n_args; k++) {
        if (!TRT_ETHOS_U) args[k] = fb_vector_i32(&prog->file.flat, &args_vec, k);   /* else read above */
        if ((s = resolve_argument(prog, args[k], (uint16_t)k, &n_items, &next_slot)) != TRT_OK) return s;
    }
#if TRT_ETHOS_U
    if (delegate) {
#if TRT_LIST_OUTS   /* the calls are counted as they are bound (a split binds one per item) */
        if (prog->n_calls >= TRT_MAX_KERNEL_CALLS)
            return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, "kernel calls above TRT_MAX_KERNEL_CALLS:", prog->n_calls + 1u);
        prog->calls[prog->n_calls].instruction = (uint16_t)i;
        if ((s = load_delegate_call(prog, prog->n_calls, op_index, args, n_args)) != TRT_OK) return s;
        prog->n_calls++;
        return TRT_OK;
#else
        return load_delegate_call(prog, i, op_index, args, n_args);
#endif
    }
#endif
#if TRT_LIST_OUTS
    return bind_calls(prog, i, op_index, args, n_args);
#else
    trt_chain_call *kc = &prog->calls[i];
    kc->op = prog->operators[op_index];
    kc->operator_index = (uint8_t)op_index;
    return bind_call(prog, kc, (int16_t)i, args, n_args);
#endif
}

static trt_status load_chain(trt_program *prog) {
    fb_vector calls;
    if (prog->plan.chains.count != 1) return trt_fail_number(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "expected one chain, found", prog->plan.chains.count);
    trt_status s = pte_chain_calls(&prog->file, &prog->plan, 0, &calls);
    if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad chain");
    if (calls.count == 0) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "empty kernel call chain");
    if (calls.count > TRT_MAX_KERNEL_CALLS)
        return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, "kernel calls above TRT_MAX_KERNEL_CALLS:", calls.count);
    for (uint32_t i = 0; i < calls.count; i++) {
        if ((s = load_call(prog, &calls, i)) != TRT_OK) return s;
#if !TRT_LIST_OUTS   /* else load_call counts the calls it binds */
        prog->n_calls = (uint16_t)(i + 1);
#endif
    }
    return TRT_OK;
}

/* ---- inputs and outputs -------------------------------------------------------------------------------- */

static trt_status io_tensors(trt_program *prog, const fb_vector *list, const char *what, uint32_t limit,
                             const char *limit_reason, trt_io *table, uint8_t *count) {
    if (list->count == 0) return trt_fail_text(&prog->detail, TRT_ERR_BAD_TENSOR, "the program has no", what);
    if (list->count > limit) return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, limit_reason, list->count);
    for (uint32_t k = 0; k < list->count; k++) {
        int32_t v = fb_vector_i32(&prog->file.flat, list, k);
        pte_value value;
        trt_status s = read_value(prog, v, &value);
        if (s != TRT_OK) return s;
        if (value.kind != PTE_VALUE_TENSOR) return trt_fail_text(&prog->detail, TRT_ERR_MALFORMED, "not a tensor:", what);
        trt_io *io = &table[k];
        memset(io, 0, sizeof *io);
        if ((s = resolve_tensor(prog, &value.tensor, &io->t)) != TRT_OK) return s;
        if (!io->t.in_arena || io->t.numel == 0)
            return trt_fail_text(&prog->detail, TRT_ERR_BAD_TENSOR, "not a non-empty planned tensor:", what);
        io->value = (uint16_t)v;
        io->last_reader = -1;
        io->live_until = -1;
        io->producer = -1;
    }
    *count = (uint8_t)list->count;
    return TRT_OK;
}

static trt_status load_io(trt_program *prog) {
    trt_status s;
    if ((s = io_tensors(prog, &prog->plan.inputs, "input", TRT_MAX_INPUTS, "inputs above TRT_MAX_INPUTS:",
                        prog->inputs, &prog->n_inputs)) != TRT_OK)
        return s;
    return io_tensors(prog, &prog->plan.outputs, "output", TRT_MAX_OUTPUTS, "outputs above TRT_MAX_OUTPUTS:",
                      prog->outputs, &prog->n_outputs);
}

/* "<what> <index><verb><by><when><other>": the reason of a lifetime refusal, e.g.
 * "output 1 is overwritten by kernel call 7 after kernel call 5 writes it". */
static trt_status lifetime_error(trt_program *prog, const char *what, int index, const char *verb, int by,
                                 const char *when, int other) {
    char text[112], digits[3][8];
    const int numbers[3] = {index, by, other};
    for (int n = 0; n < 3; n++) {
        int v = numbers[n], len = 0;
        char reversed[8];
        do { reversed[len++] = (char)('0' + v % 10); v /= 10; } while (v && len < 7);
        for (int c = 0; c < len; c++) digits[n][c] = reversed[len - 1 - c];
        digits[n][len] = '\0';
    }
    const char *parts[] = {what, " ", digits[0], verb, digits[1], when, digits[2]};
    size_t used = 0;
    for (size_t p = 0; p < sizeof parts / sizeof parts[0]; p++)
        for (const char *c = parts[p]; *c && used + 1 < sizeof text; c++) text[used++] = *c;
    text[used] = '\0';
    return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, text);
}

/* The tensor argument 0 of kernel call i, resolved again from the program (calls keep only
 * their kernel parameters). */
static trt_status call_input_tensor(trt_program *prog, int i, trt_tensor *t) {
    fb_vector calls, args;
    uint8_t kind;
    int32_t op_index;
    pte_value v;
    trt_status s;
    if ((s = pte_chain_calls(&prog->file, &prog->plan, 0, &calls)) != TRT_OK ||
#if TRT_LIST_OUTS
        (s = pte_call_at(&prog->file, &calls, prog->calls[i].instruction, &kind, &op_index, &args)) != TRT_OK)
#else
        (s = pte_call_at(&prog->file, &calls, (uint32_t)i, &kind, &op_index, &args)) != TRT_OK)
#endif
        return trt_fail(&prog->detail, s, "bad kernel call");
    if (args.count == 0) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "kernel call without arguments");
    if ((s = read_value(prog, fb_vector_i32(&prog->file.flat, &args, 0), &v)) != TRT_OK) return s;
    if (v.kind != PTE_VALUE_TENSOR) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "expected a tensor argument");
    return resolve_tensor(prog, &v.tensor, t);
}

/* An output written by a dequantize_per_tensor also has raw int8 values: the tensor that call read.
 * When a later call writes over those bytes, the dequantize's call copies them right after it runs
 * (to bytes no value holds from then to the end: place_by_lifetime), so they are still the values it
 * read when the run ends. */
static trt_status keep_raw_int8(trt_program *prog, trt_io *out) {
    trt_chain_call *producer = &prog->calls[out->producer];
    if (producer->op != &trt_op_dequantize_per_tensor) return TRT_OK;
    out->has_int8 = 1;
    if (TRT_INT8_COPIES && producer->copy_bytes) {   /* another output of the same call keeps them already */
        out->int8_in_arena = 1;
        out->int8_copied = 1;
        return TRT_OK;
    }
    trt_tensor q;
    trt_status s = call_input_tensor(prog, out->producer, &q);
    if (s != TRT_OK) return s;
    if (!q.in_arena) {
        out->int8_const = (const int8_t *)(const void *)q.data;
        return TRT_OK;
    }
    out->int8_in_arena = 1;
    out->int8_offset = (uint32_t)q.arena_offset;
    /* read in place after the run; kept live to the end even when a copy below takes them (on the safe side) */
    note_planned_read(prog, LIVE_TO_END, q.arena_offset, q.nbytes);
    for (int k = out->producer + 1; k < prog->n_calls; k++) {
        const trt_chain_call *later = &prog->calls[k];
        if (!ranges_overlap(later->out_offset, later->out_bytes, q.arena_offset, q.nbytes)) continue;
        if (!TRT_INT8_COPIES)
            return trt_fail(&prog->detail, TRT_ERR_UNSUPPORTED_OP,
                            "an output's int8 values overwritten later (TRT_INT8_COPIES=0)");
        producer->copy_from = (uint32_t)q.arena_offset;
        producer->copy_bytes = q.nbytes;   /* its place: place_by_lifetime */
        prog->has_copies = 1;
        out->int8_copied = 1;
        break;
    }
    return TRT_OK;
}

/*
 * What the memory plan must guarantee for the inputs and outputs to mean anything (ExecuTorch's
 * planner gives it: an input lives from the start until its last reader, an output from its
 * writer to the end): no kernel call writes over an input before the last call that reads it,
 * and none writes over an output after the call that writes it. A program that breaks either
 * (hand-made or corrupted) is refused here, so every output read after trt_run is what its
 * kernel call wrote, and every call reads the inputs as the caller wrote them.
 */
static trt_status check_io_lifetimes(trt_program *prog) {
    for (uint8_t m = 0; m < prog->n_inputs; m++) {
        const trt_io *in = &prog->inputs[m];
        for (int k = 0; k <= in->last_reader; k++) {
            const trt_chain_call *kc = &prog->calls[k];
            if (ranges_overlap(kc->out_offset, kc->out_bytes, in->t.arena_offset, in->t.nbytes))
                return lifetime_error(prog, "input", m, " is overwritten by kernel call ", k,
                                      " before it is read by kernel call ", in->last_reader);
        }
    }
    for (uint8_t m = 0; m < prog->n_outputs; m++) {
        trt_io *out = &prog->outputs[m];
        for (int k = prog->n_calls - 1; k >= 0 && out->producer < 0; k--)
            if (prog->calls[k].out_value == out->value) out->producer = (int16_t)k;
        if (out->producer < 0) return trt_fail_number(&prog->detail, TRT_ERR_BAD_TENSOR, "no kernel call writes output", m);
        for (int k = out->producer + 1; k < prog->n_calls; k++) {
            const trt_chain_call *kc = &prog->calls[k];
            if (ranges_overlap(kc->out_offset, kc->out_bytes, out->t.arena_offset, out->t.nbytes))
                return lifetime_error(prog, "output", m, " is overwritten by kernel call ", k,
                                      " after it is written by kernel call ", out->producer);
        }
        trt_status s = keep_raw_int8(prog, out);
        if (s != TRT_OK) return s;
        prog->calls[out->producer].live_until = LIVE_TO_END;
    }
    return TRT_OK;
}

/*
 * What the runtime adds to the memory plan goes into the same arena, placed once at load by
 * lifetime, as the plan's own tensors are:
 * - a call's working memory is live while the call runs;
 * - the raw int8 values a dequantize's call copies (keep_raw_int8), from that call to the end;
 * - a variant's workspace, filled once after the load and read by every run, always.
 * Each goes at the lowest 16-byte aligned offset (0, or where a value or a block placed before
 * ends) where nothing live during its lifetime meets it: in a gap of the plan when one is big
 * enough, else across or above the plan's end, which grows the arena by only what the gap lacks.
 * Lifetimes are spans of call indices: -1 is before the first call (the load, the caller writing
 * the inputs), LIVE_TO_END after the last.
 */
typedef struct {
    uint32_t *offset;
    size_t bytes;
    int16_t from, to;
} placed_block;

/* The kinds of block in the order they are placed: the shortest lifetimes first, or the longest. */
enum { WORKING_FIRST, WORKSPACE_FIRST };

/* Working memory, copies of raw int8 values (none without TRT_INT8_COPIES), workspace. */
#define BLOCK_KINDS (2 + TRT_INT8_COPIES)

/* Block j of the BLOCK_KINDS * n_calls, one kind per n_calls in the order they are placed; `working`: each
 * call's working memory size (its variant's answer, asked once). */
static placed_block block_at(trt_program *prog, const uint32_t *working, int order, int j) {
    trt_chain_call *kc = &prog->calls[j % prog->n_calls];
    const int16_t k = (int16_t)(j % prog->n_calls);
    switch (order == WORKING_FIRST ? j / prog->n_calls : BLOCK_KINDS - 1 - j / prog->n_calls) {
    case 0: return (placed_block){&kc->temp_offset, working[k], k, k};
#if TRT_INT8_COPIES
    case 1: return (placed_block){&kc->copy_to, kc->copy_bytes, k, LIVE_TO_END};
#endif
    default: return (placed_block){&kc->scratch_offset, kc->scratch_bytes, -1, LIVE_TO_END};
    }
}

/* Item i of what may be live beside a block: held value i (inputs from the start, the calls' outs
 * from their call on, each until its last reader; kept ranges always: note_planned_read), then the
 * blocks placed before it. Its range, and whether its lifetime meets the block's. */
static int live_beside(trt_program *prog, const uint32_t *working, int order, int i, const placed_block *b,
                       size_t *offset, size_t *bytes) {
    if (i < held_count(prog)) {
        const held_value h = held(prog, i);
        const int16_t from = i < prog->n_inputs ? -1 : (int16_t)(i - prog->n_inputs);
        *offset = h.offset;
        *bytes = h.bytes;
        return !h.until || (from <= b->to && b->from <= *h.until);
    }
    const placed_block o = block_at(prog, working, order, i - held_count(prog));
    *offset = *o.offset;
    *bytes = o.bytes;
    return o.from <= b->to && b->from <= o.to;
}

/* The lowest 16-byte aligned offset where b meets none of the first n items live beside it (first
 * fit). From 0 up, while [at, at + bytes) meets items: each of them starts below at + bytes and ends
 * above at, so it meets b at every offset from `at` to its end, and the next try is the highest of
 * their ends; each try passes an item's end, so there are at most n + 1. */
static uint64_t first_fit(trt_program *prog, const uint32_t *working, int order, int n, const placed_block *b) {
    uint64_t at = 0;
    for (;;) {
        uint64_t past = 0;   /* the highest end among the items b meets at `at` */
        size_t offset, bytes;
        for (int i = 0; i < n; i++)
            if (live_beside(prog, working, order, i, b, &offset, &bytes) &&
                ranges_overlap(offset, bytes, (size_t)at, b->bytes) && (uint64_t)offset + bytes > past)
                past = (uint64_t)offset + bytes;
        if (!past) return at;
        at = align_up((size_t)past);
    }
}

/* Place every block in `order` (first_fit); the arena's end (0: past 4 GiB). */
static uint64_t place_blocks(trt_program *prog, const uint32_t *working, int order) {
    uint64_t top = prog->workspace_base;
    for (int j = 0; j < BLOCK_KINDS * prog->n_calls; j++) {
        const placed_block b = block_at(prog, working, order, j);
        *b.offset = 0;   /* no bytes: a kernel given them reads and writes none there */
        if (b.bytes == 0) continue;
        const uint64_t at = first_fit(prog, working, order, held_count(prog) + j, &b);
        if (at + b.bytes > (uint64_t)UINT32_MAX - TRT_ALIGN) return 0;
        *b.offset = (uint32_t)at;
        if (at + align_up(b.bytes) > top) top = at + align_up(b.bytes);
    }
    return top;
}

/* Place the blocks both ways and keep the smaller arena: working memory first may reach into the
 * plan's free top bytes; workspace first may take bytes free at every call (ones only CMSIS-NN's
 * scratch tensors were planned at) before a call's working memory does. Then the arena's parts. */
static trt_status place_by_lifetime(trt_program *prog) {
    uint32_t working[TRT_MAX_KERNEL_CALLS];
    for (int k = 0; k < prog->n_calls; k++) {
        const size_t bytes = call_temp_bytes(&prog->calls[k]);
        if (bytes > MAX_PLANNED_BYTES) return trt_fail(&prog->detail, TRT_ERR_LIMIT, "working memory too large");
        working[k] = (uint32_t)bytes;
    }
    const uint64_t workspace_first = place_blocks(prog, working, WORKSPACE_FIRST);
    uint64_t top = place_blocks(prog, working, WORKING_FIRST);
    if (workspace_first && (!top || workspace_first < top)) top = place_blocks(prog, working, WORKSPACE_FIRST);
    if (!top) return trt_fail(&prog->detail, TRT_ERR_LIMIT, "workspace too large");
    prog->arena_needed = (size_t)top;
    prog->working_top = prog->workspace_base;
    for (int k = 0; k < prog->n_calls; k++)
        if (working[k] && prog->calls[k].temp_offset + align_up(working[k]) > prog->working_top)
            prog->working_top = prog->calls[k].temp_offset + align_up(working[k]);
    for (uint8_t m = 0; m < prog->n_outputs; m++)
        if (TRT_INT8_COPIES && prog->outputs[m].int8_copied)
            prog->outputs[m].int8_offset = prog->calls[prog->outputs[m].producer].copy_to;
    return TRT_OK;
}

/* Fusions: a call whose operator has fuse_next may do the next call's work in its own kernel (a
 * convolution with the max pool after it), when the next call is the last reader of its output and
 * no caller reads that output (live_until is exact once the inputs' and outputs' lifetimes are
 * checked). The operator changes both calls' parameters; their places in the memory plan, and so
 * every value's lifetime, stay as they are, but the fused call writes only the first bytes of its
 * out (as many as the next call's out: operator_table.h), so the rest of it holds no value while it
 * runs and its working memory may go there. Before the working memory is placed: a fused kernel
 * may need more of it. */
static void fuse_calls(trt_program *prog) {
    if (!TRT_FUSIONS) return;
    for (int k = 0; k + 1 < prog->n_calls; k++) {
        trt_chain_call *a = &prog->calls[k];
        if (a->op->fuse_next && a->live_until == k + 1 && a->op->fuse_next(&a->p, &a->kernel, a[1].op, &a[1].p))
            a->out_bytes = a[1].out_bytes;
    }
}

/* The value a constant method of the program returns ("input0_scale": ExecuTorch's QuantizeInputs and
 * QuantizeOutputs passes record an integer input's or output's quantization so): 0 when there is none. */
static int constant_method(const trt_program *prog, const char *name, double *number) {
    for (uint32_t i = 0; i < prog->file.execution_plans.count; i++) {
        pte_plan plan;
        pte_value v;
        if (pte_plan_at(&prog->file, i, &plan) != TRT_OK || !pte_text_is(plan.name, plan.name_len, name) ||
            plan.outputs.count != 1 ||
            pte_value_at(&prog->file, &plan, (uint32_t)fb_vector_i32(&prog->file.flat, &plan.outputs, 0), &v) != TRT_OK)
            continue;
        if (v.kind == PTE_VALUE_DOUBLE) *number = v.double_val;
        else if (v.kind == PTE_VALUE_INT) *number = (double)v.int_val;
        else return 0;
        return 1;
    }
    return 0;
}

/* ---- load ---------------------------------------------------------------------------------------------- */

static trt_status find_forward_plan(trt_program *prog) {
    for (uint32_t i = 0; i < prog->file.execution_plans.count; i++) {
        trt_status s = pte_plan_at(&prog->file, i, &prog->plan);
        if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad execution plan");
        if (pte_text_is(prog->plan.name, prog->plan.name_len, "forward")) {
            if (prog->plan.values.count > TRT_MAX_VALUES)
                return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, "values above TRT_MAX_VALUES:", prog->plan.values.count);
            prog->n_values = (uint16_t)prog->plan.values.count;
            return TRT_OK;
        }
    }
    return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "no execution plan named forward");
}

static trt_status open_file(trt_program *prog) {
    trt_status s = pte_open(prog->pte, prog->pte_len, &prog->file);
    switch (s) {
    case TRT_OK: return TRT_OK;
    case TRT_ERR_BAD_MAGIC: return trt_fail(&prog->detail, s, "not an ExecuTorch program (file identifier is not ET12)");
    case TRT_ERR_TRUNCATED: return trt_fail(&prog->detail, s, "program header or root points outside the file");
    default: return trt_fail(&prog->detail, s, "malformed program header or root table");
    }
}

/* Fill each kernel variant's workspace (weight sums, folded offsets, packed weights): the
 * load's cost, never the inference's. */
static void prepare_kernels(trt_program *prog) {
    for (uint16_t i = 0; i < prog->n_calls; i++) {
        trt_chain_call *kc = &prog->calls[i];
        if (kc->kernel->prepare)
            kc->kernel->prepare(&kc->p, kc->scratch_bytes ? prog->arena + kc->scratch_offset : NULL);
    }
}

static trt_status load_all(trt_program *prog) {
    trt_status s;
    if ((s = open_file(prog)) != TRT_OK || (s = find_forward_plan(prog)) != TRT_OK ||
        (s = reject_delegates(prog)) != TRT_OK || (s = load_memory_plan(prog)) != TRT_OK ||
        (s = load_operators(prog)) != TRT_OK || (s = load_io(prog)) != TRT_OK || (s = load_chain(prog)) != TRT_OK ||
        (s = check_io_lifetimes(prog)) != TRT_OK)
        return s;
    fuse_calls(prog);
    if ((s = place_by_lifetime(prog)) != TRT_OK) return s;
    if (!prog->arena || prog->arena_needed > prog->arena_len)
        return trt_fail_number(&prog->detail, TRT_ERR_ARENA_TOO_SMALL, "arena too small; bytes needed:", prog->arena_needed);
    prepare_kernels(prog);
    return TRT_OK;
}

trt_status trt_load(trt_program *prog, const uint8_t *pte, size_t pte_len, uint8_t *arena, size_t arena_len,
                    char *detail, size_t detail_len) {
    if (!prog) return TRT_ERR_BAD_INPUT;
    memset(prog, 0, sizeof *prog);
    prog->detail.text = detail;
    prog->detail.size = detail_len;
    if (detail && detail_len) detail[0] = '\0';
    if (!pte) return trt_fail(&prog->detail, TRT_ERR_BAD_INPUT, "no program bytes");
    /* constants are read in place as int32: the buffer must be as aligned as the format's data */
    if ((uintptr_t)pte % TRT_ALIGN != 0) return trt_fail(&prog->detail, TRT_ERR_BAD_INPUT, "program buffer is not 16-byte aligned");
    if (arena && (uintptr_t)arena % TRT_ALIGN != 0) return trt_fail(&prog->detail, TRT_ERR_BAD_INPUT, "arena is not 16-byte aligned");
    prog->pte = pte;
    prog->pte_len = pte_len;
    prog->arena = arena;
    prog->arena_len = arena ? arena_len : 0;
    trt_status s = load_all(prog);
    prog->detail.text = NULL;   /* the caller's buffer is only borrowed during the load */
    prog->detail.size = 0;
    if (s != TRT_OK) {
        size_t needed = prog->arena_needed;
        memset(prog, 0, sizeof *prog);
        prog->arena_needed = needed;
        return s;
    }
    prog->loaded = 1;
    return TRT_OK;
}

/* ---- inputs and outputs -------------------------------------------------------------------------------- */

int trt_input_count(const trt_program *prog) { return prog && prog->loaded ? prog->n_inputs : 0; }

int trt_output_count(const trt_program *prog) { return prog && prog->loaded ? prog->n_outputs : 0; }

static void describe(const trt_io *io, trt_tensor_info *info) {
    memset(info, 0, sizeof *info);
    info->dtype = io->t.dtype;
    info->rank = io->t.rank;
    for (int d = 0; d < io->t.rank; d++) {
        info->sizes[d] = io->t.sizes[d];
        info->dim_order[d] = io->t.dim_order[d];
        info->strides[d] = io->t.strides[d];
    }
    info->numel = io->t.numel;
    info->nbytes = io->t.nbytes;
    info->elem_size = io->t.elem_size;
    info->data = io->t.mutable_data;
    info->has_int8 = io->has_int8;
}

trt_status trt_input(const trt_program *prog, int i, trt_tensor_info *info) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_inputs || !info) return TRT_ERR_BAD_INPUT;
    describe(&prog->inputs[i], info);
    return TRT_OK;
}

trt_status trt_output(const trt_program *prog, int i, trt_tensor_info *info) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_outputs || !info) return TRT_ERR_BAD_INPUT;
    describe(&prog->outputs[i], info);
    return TRT_OK;
}

trt_status trt_output_int8(const trt_program *prog, int i, const int8_t **data, size_t *count) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_outputs || !data || !count) return TRT_ERR_BAD_INPUT;
    const trt_io *out = &prog->outputs[i];
    if (!out->has_int8) return TRT_ERR_BAD_INPUT;
    *data = out->int8_in_arena ? (const int8_t *)(const void *)(prog->arena + out->int8_offset) : out->int8_const;
    *count = out->t.numel;   /* dequantize binds input and output with the same layout */
    return TRT_OK;
}

/* "input0" + what / "output12" + what: the name of one of the constant methods below. */
static void io_method_name(char *name, int output, int i, const char *what) {
    const char *side = output ? "output" : "input";
    char digits[12];
    int n = 0;
    do digits[n++] = (char)('0' + i % 10); while ((i /= 10) > 0);
    while (*side) *name++ = *side++;
    while (n > 0) *name++ = digits[--n];
    while (*what) *name++ = *what++;
    *name = '\0';
}

trt_status trt_io_quantization(const trt_program *prog, int output, int i, double *scale, int32_t *zero_point) {
    if (!prog || !prog->loaded || i < 0 || i >= (output ? prog->n_outputs : prog->n_inputs) || !scale || !zero_point)
        return TRT_ERR_BAD_INPUT;
    const trt_io *io = output ? &prog->outputs[i] : &prog->inputs[i];
    char name[32];
    double s, z;
    if (io->t.dtype != TRT_INT8) return TRT_ERR_BAD_TENSOR;
    io_method_name(name, output, i, "_scale");
    if (!constant_method(prog, name, &s) || !(s > 0)) return TRT_ERR_BAD_TENSOR;
    io_method_name(name, output, i, "_zp");
    if (!constant_method(prog, name, &z) || !(z >= -128 && z <= 127)) return TRT_ERR_BAD_TENSOR;
    *scale = s;
    *zero_point = (int32_t)z;
    return TRT_OK;
}

TRT_LOAD_CODE_END

/* ---- inference ------------------------------------------------------------------------------------- */

/* The run loop, written once: each call's kernel, then (`copies`) the raw int8 values it keeps; with
 * `profiled`, the counter's advance since the call before (or the start) is recorded per call, one
 * read per call. run_range gives it constants, so the compiler makes one loop of each kind: without a
 * counter, the loop has not one instruction of the profile's, nor of the copies' without copies. */
#if defined(__GNUC__)
#define RUN_LOOP static inline __attribute__((always_inline))
#define SELDOM(x) __builtin_expect((x), 0)
#else
#define RUN_LOOP static inline
#define SELDOM(x) (x)
#endif
RUN_LOOP void run_loop(trt_program *prog, int begin, int end, const int profiled, const int copies) {
    trt_chain_call *kc = prog->calls;
    uint64_t before = profiled ? prog->counter() : 0;
    for (int i = begin; i < end; i++) {
        kc[i].kernel->invoke(&kc[i].p, prog->arena + kc[i].temp_offset);
        if (copies && kc[i].copy_bytes) memcpy(prog->arena + kc[i].copy_to, prog->arena + kc[i].copy_from, kc[i].copy_bytes);
        if (profiled) {
            uint64_t after = prog->counter();
            kc[i].counted = (uint32_t)(after - before);
            before = after;
        }
    }
}

static void run_range(trt_program *prog, int begin, int end) {
    if (TRT_INT8_COPIES && SELDOM(prog->has_copies))   /* a kept output overwritten later: rare */
        run_loop(prog, begin, end, prog->counter != NULL, 1);
    else if (prog->counter) run_loop(prog, begin, end, 1, 0);
    else run_loop(prog, begin, end, 0, 0);
}

trt_status trt_run_calls(trt_program *prog, int begin, int end) {
    if (!prog || !prog->loaded || begin < 0 || end < begin || end > prog->n_calls) return TRT_ERR_BAD_INPUT;
    run_range(prog, begin, end);
    return RUN_STATUS(prog);   /* TRT_ERR_NPU when a delegate call's NPU job failed */
}

trt_status trt_run(trt_program *prog) {
    if (!prog || !prog->loaded) return TRT_ERR_BAD_INPUT;
    run_range(prog, 0, prog->n_calls);
    return RUN_STATUS(prog);
}

void trt_set_counter(trt_program *prog, trt_counter_fn counter) {
    if (!prog) return;
    prog->counter = counter;
    for (uint16_t i = 0; i < prog->n_calls; i++) prog->calls[i].counted = 0;
}

trt_status trt_call_profile(const trt_program *prog, int i, uint64_t *count, uint64_t *macs) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_calls || !count || !macs) return TRT_ERR_BAD_INPUT;
    *count = prog->calls[i].counted;
    *macs = prog->calls[i].macs;
    return TRT_OK;
}

trt_status trt_call_output(const trt_program *prog, int i, const uint8_t **data, size_t *len) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_calls || !data || !len) return TRT_ERR_BAD_INPUT;
    *data = prog->arena + prog->calls[i].out_offset;
    *len = prog->calls[i].out_bytes;
    return TRT_OK;
}
