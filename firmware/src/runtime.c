/*
 * Loading and running a program (API in tinyrps_runtime.h).
 *
 * trt_load walks the program once, in this order: header and root (pte_reader),
 * the "forward" execution plan, its memory plan, every value (tensors resolved to
 * constant bytes or to arena positions), the operator table, the one instruction
 * chain (each kernel call validated by its operator's bind step and bound to one
 * kernel variant, ops/operator_table.h), the input and output. Only when all of it
 * is consistent and fits the arena is the program marked loaded (and the variants'
 * workspace prepared); trt_infer then just runs the bound kernels in order.
 */
#include <string.h>

#include "runtime_internal.h"

#define MAX_KERNEL_ARGS 32
#define MAX_PLANNED_BYTES ((size_t)1 << 30)

_Static_assert(sizeof(struct trt_program) <= TRT_PROGRAM_STORAGE_BYTES,
               "TRT_PROGRAM_STORAGE_BYTES is too small for struct trt_program");

/* ---- small helpers ------------------------------------------------------------------------------ */

static size_t align_up(size_t n) { return (n + (TRT_ALIGN - 1)) & ~(size_t)(TRT_ALIGN - 1); }

static int dtype_size(int8_t dtype) {
    switch (dtype) {
    case TRT_UINT8: case TRT_INT8: case TRT_BOOL: return 1;
    case TRT_INT16: return 2;
    case TRT_INT32: case TRT_FLOAT32: return 4;
    case TRT_INT64: case TRT_FLOAT64: return 8;
    default: return 0;
    }
}

/* ---- public helpers --------------------------------------------------------------------------------- */

trt_program *trt_program_init(trt_program_storage *storage) {
    if (!storage) return NULL;
    memset(storage, 0, sizeof *storage);
    return (trt_program *)(void *)storage;
}

size_t trt_program_size(void) { return sizeof(struct trt_program); }

size_t trt_arena_needed(const trt_program *prog) { return prog ? prog->arena_needed : 0; }

uint64_t trt_macs(const trt_program *prog) { return prog && prog->loaded ? prog->macs : 0; }

int trt_instruction_count(const trt_program *prog) { return prog && prog->loaded ? prog->n_instructions : 0; }

const char *trt_instruction_name(const trt_program *prog, int i) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_instructions) return NULL;
    return prog->instructions[i].op->name;
}

const char *trt_instruction_variant(const trt_program *prog, int i) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_instructions) return NULL;
    return prog->instructions[i].kernel->isa;
}

const char *trt_status_name(trt_status s) {
    switch (s) {
    case TRT_OK: return "ok";
    case TRT_ERR_TRUNCATED: return "truncated";
    case TRT_ERR_BAD_MAGIC: return "bad magic";
    case TRT_ERR_MALFORMED: return "malformed";
    case TRT_ERR_UNSUPPORTED_OP: return "unsupported operator";
    case TRT_ERR_ARENA_TOO_SMALL: return "arena too small";
    case TRT_ERR_BAD_TENSOR: return "bad tensor";
    case TRT_ERR_BAD_INPUT: return "bad input";
    case TRT_ERR_LIMIT: return "over runtime limit";
    }
    return "unknown status";
}

/* ---- memory plan ---------------------------------------------------------------------------------- */

/* Each planned buffer (memory id) gets its own 16-byte aligned region of the arena, in id order;
 * the workspace for weight sums follows them. */
static trt_status load_memory_plan(trt_program *prog) {
    const fb_vector *sizes = &prog->plan.memory_sizes;
    if (sizes->count > TRT_MAX_MEMORY_IDS) return trt_fail(&prog->detail, TRT_ERR_LIMIT, "too many memory ids");
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
    prog->workspace_used = 0;
    return TRT_OK;
}

/* Reserve `bytes` of workspace after the planned memory; returns its arena offset. */
static trt_status reserve_workspace(trt_program *prog, size_t bytes, size_t *offset) {
    if (bytes > MAX_PLANNED_BYTES || prog->workspace_used > MAX_PLANNED_BYTES)
        return trt_fail(&prog->detail, TRT_ERR_LIMIT, "workspace too large");
    *offset = prog->workspace_base + prog->workspace_used;
    prog->workspace_used += align_up(bytes);
    return TRT_OK;
}

