/*
 * Boot-time work and one inference: find the program in the model slot, hash
 * it, load it into the runtime with the static arena, and run it with the
 * board's instruction counter around it (and, per kernel call, inside it).
 */
#include "firmware.h"

#include <string.h>

#include "board.h"
#include "port.h"

#ifndef TINYRPS_ARENA_BYTES
#define TINYRPS_ARENA_BYTES (96u * 1024u)
#endif

/* The runtime's activations (the program's memory plan) and its tables: both
 * static, sized at build time (CMake options of the same names). */
static uint8_t arena[TINYRPS_ARENA_BYTES] __attribute__((aligned(16)));
static trt_program_storage program_storage;

void text_copy(char *field, size_t size, const char *text)
{
    size_t i = 0;
    for (; text && text[i] && i + 1 < size; i++)
        field[i] = text[i];
    memset(field + i, 0, size - i);
}

const char *firmware_board_name(void) { return PORT_BOARD_NAME; }

static void load_program(firmware_state *fw)
{
    fw->arena_capacity = sizeof arena;
    fw->program = trt_program_init(&program_storage);
    fw->load_status = trt_load(fw->program, fw->model.bytes, fw->model.length, arena, sizeof arena, fw->load_detail,
                               sizeof fw->load_detail);
    /* Reported even when the arena is too small, so the message can say how much. */
    fw->arena_needed = trt_arena_needed(fw->program);
    if (fw->load_status != TRT_OK && fw->load_detail[0] == '\0')
        text_copy(fw->load_detail, sizeof fw->load_detail, trt_status_name(fw->load_status));
    /* SysTick ticks per kernel call: one counter read per call, well under 0.1 % of an inference. */
    if (fw->load_status == TRT_OK)
        trt_set_counter(fw->program, board_ticks);
}

void firmware_boot(firmware_state *fw)
{
    board_counter_start();
    fw->model = model_slot_locate();
    sha256(fw->model.bytes, fw->model.length, fw->model_sha256);
    load_program(fw);
    uint64_t instructions = board_counter_instructions();
    fw->boot_instructions = instructions > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)instructions;
}

trt_status firmware_infer(firmware_state *fw, const uint8_t image[TRT_IMAGE_BYTES], int8_t out_q[FIRMWARE_MAX_LOGITS],
                          float logits[FIRMWARE_MAX_LOGITS], size_t *n_out, uint64_t *instructions)
{
    size_t n_q = 0;
    board_counter_start();
    trt_status status = trt_infer(fw->program, image, out_q, logits, FIRMWARE_MAX_LOGITS, n_out, &n_q);
    *instructions = board_counter_instructions();
    if (status == TRT_OK && n_q != *n_out)
        status = TRT_ERR_BAD_TENSOR; /* a classifier's output without raw int8 values */
    return status;
}
