/* One program loaded and run with every promise of the API checked (checked_run.h). */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include "checked_run.h"

#include <stdlib.h>
#include <string.h>

static void check_detail(const char *detail, size_t size) {
    if (memchr(detail, '\0', size) == NULL) abort();   /* trt_load promises a NUL-terminated reason */
}

/* Every input filled: run 0 with a pattern (as values in [0, 1] for float inputs, as bytes for any
 * other dtype), later runs with zeros. */
static void fill_inputs(trt_program *prog, int run) {
    trt_tensor_info t;
    for (int i = 0; i < trt_input_count(prog); i++) {
        if (trt_input(prog, i, &t) != TRT_OK || !t.data) abort();   /* a loaded program's inputs are in the arena */
        for (size_t e = 0; e < t.numel; e++) {
            const uint8_t v = run == 0 ? (uint8_t)(e * 37 + 11) : 0;
            if (t.dtype == TRT_FLOAT32) {
                const float f = (float)v / 255.0f;
                memcpy(t.data + e * 4, &f, 4);
            } else {
                memset(t.data + e * t.elem_size, v, t.elem_size);
            }
        }
    }
}

/* Every byte of every output and raw int8 value read (the API's promise: they are in the arena,
 * nbytes / numel long), so that a bad pointer is caught by the sanitizers. */
static volatile uint8_t sink;
static void read_outputs(const trt_program *prog) {
    trt_tensor_info t;
    if (trt_output_count(prog) < 1 || trt_output_count(prog) > TRT_MAX_OUTPUTS) abort();
    for (int i = 0; i < trt_output_count(prog); i++) {
        if (trt_output(prog, i, &t) != TRT_OK || !t.data || t.nbytes != t.numel * t.elem_size) abort();
        for (size_t b = 0; b < t.nbytes; b++) sink ^= t.data[b];
        const int8_t *q;
        size_t count;
        if (trt_output_int8(prog, i, &q, &count) == TRT_OK) {
            if (!t.has_int8 || count != t.numel) abort();
            for (size_t b = 0; b < count; b++) sink ^= (uint8_t)q[b];
        } else if (t.has_int8) {
            abort();
        }
    }
}

trt_status checked_load_and_run(trt_program *prog, const uint8_t *pte, size_t len, size_t max_arena, int runs) {
    char detail[96];
    trt_status s = trt_load(prog, pte, len, NULL, 0, detail, sizeof detail);
    check_detail(detail, sizeof detail);
    if (trt_status_name(s) == NULL) abort();
    const size_t need = trt_arena_needed(prog);
    if (s != TRT_ERR_ARENA_TOO_SMALL || need == 0 || need > max_arena) return s;
    void *arena = NULL;
    if (posix_memalign(&arena, 16, need) != 0) abort();
    s = trt_load(prog, pte, len, arena, need, detail, sizeof detail);
    check_detail(detail, sizeof detail);
    for (int run = 0; run < runs && s == TRT_OK; run++) {
        fill_inputs(prog, run);
        if (trt_run(prog) != TRT_OK) abort();   /* a loaded program always runs */
        read_outputs(prog);
    }
    free(arena);
    return s;
}