/* ---- values and tensors ------------------------------------------------------------------------------ */

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

static trt_status load_value(trt_program *prog, uint32_t index) {
    pte_value v;
    trt_value *dst = &prog->values[index];
    trt_status s = pte_value_at(&prog->file, &prog->plan, index, &v);
    if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad value");
    dst->kind = v.kind;
    switch (v.kind) {
    case PTE_VALUE_INT: dst->u.i = v.int_val; return TRT_OK;
    case PTE_VALUE_BOOL: dst->u.i = v.bool_val; return TRT_OK;
    case PTE_VALUE_DOUBLE: dst->u.d = v.double_val; return TRT_OK;
    case PTE_VALUE_INT_LIST:
    case PTE_VALUE_TENSOR_LIST:
        if (v.list.count > (uint32_t)(TRT_MAX_LIST_ITEMS - prog->n_list_items)) return trt_fail(&prog->detail, TRT_ERR_LIMIT, "too many int[] items");
        dst->index = prog->n_list_items;
        dst->count = (uint16_t)v.list.count;
        for (uint32_t k = 0; k < v.list.count; k++)   /* value indices for now; resolved below */
            prog->list_items[prog->n_list_items++] = v.kind == PTE_VALUE_INT_LIST ? fb_vector_i64(&prog->file.flat, &v.list, k)
                                                                                 : fb_vector_i32(&prog->file.flat, &v.list, k);
        return TRT_OK;
    case PTE_VALUE_TENSOR: {
        if (prog->n_tensors >= TRT_MAX_TENSORS) return trt_fail(&prog->detail, TRT_ERR_LIMIT, "too many tensors");
        trt_tensor *t = &prog->tensors[prog->n_tensors];
        memset(t, 0, sizeof *t);
        if ((s = tensor_shape(prog, &v.tensor, t)) != TRT_OK || (s = tensor_storage(prog, &v.tensor, t)) != TRT_OK)
            return s;
        dst->index = prog->n_tensors++;
        return TRT_OK;
    }
    default:
        return TRT_OK;   /* null, strings, other lists: a kernel taking one fails its binding */
    }
}

/* IntList items are indices of Int values, TensorList items of Tensor values; replace them with
 * the ints and the tensor table indices. */
static trt_status resolve_lists(trt_program *prog) {
    for (uint16_t i = 0; i < prog->n_values; i++) {
        const trt_value *list = &prog->values[i];
        if (list->kind != PTE_VALUE_INT_LIST && list->kind != PTE_VALUE_TENSOR_LIST) continue;
        const uint8_t kind = list->kind == PTE_VALUE_INT_LIST ? PTE_VALUE_INT : PTE_VALUE_TENSOR;
        for (uint16_t k = list->index; k < list->index + list->count; k++) {
            int64_t ref = prog->list_items[k];
            if (ref < 0 || ref >= prog->n_values || prog->values[ref].kind != kind)
                return trt_fail(&prog->detail, TRT_ERR_MALFORMED,
                                kind == PTE_VALUE_INT ? "int[] item is not an int value" : "Tensor[] item is not a tensor");
            prog->list_items[k] = kind == PTE_VALUE_INT ? prog->values[ref].u.i : prog->values[ref].index;
        }
    }
    return TRT_OK;
}

static trt_status load_values(trt_program *prog) {
    uint32_t n = prog->plan.values.count;
    if (n > TRT_MAX_VALUES) return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, "too many values:", n);
    prog->n_values = (uint16_t)n;
    for (uint32_t i = 0; i < n; i++) {
        trt_status s = load_value(prog, i);
        if (s != TRT_OK) return s;
    }
    return resolve_lists(prog);
}

