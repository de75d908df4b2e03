/*
 * Serving the device link on the UART: one request at a time, forever. Every
 * problem (a bad frame, a wrong payload, a tensor request outside the program's
 * tensors, a program that did not load) is answered with an error frame; nothing
 * stops the loop.
 */
#include <string.h>

#include "link_loop.h"

#include "board.h"
#include "link_frame.h"
#include "link_tensor_io.h"

static const link_io uart_link = {board_serial_read, board_serial_write};

/* One reply at a time, the largest a frame holds: not on the stack. */
static uint8_t reply[LINK_MAX_PAYLOAD];

static const char *error_text(uint8_t code)
{
#define ERROR_TEXT(name, value, text) case value: return text;
    switch (code) { LINK_ERROR_LIST(ERROR_TEXT) }
#undef ERROR_TEXT
    return "error";
}

/* INFO hashes the program the first time it is asked (firmware_sha256): the host checks with it
 * that the board holds the program it means. */
static void reply_info(firmware_state *fw, uint8_t seq)
{
    const uint8_t *sha = firmware_sha256(fw);
    memset(reply, 0, LINK_INFO_BYTES);
    link_put_u16(reply + LINK_INFO_PROTOCOL, LINK_PROTOCOL_VERSION);
    link_put_u16(reply + LINK_INFO_SIZE, LINK_INFO_BYTES);
    text_copy((char *)reply + LINK_INFO_FIRMWARE, 16, TINYRPS_FIRMWARE_VERSION);
    text_copy((char *)reply + LINK_INFO_BOARD, 16, firmware_board_name());
    memcpy(reply + LINK_INFO_SHA256, sha, SHA256_DIGEST_BYTES);
    link_put_u32(reply + LINK_INFO_MODEL_BYTES, (uint32_t)fw->model.length);
    link_put_u32(reply + LINK_INFO_MODEL_SOURCE, fw->model.source);
    link_put_u32(reply + LINK_INFO_LOAD_STATUS, (uint32_t)fw->load_status);
    link_put_u32(reply + LINK_INFO_ARENA_CAPACITY, (uint32_t)fw->arena_capacity);
    link_put_u32(reply + LINK_INFO_ARENA_NEEDED, (uint32_t)fw->arena_needed);
    link_put_u32(reply + LINK_INFO_STACK_SIZE, (uint32_t)board_stack_size());
    link_put_u32(reply + LINK_INFO_STACK_USED, (uint32_t)board_stack_used());
    link_put_u32(reply + LINK_INFO_BOOT_INSTRUCTIONS, fw->boot_instructions);
    link_put_u32(reply + LINK_INFO_LOAD_INSTRUCTIONS, fw->load_instructions);
    link_put_u32(reply + LINK_INFO_SHA256_INSTRUCTIONS, fw->sha256_instructions);
    text_copy((char *)reply + LINK_INFO_LOAD_DETAIL, LOAD_DETAIL_BYTES, fw->load_detail);
    link_put_u16(reply + LINK_INFO_INPUTS, (uint16_t)trt_input_count(fw->program));
    link_put_u16(reply + LINK_INFO_OUTPUTS, (uint16_t)trt_output_count(fw->program));
    link_put_u16(reply + LINK_INFO_LIMIT_COUNT, TRT_LIMIT_COUNT);
    for (int i = 0; i < TRT_LIMIT_COUNT && i < LINK_MAX_LIMITS; i++)
        link_put_u32(reply + LINK_INFO_LIMITS + 4 * i, trt_limit(i, NULL));
    link_send(&uart_link, LINK_CMD_INFO | LINK_REPLY, seq, reply, LINK_INFO_BYTES);
}

static void reply_infer(firmware_state *fw, uint8_t seq, const uint8_t *image)
{
    int8_t out_q[FIRMWARE_MAX_LOGITS];
    float logits[FIRMWARE_MAX_LOGITS];
    size_t n_out = 0;
    uint64_t instructions = 0;
    trt_status status = firmware_infer(fw, image, out_q, logits, &n_out, &instructions);
    if (status != TRT_OK || n_out > FIRMWARE_MAX_LOGITS) {
        link_send_error(&uart_link, seq, LINK_ERR_INFER_FAILED, status, trt_status_name(status));
        return;
    }
    link_put_u32(reply + LINK_INFER_STATUS, (uint32_t)status);
    link_put_u32(reply + LINK_INFER_OUTPUTS, (uint32_t)n_out);
    link_put_u64(reply + LINK_INFER_INSTRUCTIONS, instructions);
    uint8_t *p = reply + LINK_INFER_HEADER_BYTES;
    memcpy(p, out_q, n_out);
    p += n_out;
    for (size_t i = 0; i < n_out; i++, p += 4) {
        uint32_t bits;
        memcpy(&bits, &logits[i], sizeof bits);
        link_put_u32(p, bits);
    }
    link_send(&uart_link, LINK_CMD_INFER | LINK_REPLY, seq, reply, (size_t)(p - reply));
}

