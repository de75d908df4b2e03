/*
 * libFuzzer target: a .pte through the runtime's reader and loader, then, if the
 * runtime accepts it, one inference on fixed inputs. Built with AddressSanitizer and
 * UBSan (see CMakeLists.txt): any read outside the program or the arena, any undefined
 * arithmetic, aborts with a report; so does a broken promise of the API below.
 *
 * The program gets an exact-size heap copy (16-byte aligned, as the firmware's model
 * slot is), so a read one byte past its end is caught; the arena is exactly what the
 * memory plan asks for, for the same reason.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tinyrps_runtime.h"

/* Arenas above this are refused here, as a board's fixed arena would (the real model needs 38 KiB). */
#define MAX_ARENA_BYTES (4u << 20)

static trt_program_storage storage;

static void *aligned_copy(const uint8_t *data, size_t size)
{
    void *copy = NULL;
    if (posix_memalign(&copy, 16, size ? size : 1) != 0)
        abort();
    if (size)
        memcpy(copy, data, size);
    return copy;
}

static void check_detail(const char *detail, size_t size)
{
    if (memchr(detail, '\0', size) == NULL)
        abort(); /* trt_load promises a NUL-terminated reason */
}

/* Any fixed values in every input (in [0, 1] for float inputs): the same run every time. */
static void fill_inputs(trt_program *prog)
{
    trt_tensor_info t;
    for (int i = 0; i < trt_input_count(prog); i++) {
        if (trt_input(prog, i, &t) != TRT_OK || !t.data)
            abort(); /* a loaded program's inputs are planned, non-empty and in the arena */
        for (size_t e = 0; e < t.numel; e++) {
            uint8_t v = (uint8_t)(e * 7 + e / TRT_IMAGE_SIDE);
            if (t.dtype == TRT_FLOAT32) {
                float f = (float)v / 255.0f;
                memcpy(t.data + e * 4, &f, 4);
            } else {
                memset(t.data + e * t.elem_size, v, t.elem_size);
            }
        }
    }
}

static volatile uint8_t sink;

/* One run, then every byte of every output and raw int8 value read back (the API's promise:
 * they are in the arena, nbytes / numel long). */
static void run_once(trt_program *prog)
{
    fill_inputs(prog);
    if (trt_run(prog) != TRT_OK)
        abort(); /* a loaded program always runs */
    if (trt_output_count(prog) < 1 || trt_output_count(prog) > TRT_MAX_OUTPUTS)
        abort();
    trt_tensor_info t;
    for (int i = 0; i < trt_output_count(prog); i++) {
        if (trt_output(prog, i, &t) != TRT_OK || !t.data || t.nbytes != t.numel * t.elem_size)
            abort();
        for (size_t b = 0; b < t.nbytes; b++)
            sink ^= t.data[b];
        const int8_t *q;
        size_t count;
        if (trt_output_int8(prog, i, &q, &count) == TRT_OK) {
            if (!t.has_int8 || count != t.numel)
                abort();
            for (size_t b = 0; b < count; b++)
                sink ^= (uint8_t)q[b];
        } else if (t.has_int8) {
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *pte = aligned_copy(data, size);
    trt_program *prog = trt_program_init(&storage);
    char detail[64];
    /* first pass sizes the arena, as tinyrps-native does */
    trt_status s = trt_load(prog, pte, size, NULL, 0, detail, sizeof detail);
    check_detail(detail, sizeof detail);
    if (trt_status_name(s) == NULL)
        abort();
    size_t need = trt_arena_needed(prog);
    if (s == TRT_ERR_ARENA_TOO_SMALL && need > 0 && need <= MAX_ARENA_BYTES) {
        void *arena = NULL;
        if (posix_memalign(&arena, 16, need) != 0)
            abort();
        s = trt_load(prog, pte, size, arena, need, detail, sizeof detail);
        check_detail(detail, sizeof detail);
        if (s == TRT_OK)
            run_once(prog);
        free(arena);
    }
    free(pte);
    return 0;
}