/* ---- operators and instructions ------------------------------------------------------------------------ */

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
    if (n > TRT_MAX_OPERATORS) return trt_fail(&prog->detail, TRT_ERR_LIMIT, "too many operators");
    for (uint32_t i = 0; i < n; i++) {
        const char *name, *overload;
        uint32_t name_len, overload_len;
        trt_status s = pte_operator_at(&prog->file, &prog->plan, i, &name, &name_len, &overload, &overload_len);
        if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad operator entry");
        const trt_operator *op = trt_find_operator(name, name_len, overload, overload_len);
        if (!op) return unsupported_operator(prog, name, name_len, overload, overload_len);
        prog->operators[i] = op;
    }
    prog->n_operators = (uint8_t)n;
    return TRT_OK;
}

static trt_status reject_delegates(trt_program *prog) {
    if (prog->plan.delegates.count == 0) return TRT_OK;
    const char *id = "";
    uint32_t len = 0;
    pte_delegate_id(&prog->file, &prog->plan, 0, &id, &len);
    return trt_fail_named(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "unsupported backend delegate", id, len);
}

static uint16_t tensor_arg(const trt_program *prog, const int32_t *args, uint32_t n, uint32_t i) {
    return i < n ? prog->values[args[i]].index : 0;
}

/* Validate the call (its operator's bind step), choose its kernel variant once, and reserve the
 * variant's workspace; the working memory all calls share is sized for the largest. */
static trt_status bind_instruction(trt_program *prog, trt_instruction *ins, const int32_t *args, uint32_t n_args) {
    const trt_value_tables tables = {prog->values, prog->n_values, prog->tensors, prog->list_items};
    const trt_call call = {&tables, &prog->detail, args, n_args, ins->op->name};
    uint64_t macs = 0;
    memset(&ins->p, 0, sizeof ins->p);
    trt_status s = ins->op->bind(&call, &ins->p, &macs);
    if (s != TRT_OK) return s;
    ins->macs = (uint32_t)macs;
    prog->macs += macs;
    /* binding succeeded: args[0] is the input tensor, args[n-2] the output (== the return) */
    ins->input_tensor = (int16_t)tensor_arg(prog, args, n_args, 0);
    ins->output_tensor = tensor_arg(prog, args, n_args, n_args - 2);
    ins->kernel = trt_choose_variant(ins->op, &ins->p);
    ins->scratch_bytes = ins->kernel->scratch_bytes ? ins->kernel->scratch_bytes(&ins->p) : 0;
    if (ins->scratch_bytes && (s = reserve_workspace(prog, ins->scratch_bytes, &ins->scratch_offset)) != TRT_OK)
        return s;
    size_t temp = ins->kernel->temp_bytes ? ins->kernel->temp_bytes(&ins->p) : 0;
    if (temp > prog->temp_bytes) prog->temp_bytes = temp;
    return TRT_OK;
}

static trt_status load_instruction(trt_program *prog, const fb_vector *instructions, uint32_t i) {
    uint8_t kind;
    int32_t op_index;
    fb_vector args_vec;
    int32_t args[MAX_KERNEL_ARGS];
    trt_status s = pte_instruction_at(&prog->file, instructions, i, &kind, &op_index, &args_vec);
    if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad instruction");
    if (kind != PTE_INSTR_KERNEL_CALL) return trt_fail_number(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "unsupported instruction kind", kind);
    if (op_index < 0 || op_index >= prog->n_operators) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "kernel call of an unknown operator");
    if (args_vec.count > MAX_KERNEL_ARGS) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "too many kernel arguments");
    for (uint32_t k = 0; k < args_vec.count; k++) args[k] = fb_vector_i32(&prog->file.flat, &args_vec, k);
    trt_instruction *ins = &prog->instructions[i];
    ins->op = prog->operators[op_index];
    ins->operator_index = (uint8_t)op_index;
    return bind_instruction(prog, ins, args, args_vec.count);
}

