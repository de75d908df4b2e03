/*
 * tinyrps firmware for the MPS3 AN547 (Cortex-M55): boots once, finds the
 * program placed in memory, hashes and validates it, then either serves
 * requests on the UART forever or runs one semihosting batch (boot descriptor
 * mode). See docs/firmware.md.
 */
#include <string.h>

#include "board.h"
#include "firmware.h"
#include "semihost.h"

#ifndef TINYRPS_ARENA_BYTES
#define TINYRPS_ARENA_BYTES (64u * 1024u)
#endif

/* The runtime's activations (the program's memory plan) and its tables: both
 * static, sized at build time (CMake options of the same names). */
static uint8_t arena[TINYRPS_ARENA_BYTES] __attribute__((aligned(16)));
static trt_program_storage program_storage;

static firmware_state state;

void text_copy(char *field, size_t size, const char *text)
{
    size_t i = 0;
    for (; text && text[i] && i + 1 < size; i++)
        field[i] = text[i];
    memset(field + i, 0, size - i);
}

static void set_detail(firmware_state *fw, const char *text) { text_copy(fw->load_detail, sizeof fw->load_detail, text); }

static void load_program(firmware_state *fw)
{
    fw->arena_capacity = sizeof arena;
    fw->program = trt_program_init(&program_storage);
    fw->load_status = trt_load(fw->program, fw->model.bytes, fw->model.length, arena, sizeof arena, fw->load_detail,
                               sizeof fw->load_detail);
    /* Reported even when the arena is too small, so the message can say how much. */
    fw->arena_needed = trt_arena_needed(fw->program);
    if (fw->load_status != TRT_OK && fw->load_detail[0] == '\0')
        set_detail(fw, trt_status_name(fw->load_status));
}

static void boot(firmware_state *fw)
{
    board_counter_start();
    fw->model = model_slot_locate();
    sha256(fw->model.bytes, fw->model.length, fw->model_sha256);
    load_program(fw);
    uint64_t instructions = board_counter_instructions();
    fw->boot_instructions = instructions > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)instructions;
}

trt_status firmware_infer(firmware_state *fw, const uint8_t image[TRT_IMAGE_BYTES], int8_t out_q[TRT_MAX_OUTPUTS],
                          float logits[TRT_MAX_OUTPUTS], int *n_out, uint64_t *instructions)
{
    board_counter_start();
    trt_status status = trt_infer(fw->program, image, out_q, logits, n_out);
    *instructions = board_counter_instructions();
    return status;
}

int main(void)
{
    board_init();
    boot(&state);
    if (state.model.mode == BOOT_MODE_BATCH)
        run_batch(&state);
    serve_forever(&state);
}

/* Where a CPU fault is reported: the channel the host is listening on. */
void app_report_fault(const char *what)
{
    if (state.model.mode == BOOT_MODE_BATCH)
        batch_report_fault(what);
    else
        serve_report_fault(what);
}
