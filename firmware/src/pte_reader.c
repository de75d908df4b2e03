/*
 * Bounds-checked FlatBuffer and ExecuTorch program reader (see pte_reader.h).
 *
 * Every position is checked with the pattern `off <= len && n <= len - off`,
 * which cannot overflow. Multi-byte values are assembled byte by byte
 * (little-endian, as FlatBuffers store them), so no access is ever unaligned.
 */
#include "pte_reader.h"

#include <string.h>

#include "load_code.h"

TRT_LOAD_CODE_BEGIN

/* Extended header "eh00": magic, u32 length, u64 program size, u64 segment base, [u64 segment size]. */
#define EH_POS 8
#define EH_MIN_LEN 24
#define EH_FULL_LEN 32

/* ---- raw little-endian reads (callers have checked the range) ---------------------------- */

static uint64_t read_le(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint16_t rd16(const uint8_t *p) { return (uint16_t)read_le(p, 2); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)read_le(p, 4); }
static uint64_t rd64(const uint8_t *p) { return read_le(p, 8); }

/* Two's complement reinterpretation without implementation-defined conversions. */
static int32_t as_i32(uint32_t u) { return u <= INT32_MAX ? (int32_t)u : -(int32_t)(~u) - 1; }
static int64_t as_i64(uint64_t u) { return u <= INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1; }

static int in_range(size_t len, size_t off, size_t n) { return off <= len && n <= len - off; }

int pte_text_is(const void *bytes, size_t n, const char *text) {
    const char *b = (const char *)bytes;
    for (size_t i = 0; i < n; i++)
        if (text[i] == '\0' || b[i] != text[i]) return 0;
    return text[n] == '\0';
}

/* ---- FlatBuffer primitives ------------------------------------------------------------------ */

trt_status fb_table_at(const fb_buffer *fb, size_t pos, fb_table *out) {
    if (!in_range(fb->len, pos, 4)) return TRT_ERR_TRUNCATED;
    /* the vtable sits at pos - soffset (soffset is signed: before or after the table) */
    int64_t vt = (int64_t)pos - (int64_t)as_i32(rd32(fb->data + pos));
    if (vt < 0 || !in_range(fb->len, (size_t)vt, 4)) return TRT_ERR_TRUNCATED;
    out->pos = pos;
    out->vtable = (size_t)vt;
    out->vtable_len = rd16(fb->data + out->vtable);
    out->table_len = rd16(fb->data + out->vtable + 2);
    if (out->vtable_len < 4 || (out->vtable_len & 1) || out->table_len < 4) return TRT_ERR_MALFORMED;
    if (!in_range(fb->len, out->vtable, out->vtable_len) || !in_range(fb->len, pos, out->table_len))
        return TRT_ERR_TRUNCATED;
    return TRT_OK;
}

/* Position of a field of `size` bytes, or 0 if absent (position 0 is never a field: the root
 * offset lives there). */
trt_status fb_field_pos(const fb_buffer *fb, const fb_table *t, unsigned field, size_t size, size_t *pos) {
    size_t slot = 4 + 2 * (size_t)field;
    *pos = 0;
    if (slot + 2 > t->vtable_len) return TRT_OK;
    uint16_t voff = rd16(fb->data + t->vtable + slot);
    if (voff == 0) return TRT_OK;
    /* Checked against the buffer, as FlatBuffers' own verifier does: the object size a vtable
     * records can be smaller than its fields reach (ExecuTorch's DataSegment tables show it). */
    if (voff < 4) return TRT_ERR_MALFORMED;
    if (!in_range(fb->len, t->pos + voff, size)) return TRT_ERR_TRUNCATED;
    *pos = t->pos + voff;
    return TRT_OK;
}

#define SCALAR_FIELD(fn, type, size, convert)                                                                \
    trt_status fn(const fb_buffer *fb, const fb_table *t, unsigned field, type dflt, type *out) {            \
        size_t pos;                                                                                          \
        trt_status s = fb_field_pos(fb, t, field, size, &pos);                                               \
        if (s != TRT_OK) return s;                                                                           \
        *out = pos ? convert(read_le(fb->data + pos, size)) : dflt;                                          \
        return TRT_OK;                                                                                       \
    }