/* RUN: the request's piece of an input first (if any), the run, then the outputs that fit. */
static void reply_run(firmware_state *fw, const link_frame *frame)
{
    if (frame->length) {
        link_refusal refusal;
        link_write_input(&firmware_tensors, frame->payload, frame->length, reply, &refusal);
        if (refusal.code) {
            link_send_error(&uart_link, frame->seq, refusal.code, refusal.value, refusal.text);
            return;
        }
    }
    uint64_t instructions = 0;
    trt_status status = firmware_run(fw, &instructions);
    if (status != TRT_OK) {
        link_send_error(&uart_link, frame->seq, LINK_ERR_INFER_FAILED, status, trt_status_name(status));
        return;
    }
    uint16_t included = 0;
    memset(reply, 0, LINK_RUN_REPLY_BYTES);
    size_t length = link_append_outputs(&firmware_tensors, reply, LINK_RUN_REPLY_BYTES, &included);
    link_put_u32(reply + LINK_RUN_STATUS, (uint32_t)status);
    link_put_u16(reply + LINK_RUN_OUTPUTS, included);
    link_put_u64(reply + LINK_RUN_INSTRUCTIONS, instructions);
    link_send(&uart_link, LINK_CMD_RUN | LINK_REPLY, frame->seq, reply, length);
}

/* TENSOR, WRITE, READ: the portable request code, on the loaded program's tensors. */
typedef size_t (*tensor_request)(const link_tensors *, const uint8_t *, size_t, uint8_t *, link_refusal *);

static void reply_tensor_request(const link_frame *frame, tensor_request handle)
{
    link_refusal refusal;
    size_t length = handle(&firmware_tensors, frame->payload, frame->length, reply, &refusal);
    if (refusal.code)
        link_send_error(&uart_link, frame->seq, refusal.code, refusal.value, refusal.text);
    else
        link_send(&uart_link, frame->type | LINK_REPLY, frame->seq, reply, length);
}

static int expect_length(const link_frame *frame, size_t length)
{
    if (frame->length == length)
        return 1;
    link_send_error(&uart_link, frame->seq, LINK_ERR_BAD_PAYLOAD, frame->length, error_text(LINK_ERR_BAD_PAYLOAD));
    return 0;
}

/* The commands that need the program: refused while it did not load. */
static int program_loaded(const firmware_state *fw, const link_frame *frame)
{
    if (fw->load_status == TRT_OK)
        return 1;
    link_send_error(&uart_link, frame->seq, LINK_ERR_NO_PROGRAM, fw->load_status, fw->load_detail);
    return 0;
}

static void handle_frame(firmware_state *fw, const link_frame *frame)
{
    switch (frame->type) {
    case LINK_CMD_INFO:
        if (expect_length(frame, 0))
            reply_info(fw, frame->seq);
        return;
    case LINK_CMD_INFER:
        if (expect_length(frame, LINK_INFER_IMAGE_BYTES) && program_loaded(fw, frame))
            reply_infer(fw, frame->seq, frame->payload);
        return;
    case LINK_CMD_ECHO:
        link_send(&uart_link, LINK_CMD_ECHO | LINK_REPLY, frame->seq, frame->payload, frame->length);
        return;
    case LINK_CMD_TENSOR:
        if (program_loaded(fw, frame))
            reply_tensor_request(frame, link_describe_tensor);
        return;
    case LINK_CMD_WRITE:
        if (program_loaded(fw, frame))
            reply_tensor_request(frame, link_write_input);
        return;
    case LINK_CMD_RUN:
        if (program_loaded(fw, frame))
            reply_run(fw, frame);
        return;
    case LINK_CMD_READ:
        if (program_loaded(fw, frame))
            reply_tensor_request(frame, link_read_output);
        return;
    default:
        link_send_error(&uart_link, frame->seq, LINK_ERR_UNKNOWN_COMMAND, frame->type,
                        error_text(LINK_ERR_UNKNOWN_COMMAND));
        return;
    }
}

static void report_overruns(uint32_t *reported)
{
    uint32_t overruns = board_serial_overruns();
    if (overruns != *reported) {
        link_send_error(&uart_link, 0, LINK_ERR_OVERRUN, (int32_t)(overruns - *reported),
                        error_text(LINK_ERR_OVERRUN));
        *reported = overruns;
    }
}

void link_report_fault(const char *what)
{
    link_send_error(&uart_link, 0, LINK_ERR_FAULT, 0, what);
}

void link_loop_forever(firmware_state *fw)
{
    static link_receiver receiver; /* 1 KiB buffer: not on the stack */
    uint32_t overruns_reported = 0;
    link_receiver_init(&receiver, uart_link);
    for (;;) {
        link_event event = link_next(&receiver);
        report_overruns(&overruns_reported);
        if (event.is_error)
            link_send_error(&uart_link, event.seq, event.error, event.value, error_text(event.error));
        else
            handle_frame(fw, &event.frame);
    }
}
