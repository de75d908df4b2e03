/*
 * `tinyrps-native dump`: the program as pte_reader sees it, as JSON, so tests can
 * compare every parsed field with ExecuTorch's own deserializer. Constant buffers
 * are summarised by length and FNV-1a 64-bit hash.
 */
#include "pte_dump.h"

#include <math.h>
#include <stdio.h>

#include "pte_reader.h"

static uint64_t fnv1a64(const uint8_t *data, size_t len) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++) h = (h ^ data[i]) * 1099511628211ull;
    return h;
}

static void print_i32_vector(const fb_buffer *fb, const fb_vector *v) {
    printf("[");
    for (uint32_t i = 0; i < v->count; i++) printf("%s%ld", i ? ", " : "", (long)fb_vector_i32(fb, v, i));
    printf("]");
}

static void print_string(const char *s, uint32_t len) {
    printf("\"");
    for (uint32_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f) printf("\\u%04x", c);
        else putchar(c);
    }
    printf("\"");
}

static int print_value(const pte_file *f, const pte_plan *p, uint32_t index) {
    pte_value v;
    if (pte_value_at(f, p, index, &v) != TRT_OK) return -1;
    const fb_buffer *fb = &f->flat;
    switch (v.kind) {
    case PTE_VALUE_NULL: printf("{\"kind\": \"null\"}"); break;
    case PTE_VALUE_INT: printf("{\"kind\": \"int\", \"value\": %lld}", (long long)v.int_val); break;
    case PTE_VALUE_BOOL: printf("{\"kind\": \"bool\", \"value\": %s}", v.bool_val ? "true" : "false"); break;
    case PTE_VALUE_DOUBLE:
        if (isfinite(v.double_val)) printf("{\"kind\": \"double\", \"value\": %.17g}", v.double_val);
        else printf("{\"kind\": \"double\", \"value\": null}");
        break;
    case PTE_VALUE_INT_LIST:
        printf("{\"kind\": \"int_list\", \"items\": [");
        for (uint32_t i = 0; i < v.list.count; i++) printf("%s%lld", i ? ", " : "", (long long)fb_vector_i64(fb, &v.list, i));
        printf("]}");
        break;
    case PTE_VALUE_TENSOR_LIST:
        printf("{\"kind\": \"tensor_list\", \"items\": [");
        for (uint32_t i = 0; i < v.list.count; i++) printf("%s%ld", i ? ", " : "", (long)fb_vector_i32(fb, &v.list, i));
        printf("]}");
        break;
    case PTE_VALUE_OPTIONAL_TENSOR_LIST: {   /* items like a Tensor[]'s, a None one negative or a Null value */
        uint8_t kind;
        fb_table val;
        fb_vector items;
        int present;
        if (pte_value_table(f, p, index, &kind, &val, &present) != TRT_OK || !present ||
            fb_vector_field(fb, &val, SCALAR_VALUE, 4, &items) != TRT_OK)
            return -1;
        printf("{\"kind\": \"optional_tensor_list\", \"items\": [");
        for (uint32_t i = 0; i < items.count; i++) printf("%s%ld", i ? ", " : "", (long)fb_vector_i32(fb, &items, i));
        printf("]}");
        break;
    }
    case PTE_VALUE_TENSOR: {
        const pte_tensor *t = &v.tensor;
        printf("{\"kind\": \"tensor\", \"scalar_type\": %d, \"sizes\": ", t->scalar_type);
        print_i32_vector(fb, &t->sizes);
        printf(", \"dim_order\": [");
        for (uint32_t i = 0; i < t->dim_order.count; i++) printf("%s%u", i ? ", " : "", fb_vector_u8(fb, &t->dim_order, i));
        printf("], \"data_buffer_idx\": %lu, \"allocation\": ", (unsigned long)t->data_buffer_idx);
        if (t->has_allocation) printf("[%lu, %llu]}", (unsigned long)t->memory_id, (unsigned long long)t->memory_offset);
        else printf("null}");
        break;
    }
    default: printf("{\"kind\": \"other\", \"tag\": %u}", v.kind); break;
    }
    return 0;
}

