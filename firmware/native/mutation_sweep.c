/*
 * tinyrps-mutate: load thousands of corrupted copies of a program and run every one
 * the runtime accepts. Built with -fsanitize=address,undefined (TRT_SANITIZE=ON) any
 * out-of-bounds access or undefined behaviour aborts the sweep with a report; a clean
 * run prints a JSON summary of how the runtime answered.
 *
 *   tinyrps-mutate MODEL.pte COUNT SEED
 *
 * Each copy gets its own exact-size heap buffer, so the sanitizer sees a read one
 * byte past the (possibly truncated) program, and is loaded and run as the fuzz target
 * does (checked_run.c: an exact-size arena, two runs, every promise of the API checked). Mutations: bit flips, random bytes,
 * "interesting" 32-bit values written over offsets and counts, truncation, bursts of
 * several flips (most of these land in the flatbuffer part, where the structure is),
 * and semantic ones: an extreme value written into a field the reader locates for it
 * (an Int value, an int[] item, a tensor's sizes, dim_order, buffer index or planned
 * offset, a kernel argument, a memory-plan size, a constant-segment offset), which
 * reaches the operators' argument checks with the structure intact.
 */
#define _POSIX_C_SOURCE 200112L  /* posix_memalign */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checked_run.h"
#include "native_io.h"
#include "pte_reader.h"
#include "tinyrps_runtime.h"

static trt_program_storage storage;

static uint64_t rng_state;