static trt_status load_chain(trt_program *prog) {
    fb_vector instructions;
    if (prog->plan.chains.count != 1) return trt_fail_number(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "expected one chain, found", prog->plan.chains.count);
    trt_status s = pte_chain_instructions(&prog->file, &prog->plan, 0, &instructions);
    if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad chain");
    if (instructions.count == 0) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "empty instruction chain");
    if (instructions.count > TRT_MAX_INSTRUCTIONS) return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, "too many instructions:", instructions.count);
    for (uint32_t i = 0; i < instructions.count; i++) {
        if ((s = load_instruction(prog, &instructions, i)) != TRT_OK) return s;
        prog->n_instructions = (uint16_t)(i + 1);
    }
    return TRT_OK;
}

/* ---- input and output -------------------------------------------------------------------------------- */

static trt_status io_tensor(trt_program *prog, const fb_vector *list, const char *what, uint16_t *tensor) {
    if (list->count != 1) return trt_fail_named(&prog->detail, TRT_ERR_BAD_TENSOR, "expected exactly one", what, strlen(what));
    int32_t v = fb_vector_i32(&prog->file.flat, list, 0);
    if (v < 0 || v >= prog->n_values || prog->values[v].kind != PTE_VALUE_TENSOR)
        return trt_fail_named(&prog->detail, TRT_ERR_MALFORMED, "bad", what, strlen(what));
    *tensor = prog->values[v].index;
    const trt_tensor *t = &prog->tensors[*tensor];
    if (t->dtype != TRT_FLOAT32 || !t->in_arena) return trt_fail_named(&prog->detail, TRT_ERR_BAD_TENSOR, "not a planned float32", what, strlen(what));
    return TRT_OK;
}

static trt_status load_io(trt_program *prog) {
    trt_status s;
    if ((s = io_tensor(prog, &prog->plan.inputs, "input", &prog->input_tensor)) != TRT_OK ||
        (s = io_tensor(prog, &prog->plan.outputs, "output", &prog->output_tensor)) != TRT_OK)
        return s;
    const trt_tensor *in = &prog->tensors[prog->input_tensor], *out = &prog->tensors[prog->output_tensor];
    if (in->rank != 4 || in->sizes[0] != 1 || in->sizes[1] != 1 || in->sizes[2] != TRT_IMAGE_SIDE ||
        in->sizes[3] != TRT_IMAGE_SIDE)
        return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "input is not [1, 1, 28, 28]");
    if (!trt_is_row_major(out)) return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "output is not row-major");
    if (out->numel < 1 || out->numel > TRT_MAX_OUTPUTS) return trt_fail(&prog->detail, TRT_ERR_LIMIT, "output has more than 16 values");
    /* The last kernel call must be the dequantize that writes the output: its input is the int8
     * result reported as out_q, and with nothing running after it, nothing can overwrite those
     * bytes before trt_infer copies them. */
    const trt_instruction *last = &prog->instructions[prog->n_instructions - 1];
    if (last->output_tensor != prog->output_tensor || last->op != &trt_op_dequantize_per_tensor)
        return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR,
                        "the last kernel call must be the dequantize_per_tensor that writes the output");
    prog->output_int8_tensor = (uint16_t)last->input_tensor;
    return TRT_OK;
}

/* ---- load ---------------------------------------------------------------------------------------------- */