#define AS_U8(v) ((uint8_t)(v))
#define AS_U32(v) ((uint32_t)(v))
#define AS_I32(v) as_i32((uint32_t)(v))
#define AS_I64(v) as_i64(v)
#define AS_U64(v) (v)
SCALAR_FIELD(fb_u8, uint8_t, 1, AS_U8)
SCALAR_FIELD(fb_u32, uint32_t, 4, AS_U32)
SCALAR_FIELD(fb_i32, int32_t, 4, AS_I32)
SCALAR_FIELD(fb_i64, int64_t, 8, AS_I64)
SCALAR_FIELD(fb_u64, uint64_t, 8, AS_U64)

trt_status fb_f64(const fb_buffer *fb, const fb_table *t, unsigned field, double dflt, double *out) {
    size_t pos;
    trt_status s = fb_field_pos(fb, t, field, 8, &pos);
    if (s != TRT_OK) return s;
    if (pos == 0) {
        *out = dflt;
        return TRT_OK;
    }
    uint64_t bits = rd64(fb->data + pos);
    memcpy(out, &bits, sizeof *out);  /* IEEE-754 binary64, same byte order as the integers */
    return TRT_OK;
}

/* Follow a uoffset stored at `pos` (relative to itself). */
static trt_status follow(const fb_buffer *fb, size_t pos, size_t *target) {
    if (!in_range(fb->len, pos, 4)) return TRT_ERR_TRUNCATED;
    uint32_t rel = rd32(fb->data + pos);
    if (rel == 0 || !in_range(fb->len, pos, rel)) return TRT_ERR_TRUNCATED;
    *target = pos + rel;
    return TRT_OK;
}

static trt_status vector_at(const fb_buffer *fb, size_t pos, size_t elem_size, fb_vector *out) {
    if (!in_range(fb->len, pos, 4)) return TRT_ERR_TRUNCATED;
    uint32_t count = rd32(fb->data + pos);
    size_t first = pos + 4;
    if ((size_t)count > (fb->len - first) / elem_size) return TRT_ERR_TRUNCATED;
    out->pos = first;
    out->count = count;
    return TRT_OK;
}

trt_status fb_table_field(const fb_buffer *fb, const fb_table *t, unsigned field, fb_table *out, int *present) {
    size_t pos, target;
    trt_status s = fb_field_pos(fb, t, field, 4, &pos);
    if (s != TRT_OK) return s;
    if (present) *present = pos != 0;
    if (pos == 0) return present ? TRT_OK : TRT_ERR_MALFORMED;
    if ((s = follow(fb, pos, &target)) != TRT_OK) return s;
    return fb_table_at(fb, target, out);
}

trt_status fb_vector_field(const fb_buffer *fb, const fb_table *t, unsigned field, size_t elem_size,
                           fb_vector *out) {
    size_t pos, target;
    trt_status s = fb_field_pos(fb, t, field, 4, &pos);
    out->pos = 0;
    out->count = 0;
    if (s != TRT_OK || pos == 0) return s;
    if ((s = follow(fb, pos, &target)) != TRT_OK) return s;
    return vector_at(fb, target, elem_size, out);
}

trt_status fb_string_field(const fb_buffer *fb, const fb_table *t, unsigned field,
                           const char **str, uint32_t *len) {
    fb_vector v;
    trt_status s = fb_vector_field(fb, t, field, 1, &v);
    if (s != TRT_OK) return s;
    if (v.pos == 0) { *str = ""; *len = 0; return TRT_OK; }
    /* FlatBuffers strings carry a NUL after their bytes; require it so they can be printed */
    if (!in_range(fb->len, v.pos, (size_t)v.count + 1) || fb->data[v.pos + v.count] != 0) return TRT_ERR_MALFORMED;
    *str = (const char *)(fb->data + v.pos);
    *len = v.count;
    return TRT_OK;
}

trt_status fb_vector_table(const fb_buffer *fb, const fb_vector *v, uint32_t index, fb_table *out) {
    size_t target;
    if (index >= v->count) return TRT_ERR_MALFORMED;
    trt_status s = follow(fb, v->pos + 4 * (size_t)index, &target);
    if (s != TRT_OK) return s;
    return fb_table_at(fb, target, out);
}

