/*
 * libFuzzer target: a .pte through the runtime's reader and loader, then, if the
 * runtime accepts it, one inference. Built with AddressSanitizer and UBSan (see
 * CMakeLists.txt): any read outside the program or the arena, any undefined
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

static void infer_once(trt_program *prog)
{
    uint8_t image[TRT_IMAGE_BYTES];
    for (size_t i = 0; i < sizeof image; i++)
        image[i] = (uint8_t)(i * 7 + i / TRT_IMAGE_SIDE); /* any fixed picture: the same run every time */
    int8_t out_q[TRT_MAX_OUTPUTS];
    float logits[TRT_MAX_OUTPUTS];
    int n_out = -1;
    if (trt_infer(prog, image, out_q, logits, &n_out) == TRT_OK && (n_out < 1 || n_out > TRT_MAX_OUTPUTS))
        abort(); /* a successful inference has between 1 and TRT_MAX_OUTPUTS outputs */
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
            infer_once(prog);
        free(arena);
    }
    free(pte);
    return 0;
}
