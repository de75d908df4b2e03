/*
 * tinyrps runtime: executes an ExecuTorch Cortex-M (CMSIS-NN operator) .pte
 * program with no operating system and no heap.
 *
 * The program bytes are used in place (flash, or memory filled by a loader) and
 * never modified. Every activation lives in one caller-provided arena laid out
 * by the program's own memory plan. Every function returns TRT_OK or a negative
 * trt_status; nothing reads or writes outside the program buffer or the arena.
 *
 * Typical use (all storage static):
 *
 *     static trt_program_storage storage;
 *     static uint8_t arena[64 * 1024] __attribute__((aligned(16)));
 *     trt_program *prog = trt_program_init(&storage);
 *     char why[64];
 *     if (trt_load(prog, pte, pte_len, arena, sizeof arena, why, sizeof why) != TRT_OK) ...
 *     trt_infer(prog, image, out_q, logits, &n_out);
 */
#ifndef TINYRPS_RUNTIME_H
#define TINYRPS_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#define TRT_IMAGE_SIDE 28
#define TRT_IMAGE_BYTES (TRT_IMAGE_SIDE * TRT_IMAGE_SIDE)
#define TRT_MAX_OUTPUTS 16

/* Bytes of static storage a trt_program needs (checked at compile time); its tables hold
 * pointers, so 64-bit hosts need more than a Cortex-M. */
#define TRT_PROGRAM_STORAGE_BYTES (sizeof(void *) <= 4 ? 17408u : 21504u)

typedef enum {
    TRT_OK = 0,
    TRT_ERR_TRUNCATED = -1,        /* an offset or length points outside the program */
    TRT_ERR_BAD_MAGIC = -2,        /* not an ExecuTorch program (file identifier) */
    TRT_ERR_MALFORMED = -3,        /* flatbuffer structure invalid (vtable, index, type) */
    TRT_ERR_UNSUPPORTED_OP = -4,   /* an operator this runtime does not implement */
    TRT_ERR_ARENA_TOO_SMALL = -5,  /* the memory plan does not fit the arena */
    TRT_ERR_BAD_TENSOR = -6,       /* tensor dtype/shape/size inconsistent with its use */
    TRT_ERR_BAD_INPUT = -7,        /* wrong input size, or a NULL argument */
    TRT_ERR_LIMIT = -8,            /* more values / instructions than the runtime's static tables */
} trt_status;

typedef struct trt_program trt_program;  /* opaque */

/* Suitably aligned static storage for one trt_program. */
typedef union {
    uint64_t align_u64;
    double align_double;
    void *align_pointer;
    unsigned char bytes[TRT_PROGRAM_STORAGE_BYTES];
} trt_program_storage;

/* The program object living in `storage` (no allocation). */
trt_program *trt_program_init(trt_program_storage *storage);

/* Static storage the runtime needs for its tables (bytes), independent of the model. */
size_t trt_program_size(void);

/* Parse and validate the whole program (every offset, index, tensor size against
 * the buffer and the arena) before anything runs. On error, detail (if non-NULL)
 * receives a short NUL-terminated reason, e.g. the unsupported operator's name.
 * pte must stay valid and unchanged while the program is in use. */
trt_status trt_load(trt_program *prog, const uint8_t *pte, size_t pte_len,
                    uint8_t *arena, size_t arena_len, char *detail, size_t detail_len);

/* Bytes of arena the loaded program's memory plan needs (0 if nothing is loaded).
 * trt_load with arena == NULL and arena_len == 0 fails with TRT_ERR_ARENA_TOO_SMALL
 * but still reports the need here, so a caller can size its arena. */
size_t trt_arena_needed(const trt_program *prog);

/* Run one inference on a 28x28 uint8 image (converted to float32 x/255 as the
 * program's input). out_q receives the int8 output of the last quantized
 * operator, logits the program's float32 output (dequantized); n_out is set. */
trt_status trt_infer(trt_program *prog, const uint8_t image[TRT_IMAGE_BYTES],
                     int8_t out_q[TRT_MAX_OUTPUTS], float logits[TRT_MAX_OUTPUTS], int *n_out);

/* Multiply-accumulates of one inference (convolutions and linear layers). */
uint64_t trt_macs(const trt_program *prog);

/* Number of kernel calls in the loaded program's instruction chain. */
int trt_instruction_count(const trt_program *prog);

/* Name of kernel call i ("cortex_m::quantized_conv2d"), or NULL if out of range. */
const char *trt_instruction_name(const trt_program *prog, int i);

/* Kernel variant kernel call i runs with, chosen at load from the build's ISA: "mve" (Helium),
 * "dsp" (the DSP extension's SIMD multiply-accumulates) or "c" (portable); NULL if out of range. */
const char *trt_instruction_variant(const trt_program *prog, int i);

/* Run only kernel calls [0, end) of the chain after loading the image, so tools can
 * inspect intermediate tensors; trt_infer is the normal entry point. */
trt_status trt_run_prefix(trt_program *prog, const uint8_t image[TRT_IMAGE_BYTES], int end);

/* Where the output tensor of kernel call i lives after trt_run_prefix(..., i + 1):
 * its bytes (within the arena) and length. */
trt_status trt_instruction_output(const trt_program *prog, int i, const uint8_t **data, size_t *len);

/* Per-layer profile, optional. `counter` is any monotonic count (on the boards: executed
 * instructions); while it is set, trt_infer and trt_run_prefix record how far it advanced
 * across each kernel call. NULL (the default after trt_load) turns profiling off. */
typedef uint64_t (*trt_counter_fn)(void);
void trt_set_counter(trt_program *prog, trt_counter_fn counter);

/* Counter advance of kernel call i in the last profiled run (0 if none ran), and the
 * multiply-accumulates it does per inference. */
trt_status trt_instruction_profile(const trt_program *prog, int i, uint64_t *count, uint64_t *macs);

const char *trt_status_name(trt_status s);

/* How many bytes a program occupies, from its own extended header ("eh00": the flatbuffer part
 * and the segment data behind it), for a loader that knows only where a program starts (a
 * flash partition). `available` bounds what may be read; the result is <= available.
 * TRT_ERR_MALFORMED when the header is missing or does not give the length. */
trt_status trt_program_extent(const uint8_t *pte, size_t available, size_t *length);

#endif