/* Element reads: fb_vector_field checked count * size against the buffer, so index < count
 * is in range; an out-of-range index reads as 0 rather than outside the buffer. */
int32_t fb_vector_i32(const fb_buffer *fb, const fb_vector *v, uint32_t index) {
    return index < v->count ? as_i32(rd32(fb->data + v->pos + 4 * (size_t)index)) : 0;
}

int64_t fb_vector_i64(const fb_buffer *fb, const fb_vector *v, uint32_t index) {
    return index < v->count ? as_i64(rd64(fb->data + v->pos + 8 * (size_t)index)) : 0;
}

uint64_t fb_vector_u64(const fb_buffer *fb, const fb_vector *v, uint32_t index) {
    return index < v->count ? rd64(fb->data + v->pos + 8 * (size_t)index) : 0;
}

uint8_t fb_vector_u8(const fb_buffer *fb, const fb_vector *v, uint32_t index) {
    return index < v->count ? fb->data[v->pos + index] : 0;
}

/* ---- ExecuTorch program ------------------------------------------------------------------------ */

trt_status pte_read_extended_header(const uint8_t *data, size_t len, pte_extended_header *h) {
    memset(h, 0, sizeof *h);
    if (len < EH_POS + EH_MIN_LEN || !pte_text_is(data + EH_POS, 4, "eh00")) return TRT_OK;
    h->present = 1;
    h->header_len = rd32(data + EH_POS + 4);
    h->program_size = rd64(data + EH_POS + 8);
    h->segment_base = rd64(data + EH_POS + 16);
    h->has_segment_size = h->header_len >= EH_FULL_LEN && len >= EH_POS + EH_FULL_LEN;
    if (h->has_segment_size) h->segment_size = rd64(data + EH_POS + 24);
    if (h->header_len < EH_MIN_LEN) return TRT_ERR_MALFORMED;
    if (h->program_size < EH_POS + EH_MIN_LEN) return TRT_ERR_TRUNCATED;
    return TRT_OK;
}

static trt_status read_extended_header(const uint8_t *data, size_t len, pte_file *f) {
    pte_extended_header h;
    f->flat.len = len;
    f->segment_base = 0;
    f->segment_data_len = 0;
    trt_status s = pte_read_extended_header(data, len, &h);
    if (s != TRT_OK || !h.present) return s;
    if (h.program_size > len) return TRT_ERR_TRUNCATED;
    f->flat.len = (size_t)h.program_size;
    if (h.segment_base == 0) return TRT_OK;
    if (h.segment_base < h.program_size || h.segment_base > len) return TRT_ERR_TRUNCATED;
    f->segment_base = (size_t)h.segment_base;
    f->segment_data_len = len - (size_t)h.segment_base;
    if (h.segment_size != 0) {
        if (h.segment_size > f->segment_data_len) return TRT_ERR_TRUNCATED;
        f->segment_data_len = (size_t)h.segment_size;
    }
    return TRT_OK;
}

trt_status trt_program_extent(const uint8_t *pte, size_t available, size_t *length) {
    pte_extended_header h;
    if (!pte || !length) return TRT_ERR_BAD_INPUT;
    *length = 0;
    trt_status s = pte_read_extended_header(pte, available, &h);
    if (s != TRT_OK) return s;
    if (!h.present) return TRT_ERR_MALFORMED;
    uint64_t end = h.program_size;
    if (h.segment_base != 0) {
        /* a 24-byte header does not say where the segment data ends */
        if (!h.has_segment_size) return TRT_ERR_MALFORMED;
        if (h.segment_base < h.program_size || h.segment_size > UINT64_MAX - h.segment_base) return TRT_ERR_MALFORMED;
        end = h.segment_base + h.segment_size;
    }
    if (end > available) return TRT_ERR_TRUNCATED;
    *length = (size_t)end;
    return TRT_OK;
}

