/*
 * Boot-time work and one inference: find the program in the model slot, load it
 * into the runtime with the arena, and run it with the board's instruction
 * counter around it (and, per kernel call, inside it). The program's hash is
 * not boot-time work: it reads every byte of the program, many times the cost
 * of the rest of the boot, and only a host that checks the program's identity
 * needs it, so it is computed when first asked for.
 */
#include "firmware.h"

#include <string.h>

#include "board.h"
#include "port.h"

/* The arena: the board's RAM after the boot descriptor, data, bss and stack, up to the end of
 * the port's RAM region (sections.ld, .arena). A program gets as much of it as its memory plan
 * needs; the measurement counts that, not the region (src/tinyrps/firmware/measure.py). */
extern uint8_t __arena_start[], __arena_end[];

/* The runtime's tables: static, sized by the runtime's limits (tinyrps_runtime.h). */
static trt_program_storage program_storage;

void text_copy(char *field, size_t size, const char *text)
{
    size_t i = 0;
    for (; text && text[i] && i + 1 < size; i++)
        field[i] = text[i];
    memset(field + i, 0, size - i);
}

const char *firmware_board_name(void) { return PORT_BOARD_NAME; }

static uint32_t saturate32(uint64_t n) { return n > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)n; }

static void load_program(firmware_state *fw)
{
    fw->arena_capacity = (size_t)(__arena_end - __arena_start);
    fw->program = trt_program_init(&program_storage);
    /* Ticks read without restarting SysTick's phase, which would disturb the count since reset. */
    uint64_t start = board_ticks();
    fw->load_status = trt_load(fw->program, fw->model.bytes, fw->model.length, __arena_start, fw->arena_capacity,
                               fw->load_detail, sizeof fw->load_detail);
    fw->load_instructions = saturate32(board_ticks_to_instructions(board_ticks() - start));
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
    fw->model = model_slot_locate();
    load_program(fw);
    fw->boot_instructions = saturate32(board_instructions_since_reset());
}

const uint8_t *firmware_sha256(firmware_state *fw)
{
    if (!fw->sha256_known) {
        board_counter_start();
        sha256(fw->model.bytes, fw->model.length, fw->model_sha256);
        fw->sha256_instructions = saturate32(board_counter_instructions());
        fw->sha256_known = 1;
    }
    return fw->model_sha256;
}

trt_status firmware_infer(firmware_state *fw, const uint8_t image[TRT_IMAGE_BYTES], int8_t out_q[FIRMWARE_MAX_LOGITS],
                          float logits[FIRMWARE_MAX_LOGITS], size_t *n_out, uint64_t *instructions)
{
    const int8_t *q = NULL;
    size_t n_q = 0;
    board_counter_start();
    trt_status status = trt_infer(fw->program, image, logits, FIRMWARE_MAX_LOGITS, n_out);
    *instructions = board_counter_instructions();
    if (status != TRT_OK)
        return status;
    trt_tensor_info out;
    if (trt_output(fw->program, 0, &out) == TRT_OK && out.dtype == TRT_INT8) {
        q = (const int8_t *)(const void *)out.data; /* an int8 output is its own raw values */
        n_q = out.numel;
    } else if (trt_output_int8(fw->program, 0, &q, &n_q) != TRT_OK || n_q != *n_out) {
        return TRT_ERR_BAD_TENSOR; /* a classifier's output without raw int8 values */
    }
    memcpy(out_q, q, n_q);
    return TRT_OK;
}

trt_status firmware_run(firmware_state *fw, uint64_t *instructions)
{
    board_counter_start();
    trt_status status = trt_run(fw->program);
    *instructions = board_counter_instructions();
    return status;
}

/* ---- the program's tensors, for the link's requests ---- */

static int program_input(void *context, int index, trt_tensor_info *t)
{
    return trt_input((const trt_program *)context, index, t) == TRT_OK ? 0 : -1;
}

static int program_output(void *context, int index, trt_tensor_info *t, const int8_t **int8)
{
    size_t count;
    if (trt_output((const trt_program *)context, index, t) != TRT_OK)
        return -1;
    if (trt_output_int8((const trt_program *)context, index, int8, &count) != TRT_OK)
        *int8 = NULL;
    return 0;
}

const link_tensors firmware_tensors = {&program_storage, program_input, program_output};
