/*
 * The firmware's state after boot: the program found in the model slot, the
 * loaded runtime program, the boot's cost, and the program's hash once asked
 * for. Shared by the two ways requests are served, the serial link (link_loop.c)
 * and the semihosting batch (batch.c); main.c boots it and picks one.
 */
#ifndef TINYRPS_FIRMWARE_H
#define TINYRPS_FIRMWARE_H

#include <stddef.h>
#include <stdint.h>

#include "link_tensor_io.h"
#include "model_slot.h"
#include "sha256.h"
#include "tinyrps_image.h"
#include "tinyrps_runtime.h"

#ifndef TINYRPS_FIRMWARE_VERSION
#define TINYRPS_FIRMWARE_VERSION "0.0.0"
#endif

#define LOAD_DETAIL_BYTES 48

typedef struct {
    model_slot model;
    uint8_t model_sha256[SHA256_DIGEST_BYTES]; /* valid once sha256_known (firmware_sha256) */
    int sha256_known;
    uint32_t sha256_instructions; /* what hashing the program took, 0 until it was asked for */
    trt_program *program;
    trt_status load_status;
    char load_detail[LOAD_DETAIL_BYTES];
    size_t arena_capacity; /* the board's RAM after everything else (the linker's .arena) */
    size_t arena_needed;   /* what the program needs, also when it did not fit (0: not a program) */
    uint32_t boot_instructions; /* reset to ready: startup, board_init, the program found and loaded */
    uint32_t load_instructions; /* trt_load's share of them */
} firmware_state;

/* Finds the program and loads it (never fails: a program that does not load leaves
 * load_status and load_detail saying why), then records the instructions since reset.
 * It does not hash the program: firmware_sha256 does, when the host asks. Per-layer
 * profiling is on: every kernel call's share of the SysTick count is recorded. */
void firmware_boot(firmware_state *fw);

/* The program's SHA-256 (of the model slot's bytes, the length the boot found), computed on
 * the first call, with its own instruction count in sha256_instructions. */
const uint8_t *firmware_sha256(firmware_state *fw);

/* One inference of the program on its inputs as written (trt_run) with its instruction count;
 * returns the runtime's status. */
trt_status firmware_run(firmware_state *fw, uint64_t *instructions);

/* The program's tensors for the device link's requests (link_tensor_io.h). */
extern const link_tensors firmware_tensors;

/* Logits an image classifier's inference reports at most (the serial link's and the batch's
 * image records hold this many). */
#define FIRMWARE_MAX_LOGITS 16

/* One image-classifier inference (trt_infer) with its instruction count; returns the runtime's status. */
trt_status firmware_infer(firmware_state *fw, const uint8_t image[TRT_IMAGE_BYTES], int8_t out_q[FIRMWARE_MAX_LOGITS],
                          float logits[FIRMWARE_MAX_LOGITS], size_t *n_out, uint64_t *instructions);

/* The board's NPU driver (npu_link.c): on when the boot descriptor asks for the NPU link
 * (BOOT_FLAG_NPU_LINK) and the program loaded; hashes the program then, outside any count. */
void npu_link_start(firmware_state *fw);

/* The board's name (e.g. "mps3-an547"), as reported by `info` and the batch header. */
const char *firmware_board_name(void);

/* Copies text into a fixed field of size bytes: truncated, NUL-padded. */
void text_copy(char *field, size_t size, const char *text);

#endif