trt_status pte_open(const uint8_t *data, size_t len, pte_file *f) {
    trt_status s;
    memset(f, 0, sizeof *f);
    if (data == NULL || len < 8) return TRT_ERR_TRUNCATED;
    if (!pte_text_is(data + 4, 4, "ET12")) return TRT_ERR_BAD_MAGIC;
    f->whole.data = data;
    f->whole.len = len;
    f->flat.data = data;
    if ((s = read_extended_header(data, len, f)) != TRT_OK) return s;

    size_t root;
    if ((s = follow(&f->flat, 0, &root)) != TRT_OK) return s;
    if ((s = fb_table_at(&f->flat, root, &f->program)) != TRT_OK) return s;
    const fb_buffer *fb = &f->flat;
    if ((s = fb_vector_field(fb, &f->program, PROGRAM_EXECUTION_PLAN, 4, &f->execution_plans)) != TRT_OK ||
        (s = fb_vector_field(fb, &f->program, PROGRAM_CONSTANT_BUFFER, 4, &f->constant_buffers)) != TRT_OK ||
        (s = fb_vector_field(fb, &f->program, PROGRAM_SEGMENTS, 4, &f->segments)) != TRT_OK)
        return s;

    fb_table subsegment;
    int present;
    if ((s = fb_table_field(fb, &f->program, PROGRAM_CONSTANT_SEGMENT, &subsegment, &present)) != TRT_OK) return s;
    if (present) {
        if ((s = fb_u32(fb, &subsegment, SUBSEGMENT_INDEX, 0, &f->constant_segment)) != TRT_OK ||
            (s = fb_vector_field(fb, &subsegment, SUBSEGMENT_OFFSETS, 8, &f->constant_offsets)) != TRT_OK)
            return s;
    }
    if (f->execution_plans.count == 0) return TRT_ERR_MALFORMED;
    return TRT_OK;
}

trt_status pte_plan_at(const pte_file *f, uint32_t index, pte_plan *p) {
    const fb_buffer *fb = &f->flat;
    trt_status s;
    memset(p, 0, sizeof *p);
    if ((s = fb_vector_table(fb, &f->execution_plans, index, &p->table)) != TRT_OK) return s;
    const fb_table *t = &p->table;
    if ((s = fb_string_field(fb, t, PLAN_NAME, &p->name, &p->name_len)) != TRT_OK ||
        (s = fb_vector_field(fb, t, PLAN_VALUES, 4, &p->values)) != TRT_OK ||
        (s = fb_vector_field(fb, t, PLAN_INPUTS, 4, &p->inputs)) != TRT_OK ||
        (s = fb_vector_field(fb, t, PLAN_OUTPUTS, 4, &p->outputs)) != TRT_OK ||
        (s = fb_vector_field(fb, t, PLAN_CHAINS, 4, &p->chains)) != TRT_OK ||
        (s = fb_vector_field(fb, t, PLAN_OPERATORS, 4, &p->operators)) != TRT_OK ||
        (s = fb_vector_field(fb, t, PLAN_DELEGATES, 4, &p->delegates)) != TRT_OK ||
        (s = fb_vector_field(fb, t, PLAN_MEMORY_SIZES, 8, &p->memory_sizes)) != TRT_OK)
        return s;
    return TRT_OK;
}