static int print_plan(const pte_file *f, uint32_t index) {
    pte_plan p;
    const fb_buffer *fb = &f->flat;
    if (pte_plan_at(f, index, &p) != TRT_OK) return -1;
    printf("{\"name\": ");
    print_string(p.name, p.name_len);
    printf(", \"values\": [");
    for (uint32_t i = 0; i < p.values.count; i++) {
        if (i) printf(", ");
        if (print_value(f, &p, i) != 0) return -1;
    }
    printf("], \"inputs\": ");
    print_i32_vector(fb, &p.inputs);
    printf(", \"outputs\": ");
    print_i32_vector(fb, &p.outputs);
    printf(", \"operators\": [");
    for (uint32_t i = 0; i < p.operators.count; i++) {
        const char *name, *overload;
        uint32_t name_len, overload_len;
        if (pte_operator_at(f, &p, i, &name, &name_len, &overload, &overload_len) != TRT_OK) return -1;
        printf("%s[", i ? ", " : "");
        print_string(name, name_len);
        printf(", ");
        print_string(overload, overload_len);
        printf("]");
    }
    printf("], \"memory_sizes\": [");
    for (uint32_t i = 0; i < p.memory_sizes.count; i++) printf("%s%lld", i ? ", " : "", (long long)fb_vector_i64(fb, &p.memory_sizes, i));
    printf("], \"chains\": [");
    for (uint32_t c = 0; c < p.chains.count; c++) {
        fb_vector calls;
        if (pte_chain_calls(f, &p, c, &calls) != TRT_OK) return -1;
        printf("%s[", c ? ", " : "");
        for (uint32_t i = 0; i < calls.count; i++) {
            uint8_t kind;
            int32_t op_index;
            fb_vector args;
            if (pte_call_at(f, &calls, i, &kind, &op_index, &args) != TRT_OK) return -1;
            printf("%s{\"kind\": %u, \"op_index\": %ld, \"args\": ", i ? ", " : "", kind, (long)op_index);
            print_i32_vector(fb, &args);
            printf("}");
        }
        printf("]");
    }
    printf("]}");
    return 0;
}

/* A program without segment data whose constant offsets are all 0 (an Ethos-U program: its data is
 * inline in the delegate, and buffer 0 is the empty one every program has) has only empty buffers. */
static int no_constant_data(const pte_file *f) {
    if (f->segment_base != 0 || f->constant_offsets.count == 0) return 0;
    for (uint32_t i = 0; i < f->constant_offsets.count; i++)
        if (fb_vector_u64(&f->flat, &f->constant_offsets, i) != 0) return 0;
    return 1;
}

int dump_program(const uint8_t *data, size_t len) {
    pte_file f;
    trt_status s = pte_open(data, len, &f);
    if (s != TRT_OK) {
        fprintf(stderr, "error: %s\n", trt_status_name(s));
        return 3;
    }
    printf("{\"program_size\": %zu, \"segment_base\": %zu, \"plans\": [", f.flat.len, f.segment_base);
    for (uint32_t i = 0; i < f.execution_plans.count; i++) {
        if (i) printf(", ");
        if (print_plan(&f, i) != 0) {
            fprintf(stderr, "error: malformed execution plan\n");
            return 3;
        }
    }
    uint32_t n_constants = f.constant_offsets.count ? f.constant_offsets.count : f.constant_buffers.count;
    printf("], \"constant_buffers\": [");
    for (uint32_t i = 0; i < n_constants; i++) {
        const uint8_t *bytes;
        size_t n;
        if (no_constant_data(&f)) {
            bytes = f.flat.data, n = 0;
        } else if (pte_constant(&f, i, &bytes, &n) != TRT_OK) {
            fprintf(stderr, "error: bad constant buffer %lu\n", (unsigned long)i);
            return 3;
        }
        printf("%s{\"len\": %zu, \"fnv1a64\": \"%016llx\"}", i ? ", " : "", n, (unsigned long long)fnv1a64(bytes, n));
    }
    printf("]}\n");
    return 0;
}