static uint64_t next_random(void) {   /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static size_t random_below(size_t n) { return n ? (size_t)(next_random() % n) : 0; }

/* Little-endian u64 at byte 16 of the extended header: where the flatbuffer part ends. */
static size_t flatbuffer_size(const uint8_t *pte, size_t len) {
    if (len < 32 || memcmp(pte + 8, "eh00", 4) != 0) return len;
    uint64_t size = 0;
    for (int i = 0; i < 8; i++) size |= (uint64_t)pte[16 + i] << (8 * i);
    return size > 0 && size <= len ? (size_t)size : len;
}

/* ---- semantic targets: where the reader finds meaningful fields of the original program ---- */

#define MAX_TARGETS 8192
typedef struct {
    size_t pos;
    uint8_t width;   /* bytes: 1, 4 or 8 */
} target;

static target targets[MAX_TARGETS];
static size_t n_targets;

static void add_target(size_t pos, uint8_t width) {
    if (pos != 0 && n_targets < MAX_TARGETS) targets[n_targets++] = (target){pos, width};
}

static void add_vector(const fb_vector *v, uint8_t width) {
    for (uint32_t i = 0; i < v->count; i++) add_target(v->pos + (size_t)i * width, width);
}

static void add_field(const fb_buffer *fb, const fb_table *t, unsigned field, uint8_t width) {
    size_t pos = 0;
    if (fb_field_pos(fb, t, field, width, &pos) == TRT_OK) add_target(pos, width);
}

static void collect_value_targets(const pte_file *f, const pte_plan *p, uint32_t index) {
    const fb_buffer *fb = &f->flat;
    uint8_t kind;
    fb_table val, alloc;
    fb_vector v;
    int present;
    if (pte_value_table(f, p, index, &kind, &val, &present) != TRT_OK || !present) return;
    if (kind == PTE_VALUE_INT) add_field(fb, &val, SCALAR_VALUE, 8);
    if (kind == PTE_VALUE_INT_LIST && fb_vector_field(fb, &val, SCALAR_VALUE, 8, &v) == TRT_OK) add_vector(&v, 8);
    if (kind != PTE_VALUE_TENSOR) return;
    add_field(fb, &val, TENSOR_SCALAR_TYPE, 1);
    add_field(fb, &val, TENSOR_DATA_BUFFER_IDX, 4);
    if (fb_vector_field(fb, &val, TENSOR_SIZES, 4, &v) == TRT_OK) add_vector(&v, 4);
    if (fb_vector_field(fb, &val, TENSOR_DIM_ORDER, 1, &v) == TRT_OK) add_vector(&v, 1);
    if (fb_table_field(fb, &val, TENSOR_ALLOCATION_INFO, &alloc, &present) == TRT_OK && present) {
        add_field(fb, &alloc, ALLOC_MEMORY_ID, 4);
        add_field(fb, &alloc, ALLOC_OFFSET_LOW, 4);
    }
}

static void collect_targets(const uint8_t *pte, size_t len) {
    pte_file f;
    pte_plan p;
    fb_vector calls, args;
    if (pte_open(pte, len, &f) != TRT_OK || pte_plan_at(&f, 0, &p) != TRT_OK) return;
    for (uint32_t i = 0; i < p.values.count; i++) collect_value_targets(&f, &p, i);
    add_vector(&p.memory_sizes, 8);
    add_vector(&p.inputs, 4);
    add_vector(&p.outputs, 4);
    add_vector(&f.constant_offsets, 8);
    if (pte_chain_calls(&f, &p, 0, &calls) != TRT_OK) return;
    for (uint32_t i = 0; i < calls.count; i++) {
        uint8_t kind;
        int32_t op_index;
        if (pte_call_at(&f, &calls, i, &kind, &op_index, &args) == TRT_OK) add_vector(&args, 4);
    }
}

static void write_le(uint8_t *p, uint64_t v, unsigned width) {
    for (unsigned i = 0; i < width; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void mutate_target(uint8_t *buf) {
    static const int64_t extremes[] = {0, 1, -1, 2, 3, 4, 7, 8, 16, 28, 31, 32, 33, 63, 64, 127, 128, -128, -129, 255,
                                       256, 1024, 4096, 65535, 65536, 1 << 24, INT32_MAX, INT32_MIN,
                                       (int64_t)1 << 32, INT64_MAX, INT64_MIN};
    const target *t = &targets[random_below(n_targets)];
    int64_t v = random_below(4) == 0 ? (int64_t)random_below(200) - 100
                                     : extremes[random_below(sizeof extremes / sizeof extremes[0])];
    write_le(buf + t->pos, (uint64_t)v, t->width);
}

static size_t pick_position(size_t flat, size_t len) {
    return random_below(10) < 8 ? random_below(flat) : random_below(len);
}

static void write_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Apply one mutation in place; returns the (possibly shorter) length. */
static size_t mutate(uint8_t *buf, size_t len, size_t flat) {
    static const uint32_t interesting[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000,
                                           0xffff, 0x10000, 0x7fffffff, 0x80000000u, 0xfffffffeu, 0xffffffffu};
    if (n_targets > 0 && random_below(2) == 0) {   /* half the mutations are semantic */
        mutate_target(buf);
        return len;
    }
    switch (random_below(5)) {
    case 0:
        buf[pick_position(flat, len)] ^= (uint8_t)(1u << random_below(8));
        return len;
    case 1:
        buf[pick_position(flat, len)] = (uint8_t)next_random();
        return len;
    case 2: {
        size_t pos = pick_position(flat, len) & ~(size_t)3;
        uint32_t v = random_below(4) == 0 ? (uint32_t)(len + random_below(64))
                                          : interesting[random_below(sizeof interesting / sizeof interesting[0])];
        if (pos + 4 <= len) write_u32(buf + pos, v);
        return len;
    }
    case 3:
        return random_below(len);
    default: {
        size_t flips = 2 + random_below(7);
        for (size_t k = 0; k < flips; k++) buf[pick_position(flat, len)] ^= (uint8_t)(1u << random_below(8));
        return len;
    }
    }
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL.pte COUNT SEED\n", argv[0]);
        return 2;
    }
    size_t len = 0;
    uint8_t *original = read_file_aligned(argv[1], &len);
    long count = strtol(argv[2], NULL, 10);
    rng_state = strtoull(argv[3], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
    if (!original || count < 1) {
        fprintf(stderr, "error: cannot read %s or bad count\n", argv[1]);
        return 2;
    }
    trt_program *prog = trt_program_init(&storage);
    trt_load(prog, original, len, NULL, 0, NULL, 0);
    size_t arena_len = trt_arena_needed(prog);   /* a copy that needs more is refused, as on a board */
    if (arena_len == 0) {
        fprintf(stderr, "error: the unmutated program does not load\n");
        return 2;
    }
    size_t flat = flatbuffer_size(original, len);
    collect_targets(original, len);

    long by_status[16] = {0};
    long loaded = 0;
    for (long m = 0; m < count; m++) {
        uint8_t *copy;
        if (posix_memalign((void **)&copy, 16, len) != 0) return 2;
        memcpy(copy, original, len);
        size_t mutated_len = mutate(copy, len, flat);
        trt_status s = checked_load_and_run(prog, copy, mutated_len, arena_len, 2);
        by_status[-s & 15]++;
        loaded += s == TRT_OK;
        free(copy);
    }
    printf("{\"mutations\": %ld, \"semantic_targets\": %zu, \"loaded_and_ran\": %ld, \"rejected\": {", count,
           n_targets, loaded);
    int first = 1;
    for (int s = 1; s < 16; s++) {
        if (!by_status[s]) continue;
        printf("%s\"%s\": %ld", first ? "" : ", ", trt_status_name((trt_status)-s), by_status[s]);
        first = 0;
    }
    printf("}}\n");
    free(original);
    return 0;
}