static trt_status read_tensor(const fb_buffer *fb, const fb_table *t, pte_tensor *out) {
    trt_status s;
    uint8_t scalar_type;
    int32_t storage_offset;
    fb_table alloc, extra;
    int has_alloc;
    if ((s = fb_u8(fb, t, TENSOR_SCALAR_TYPE, 0, &scalar_type)) != TRT_OK ||
        (s = fb_i32(fb, t, TENSOR_STORAGE_OFFSET, 0, &storage_offset)) != TRT_OK ||
        (s = fb_vector_field(fb, t, TENSOR_SIZES, 4, &out->sizes)) != TRT_OK ||
        (s = fb_vector_field(fb, t, TENSOR_DIM_ORDER, 1, &out->dim_order)) != TRT_OK ||
        (s = fb_u32(fb, t, TENSOR_DATA_BUFFER_IDX, 0, &out->data_buffer_idx)) != TRT_OK ||
        (s = fb_u8(fb, t, TENSOR_SHAPE_DYNAMISM, 0, &out->shape_dynamism)) != TRT_OK ||
        (s = fb_table_field(fb, t, TENSOR_ALLOCATION_INFO, &alloc, &has_alloc)) != TRT_OK ||
        (s = fb_table_field(fb, t, TENSOR_EXTRA_INFO, &extra, &out->has_extra_info)) != TRT_OK)
        return s;
    if (storage_offset != 0) return TRT_ERR_BAD_TENSOR;  /* views into other storage: never emitted */
    out->scalar_type = (int8_t)scalar_type;
    out->has_allocation = has_alloc;
    out->memory_id = 0;
    out->memory_offset = 0;
    if (has_alloc) {
        uint32_t low, high;
        if ((s = fb_u32(fb, &alloc, ALLOC_MEMORY_ID, 0, &out->memory_id)) != TRT_OK ||
            (s = fb_u32(fb, &alloc, ALLOC_OFFSET_LOW, 0, &low)) != TRT_OK ||
            (s = fb_u32(fb, &alloc, ALLOC_OFFSET_HIGH, 0, &high)) != TRT_OK)
            return s;
        out->memory_offset = ((uint64_t)high << 32) | low;
    }
    return TRT_OK;
}

trt_status pte_value_table(const pte_file *f, const pte_plan *p, uint32_t index, uint8_t *kind, fb_table *val,
                           int *present) {
    const fb_buffer *fb = &f->flat;
    fb_table evalue;
    trt_status s;
    if ((s = fb_vector_table(fb, &p->values, index, &evalue)) != TRT_OK) return s;
    if ((s = fb_u8(fb, &evalue, EVALUE_TYPE, 0, kind)) != TRT_OK) return s;
    if (*kind == PTE_VALUE_NONE) return TRT_ERR_MALFORMED;
    return fb_table_field(fb, &evalue, EVALUE_VAL, val, present);
}

trt_status pte_value_at(const pte_file *f, const pte_plan *p, uint32_t index, pte_value *out) {
    const fb_buffer *fb = &f->flat;
    fb_table val;
    trt_status s;
    int present;
    memset(out, 0, sizeof *out);
    if ((s = pte_value_table(f, p, index, &out->kind, &val, &present)) != TRT_OK) return s;
    if (!present) return out->kind == PTE_VALUE_NULL ? TRT_OK : TRT_ERR_MALFORMED;
    switch (out->kind) {
    case PTE_VALUE_INT:
        return fb_i64(fb, &val, SCALAR_VALUE, 0, &out->int_val);
    case PTE_VALUE_BOOL: {
        uint8_t b = 0;
        s = fb_u8(fb, &val, SCALAR_VALUE, 0, &b);
        out->bool_val = b != 0;
        return s;
    }
    case PTE_VALUE_DOUBLE:
        return fb_f64(fb, &val, SCALAR_VALUE, 0.0, &out->double_val);
    case PTE_VALUE_INT_LIST:
        return fb_vector_field(fb, &val, SCALAR_VALUE, 8, &out->list);
    case PTE_VALUE_TENSOR_LIST:   /* items: [int] EValue indices, the first field like IntList's */
        return fb_vector_field(fb, &val, SCALAR_VALUE, 4, &out->list);
    case PTE_VALUE_TENSOR:
        return read_tensor(fb, &val, &out->tensor);
    default:
        return TRT_OK;  /* kinds the runtime never accepts as arguments: the caller rejects them */
    }
}

trt_status pte_operator_at(const pte_file *f, const pte_plan *p, uint32_t index,
                           const char **name, uint32_t *name_len, const char **overload, uint32_t *overload_len) {
    fb_table op;
    trt_status s;
    if ((s = fb_vector_table(&f->flat, &p->operators, index, &op)) != TRT_OK) return s;
    if ((s = fb_string_field(&f->flat, &op, OPERATOR_NAME, name, name_len)) != TRT_OK) return s;
    return fb_string_field(&f->flat, &op, OPERATOR_OVERLOAD, overload, overload_len);
}

trt_status pte_delegate_id(const pte_file *f, const pte_plan *p, uint32_t index, const char **id, uint32_t *len) {
    fb_table delegate;
    trt_status s;
    if ((s = fb_vector_table(&f->flat, &p->delegates, index, &delegate)) != TRT_OK) return s;
    return fb_string_field(&f->flat, &delegate, DELEGATE_ID, id, len);
}

