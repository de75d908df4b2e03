/*
 * libFuzzer target: a .pte through the runtime's reader and loader, then, if the
 * runtime accepts it, one inference on fixed inputs (native/checked_run.c). Built with
 * AddressSanitizer and UBSan (see CMakeLists.txt): any read outside the program or the
 * arena, any undefined arithmetic, aborts with a report; so does a broken promise of the API.
 *
 * The program gets an exact-size heap copy (16-byte aligned, as the firmware's model
 * slot is), so a read one byte past its end is caught; the arena is exactly what the
 * memory plan asks for, for the same reason.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checked_run.h"
#include "tinyrps_runtime.h"

/* Arenas above this are refused here, as a board's fixed arena would (the real model needs 38 KiB). */
#define MAX_ARENA_BYTES (4u << 20)

static trt_program_storage storage;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    void *pte = NULL;
    if (posix_memalign(&pte, 16, size ? size : 1) != 0)
        abort();
    if (size)
        memcpy(pte, data, size);
    checked_load_and_run(trt_program_init(&storage), pte, size, MAX_ARENA_BYTES, 1);
    free(pte);
    return 0;
}
