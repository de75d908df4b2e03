/*
 * tinyrps-api-checks MODEL.pte: the runtime API's contract on a valid program --
 * argument checks, alignment, arena sizing, reloads, detail buffers, repeatable
 * inference. Prints one line per check; exit 0 only if all hold.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "native_io.h"
#include "tinyrps_image.h"
#include "tinyrps_runtime.h"

static trt_program_storage storage;
static int failures;

/* A counter that advances by one per read: each kernel call then costs exactly 1. */
static uint64_t ticks;
static uint64_t tick(void) { return ticks++; }

static void check(int ok, const char *what) {
    printf("%s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) failures++;
}

/* trt_infer, then the raw int8 values of its output (trt_output_int8), as the firmware's image command. */
static trt_status infer_with_int8(trt_program *prog, const uint8_t *image, int8_t q[16], float logits[16], size_t *n,
                                  size_t *n_q) {
    const int8_t *raw = NULL;
    trt_status s = trt_infer(prog, image, logits, 16, n);
    if (s != TRT_OK || (s = trt_output_int8(prog, 0, &raw, n_q)) != TRT_OK) return s;
    memcpy(q, raw, *n_q);
    return TRT_OK;
}

int main(int argc, char **argv) {
    size_t len = 0;
    uint8_t *pte = argc == 2 ? read_file_aligned(argv[1], &len) : NULL;
    if (!pte) {
        fprintf(stderr, "usage: %s MODEL.pte\n", argv[0]);
        return 2;
    }
    uint8_t image[TRT_IMAGE_BYTES];
    for (int i = 0; i < TRT_IMAGE_BYTES; i++) image[i] = (uint8_t)(i * 7);
    int8_t q[16], q2[16];
    float logits[16], logits2[16];
    size_t n = 0, n_q = 0;
    char detail[96];
    trt_program *prog = trt_program_init(&storage);

    check(trt_program_size() <= sizeof storage, "trt_program_size() fits trt_program_storage");
    check(trt_load(NULL, pte, len, NULL, 0, NULL, 0) == TRT_ERR_BAD_INPUT, "NULL program is rejected");
    check(trt_load(prog, NULL, len, NULL, 0, detail, sizeof detail) == TRT_ERR_BAD_INPUT, "NULL bytes are rejected");
    check(trt_infer(prog, image, logits, 16, &n) == TRT_ERR_BAD_INPUT && trt_run(prog) == TRT_ERR_BAD_INPUT,
          "inference before a load is refused");

    /* a copy one byte off 16-byte alignment */
    uint8_t *shifted = malloc(len + 16);
    uint8_t *odd = shifted + ((16 - ((uintptr_t)shifted % 16)) % 16) + 1;
    memcpy(odd, pte, len);
    check(trt_load(prog, odd, len, NULL, 0, detail, sizeof detail) == TRT_ERR_BAD_INPUT &&
              strstr(detail, "aligned") != NULL, "a misaligned program buffer is refused");

    check(trt_load(prog, pte, len, NULL, 0, detail, sizeof detail) == TRT_ERR_ARENA_TOO_SMALL, "no arena: too small");
    size_t need = trt_arena_needed(prog);
    check(need > 0 && strstr(detail, "bytes needed") != NULL, "the needed arena size is reported");
    uint8_t *arena = aligned_alloc(16, (need + 16) & ~(size_t)15);
    check(trt_load(prog, pte, len, arena, need - 1, detail, sizeof detail) == TRT_ERR_ARENA_TOO_SMALL,
          "an arena one byte short is refused");
    check(trt_load(prog, pte, len, arena + 1, need, detail, sizeof detail) == TRT_ERR_BAD_INPUT,
          "a misaligned arena is refused");
    check(trt_infer(prog, image, logits, 16, &n) == TRT_ERR_BAD_INPUT && trt_input_count(prog) == 0,
          "a failed load leaves nothing runnable");

    char tiny[1] = {'x'};
    check(trt_load(prog, pte, len - 100, arena, need, tiny, sizeof tiny) != TRT_OK && tiny[0] == '\0',
          "a one-byte detail buffer gets an empty string");
    trt_arena_parts parts;
    trt_arena_layout(prog, &parts);
    check(parts.planned == 0 && parts.workspace == 0 && parts.working == 0, "a failed load has no arena parts");
    check(trt_load(prog, pte, len, arena, need, NULL, 0) == TRT_OK, "the program loads into exactly its arena");
    trt_arena_layout(prog, &parts);
    check(parts.planned > 0 && parts.planned % 16 == 0 && parts.planned + parts.workspace + parts.working == need,
          "the arena's parts add up to what it needs");
    check(infer_with_int8(prog, image, q, logits, &n, &n_q) == TRT_OK && n == 3 && n_q == 3,
          "inference gives three outputs and their int8 values");
    check(infer_with_int8(prog, image, q2, logits2, &n, &n_q) == TRT_OK && memcmp(q, q2, 3) == 0 &&
              memcmp(logits, logits2, sizeof(float) * 3) == 0, "inference is repeatable");
    check(trt_infer(prog, NULL, logits, 16, &n) == TRT_ERR_BAD_INPUT, "a NULL image is refused");
    check(trt_infer(prog, image, logits, 2, &n) == TRT_ERR_LIMIT, "logits that do not fit are refused");

    /* the generic API: the same inference through the input and output tensors */
    trt_tensor_info in, out;
    const int8_t *raw = NULL;
    size_t raw_count = 0;
    check(trt_input_count(prog) == 1 && trt_output_count(prog) == 1 && trt_input(prog, 1, &in) == TRT_ERR_BAD_INPUT &&
              trt_output(prog, -1, &out) == TRT_ERR_BAD_INPUT, "inputs and outputs are counted and bounded");
    check(trt_input(prog, 0, &in) == TRT_OK && in.dtype == TRT_FLOAT32 && in.rank == 4 && in.numel == 784 &&
              in.nbytes == 784 * 4 && in.elem_size == 4 && in.data != NULL && in.sizes[2] == 28,
          "the input is float32 [1, 1, 28, 28]");
    float *x = (float *)(void *)in.data;
    for (int i = 0; i < TRT_IMAGE_BYTES; i++) x[i] = (float)image[i] / 255.0f;   /* one channel: any dim order */
    check(trt_run(prog) == TRT_OK && trt_output(prog, 0, &out) == TRT_OK && out.dtype == TRT_FLOAT32 &&
              out.numel == 3 && out.has_int8 && memcmp(out.data, logits, 3 * sizeof(float)) == 0,
          "trt_run on the written input gives trt_infer's logits");
    check(trt_output_int8(prog, 0, &raw, &raw_count) == TRT_OK && raw_count == 3 && memcmp(raw, q, 3) == 0 &&
              trt_output_int8(prog, 1, &raw, &raw_count) == TRT_ERR_BAD_INPUT, "and its raw int8 values");
    const char *limit_name = NULL;
    check(trt_limit(2, &limit_name) == TRT_MAX_KERNEL_CALLS && strcmp(limit_name, "TRT_MAX_KERNEL_CALLS") == 0 &&
              trt_limit(TRT_LIMIT_COUNT, &limit_name) == 0 && limit_name == NULL, "the limits are listed");
    check(strcmp(trt_dtype_name(TRT_INT8), "int8") == 0 && trt_dtype_name(5) == NULL, "dtype names");
    check(trt_call_count(prog) == 10 && trt_call_name(prog, 10) == NULL &&
              trt_call_name(prog, -1) == NULL, "kernel calls are listed within range");
    check(trt_run_calls(prog, 0, 11) == TRT_ERR_BAD_INPUT && trt_run_calls(prog, 5, 4) == TRT_ERR_BAD_INPUT &&
              trt_run_calls(prog, 3, 3) == TRT_OK, "a range of calls past the chain or backwards is refused");
    int named = 1;
    for (int i = 0; i < trt_call_count(prog); i++) {
        const char *variant = trt_call_variant(prog, i);
        named &= variant && (!strcmp(variant, "c") || !strcmp(variant, "dsp") || !strcmp(variant, "mve"));
    }
    check(named && trt_call_variant(prog, 10) == NULL && trt_call_variant(prog, -1) == NULL &&
              trt_call_variant(NULL, 0) == NULL, "every kernel call names its variant, within range");
    uint64_t count = 99, macs = 0, all_macs = 0;
    int each_once = 1;
    check(trt_call_profile(prog, 0, &count, &macs) == TRT_OK && count == 0, "nothing is counted unprofiled");
    trt_set_counter(prog, tick);
    check(infer_with_int8(prog, image, q2, logits2, &n, &n_q) == TRT_OK && memcmp(q, q2, 3) == 0,
          "a profiled inference agrees");
    for (int i = 0; i < trt_call_count(prog); i++) {
        each_once &= trt_call_profile(prog, i, &count, &macs) == TRT_OK && count == 1;
        all_macs += macs;
    }
    check(each_once && all_macs == trt_macs(prog), "the profile counts every kernel call and adds up to the MACs");
    check(trt_call_profile(prog, 10, &count, &macs) == TRT_ERR_BAD_INPUT, "a profile past the chain is refused");
    trt_set_counter(prog, NULL);
    check(strcmp(trt_status_name(TRT_ERR_UNSUPPORTED_OP), "unsupported operator") == 0 &&
              strcmp(trt_status_name((trt_status)-99), "unknown status") == 0, "status names");

    free(arena);
    free(shifted);
    free(pte);
    return failures ? 1 : 0;
}