trt_status pte_chain_calls(const pte_file *f, const pte_plan *p, uint32_t chain, fb_vector *out) {
    fb_table c;
    trt_status s;
    if ((s = fb_vector_table(&f->flat, &p->chains, chain, &c)) != TRT_OK) return s;
    return fb_vector_field(&f->flat, &c, CHAIN_INSTRUCTIONS, 4, out);
}

trt_status pte_call_at(const pte_file *f, const fb_vector *calls, uint32_t index,
                       uint8_t *kind, int32_t *op_index, fb_vector *args) {
    const fb_buffer *fb = &f->flat;
    fb_table entry, call;
    trt_status s;
    int present;
    *op_index = -1;
    args->pos = 0;
    args->count = 0;
    if ((s = fb_vector_table(fb, calls, index, &entry)) != TRT_OK) return s;
    if ((s = fb_u8(fb, &entry, INSTRUCTION_TYPE, 0, kind)) != TRT_OK) return s;
#if TRT_ETHOS_U
    if (*kind != PTE_KERNEL_CALL && *kind != PTE_DELEGATE_CALL) return TRT_OK;   /* a DelegateCall: the same fields */
#else
    if (*kind != PTE_KERNEL_CALL) return TRT_OK;
#endif
    if ((s = fb_table_field(fb, &entry, INSTRUCTION_ARGS, &call, &present)) != TRT_OK) return s;
    if (!present) return TRT_ERR_MALFORMED;
    if ((s = fb_i32(fb, &call, KERNEL_CALL_OP_INDEX, 0, op_index)) != TRT_OK) return s;
    return fb_vector_field(fb, &call, KERNEL_CALL_ARGS, 4, args);
}

static trt_status constant_from_segment(const pte_file *f, uint32_t index, const uint8_t **data, size_t *len) {
    fb_table segment;
    uint64_t seg_offset, seg_size;
    trt_status s;
    if (f->segment_base == 0) return TRT_ERR_MALFORMED;  /* offsets into segments, but no segment data */
    if ((s = fb_vector_table(&f->flat, &f->segments, f->constant_segment, &segment)) != TRT_OK) return s;
    if ((s = fb_u64(&f->flat, &segment, SEGMENT_OFFSET, 0, &seg_offset)) != TRT_OK ||
        (s = fb_u64(&f->flat, &segment, SEGMENT_SIZE, 0, &seg_size)) != TRT_OK)
        return s;
    if (seg_offset > f->segment_data_len || seg_size > f->segment_data_len - seg_offset) return TRT_ERR_TRUNCATED;
    if (index >= f->constant_offsets.count) return TRT_ERR_MALFORMED;
    /* buffer i spans [offsets[i], offsets[i+1]) -- padding included -- and the last one runs to
     * the end of the segment */
    uint64_t start = fb_vector_u64(&f->flat, &f->constant_offsets, index);
    uint64_t end = index + 1 < f->constant_offsets.count
                       ? fb_vector_u64(&f->flat, &f->constant_offsets, index + 1) : seg_size;
    if (start > end || end > seg_size) return TRT_ERR_TRUNCATED;
    *data = f->whole.data + f->segment_base + (size_t)seg_offset + (size_t)start;
    *len = (size_t)(end - start);
    return TRT_OK;
}

trt_status pte_constant(const pte_file *f, uint32_t index, const uint8_t **data, size_t *len) {
    if (f->constant_offsets.count > 0) return constant_from_segment(f, index, data, len);
    fb_table buffer;
    fb_vector storage;
    trt_status s;
    if ((s = fb_vector_table(&f->flat, &f->constant_buffers, index, &buffer)) != TRT_OK) return s;
    if ((s = fb_vector_field(&f->flat, &buffer, BUFFER_STORAGE, 1, &storage)) != TRT_OK) return s;
    *data = storage.count ? f->flat.data + storage.pos : f->flat.data;
    *len = storage.count;
    return TRT_OK;
}

TRT_LOAD_CODE_END
