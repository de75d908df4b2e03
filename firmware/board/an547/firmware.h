/*
 * The firmware's state after boot, shared by the two ways it serves requests:
 * the serial link (serve.c) and the semihosting batch (batch.c).
 */
#ifndef TINYRPS_FIRMWARE_H
#define TINYRPS_FIRMWARE_H

#include <stddef.h>
#include <stdint.h>

#include "model_slot.h"
#include "sha256.h"
#include "tinyrps_runtime.h"

#ifndef TINYRPS_FIRMWARE_VERSION
#define TINYRPS_FIRMWARE_VERSION "0.0.0"
#endif
#define TINYRPS_BOARD_NAME "mps3-an547"

#define LOAD_DETAIL_BYTES 48

typedef struct {
    model_slot model;
    uint8_t model_sha256[SHA256_DIGEST_BYTES];
    trt_program *program;
    trt_status load_status;
    char load_detail[LOAD_DETAIL_BYTES];
    size_t arena_capacity;
    size_t arena_needed; /* 0 unless the program loaded */
    uint32_t boot_instructions;
} firmware_state;

/* One inference with its instruction count; returns the runtime's status. */
trt_status firmware_infer(firmware_state *fw, const uint8_t image[TRT_IMAGE_BYTES], int8_t out_q[TRT_MAX_OUTPUTS],
                          float logits[TRT_MAX_OUTPUTS], int *n_out, uint64_t *instructions);

__attribute__((noreturn)) void serve_forever(firmware_state *fw);
__attribute__((noreturn)) void run_batch(firmware_state *fw);

/* Copies text into a fixed field of size bytes: truncated, NUL-padded. */
void text_copy(char *field, size_t size, const char *text);

/* Fault reports on each channel (called from the fault handler). */
void serve_report_fault(const char *what);
__attribute__((noreturn)) void batch_report_fault(const char *what);
void app_report_fault(const char *what);

#endif