static trt_status find_forward_plan(trt_program *prog) {
    for (uint32_t i = 0; i < prog->file.execution_plans.count; i++) {
        trt_status s = pte_plan_at(&prog->file, i, &prog->plan);
        if (s != TRT_OK) return trt_fail(&prog->detail, s, "bad execution plan");
        if (prog->plan.name_len == 7 && memcmp(prog->plan.name, "forward", 7) == 0) return TRT_OK;
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
    for (uint16_t i = 0; i < prog->n_instructions; i++) {
        trt_instruction *ins = &prog->instructions[i];
        if (ins->kernel->prepare)
            ins->kernel->prepare(&ins->p, ins->scratch_bytes ? prog->arena + ins->scratch_offset : NULL);
    }
}

static trt_status load_all(trt_program *prog) {
    trt_status s;
    size_t temp_offset = 0;
    if ((s = open_file(prog)) != TRT_OK || (s = find_forward_plan(prog)) != TRT_OK ||
        (s = reject_delegates(prog)) != TRT_OK || (s = load_memory_plan(prog)) != TRT_OK ||
        (s = load_values(prog)) != TRT_OK || (s = load_operators(prog)) != TRT_OK ||
        (s = load_chain(prog)) != TRT_OK || (s = load_io(prog)) != TRT_OK ||
        (s = reserve_workspace(prog, prog->temp_bytes, &temp_offset)) != TRT_OK)
        return s;
    prog->arena_needed = prog->workspace_base + prog->workspace_used;
    if (!prog->arena || prog->arena_needed > prog->arena_len)
        return trt_fail_number(&prog->detail, TRT_ERR_ARENA_TOO_SMALL, "arena too small; bytes needed:", prog->arena_needed);
    prog->temp = prog->temp_bytes ? prog->arena + temp_offset : NULL;
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

/* ---- inference ------------------------------------------------------------------------------------- */

/* The image as the program's float32 input: pixel / 255, placed by the input's strides. */
static void write_input(trt_program *prog, const uint8_t image[TRT_IMAGE_BYTES]) {
    const trt_tensor *t = &prog->tensors[prog->input_tensor];
    float *x = (float *)(void *)t->mutable_data;
    for (int h = 0; h < TRT_IMAGE_SIDE; h++)
        for (int w = 0; w < TRT_IMAGE_SIDE; w++)
            x[h * t->strides[2] + w * t->strides[3]] = (float)image[h * TRT_IMAGE_SIDE + w] / 255.0f;
}

static void run_instruction(trt_program *prog, const trt_instruction *ins) { ins->kernel->invoke(&ins->p, prog->temp); }

trt_status trt_run_prefix(trt_program *prog, const uint8_t image[TRT_IMAGE_BYTES], int end) {
    if (!prog || !prog->loaded || !image || end < 0 || end > prog->n_instructions) return TRT_ERR_BAD_INPUT;
    write_input(prog, image);
    if (!prog->counter) {
        for (int i = 0; i < end; i++) run_instruction(prog, &prog->instructions[i]);
        return TRT_OK;
    }
    uint64_t before = prog->counter();
    for (int i = 0; i < end; i++) {
        run_instruction(prog, &prog->instructions[i]);
        uint64_t after = prog->counter();
        prog->instructions[i].counted = (uint32_t)(after - before);
        before = after;
    }
    return TRT_OK;
}

void trt_set_counter(trt_program *prog, trt_counter_fn counter) {
    if (!prog) return;
    prog->counter = counter;
    for (uint16_t i = 0; i < prog->n_instructions; i++) prog->instructions[i].counted = 0;
}

trt_status trt_instruction_profile(const trt_program *prog, int i, uint64_t *count, uint64_t *macs) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_instructions || !count || !macs) return TRT_ERR_BAD_INPUT;
    *count = prog->instructions[i].counted;
    *macs = prog->instructions[i].macs;
    return TRT_OK;
}

trt_status trt_instruction_output(const trt_program *prog, int i, const uint8_t **data, size_t *len) {
    if (!prog || !prog->loaded || i < 0 || i >= prog->n_instructions || !data || !len) return TRT_ERR_BAD_INPUT;
    const trt_tensor *t = &prog->tensors[prog->instructions[i].output_tensor];
    *data = t->data;
    *len = t->nbytes;
    return TRT_OK;
}

trt_status trt_infer(trt_program *prog, const uint8_t image[TRT_IMAGE_BYTES], int8_t out_q[TRT_MAX_OUTPUTS],
                     float logits[TRT_MAX_OUTPUTS], int *n_out) {
    if (!out_q || !logits || !n_out) return TRT_ERR_BAD_INPUT;
    trt_status s = trt_run_prefix(prog, image, prog ? prog->n_instructions : 0);
    if (s != TRT_OK) return s;
    const trt_tensor *q = &prog->tensors[prog->output_int8_tensor], *out = &prog->tensors[prog->output_tensor];
    /* dequantize binds input and output with the same layout, so element i matches */
    memcpy(out_q, q->data, out->numel);
    memcpy(logits, out->data, out->nbytes);
    *n_out = (int)out->numel;
    return TRT_OK;
}
