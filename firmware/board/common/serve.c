/*
 * Serving the device link on the UART: one request at a time, forever. Every
 * problem (a bad frame, a wrong image size, a program that did not load) is
 * answered with an error frame; nothing stops the loop.
 */
#include <string.h>

#include "serve.h"

#include "board.h"
#include "link_frame.h"

static const link_io uart_link = {board_serial_read, board_serial_write};

static const char *error_text(uint8_t code)
{
    switch (code) {
    case LINK_ERR_BAD_CRC: return "frame CRC mismatch";
    case LINK_ERR_TOO_LONG: return "frame length above the maximum payload";
    case LINK_ERR_CUT_FRAME: return "frame stopped arriving (bytes received)";
    case LINK_ERR_GARBAGE: return "bytes outside any frame skipped";
    case LINK_ERR_UNKNOWN_COMMAND: return "unknown command";
    case LINK_ERR_BAD_PAYLOAD: return "wrong payload size for this command";
    case LINK_ERR_OVERRUN: return "receive queue overrun: bytes lost";
    default: return "error";
    }
}

static void reply_info(const firmware_state *fw, uint8_t seq)
{
    uint8_t info[LINK_INFO_BYTES];
    memset(info, 0, sizeof info);
    link_put_u16(info + LINK_INFO_PROTOCOL, LINK_PROTOCOL_VERSION);
    link_put_u16(info + LINK_INFO_SIZE, LINK_INFO_BYTES);
    text_copy((char *)info + LINK_INFO_FIRMWARE, LINK_VERSION_TEXT, TINYRPS_FIRMWARE_VERSION);
    text_copy((char *)info + LINK_INFO_BOARD, LINK_BOARD_TEXT, firmware_board_name());
    memcpy(info + LINK_INFO_SHA256, fw->model_sha256, SHA256_DIGEST_BYTES);
    link_put_u32(info + LINK_INFO_MODEL_BYTES, (uint32_t)fw->model.length);
    link_put_u32(info + LINK_INFO_MODEL_SOURCE, fw->model.source);
    link_put_u32(info + LINK_INFO_LOAD_STATUS, (uint32_t)fw->load_status);
    link_put_u32(info + LINK_INFO_ARENA_CAPACITY, (uint32_t)fw->arena_capacity);
    link_put_u32(info + LINK_INFO_ARENA_NEEDED, (uint32_t)fw->arena_needed);
    link_put_u32(info + LINK_INFO_STACK_SIZE, (uint32_t)board_stack_size());
    link_put_u32(info + LINK_INFO_STACK_USED, (uint32_t)board_stack_used());
    link_put_u32(info + LINK_INFO_BOOT_INSTRUCTIONS, fw->boot_instructions);
    text_copy((char *)info + LINK_INFO_LOAD_DETAIL, LINK_DETAIL_TEXT, fw->load_detail);
    link_send(&uart_link, LINK_CMD_INFO | LINK_REPLY, seq, info, sizeof info);
}

static void reply_infer(firmware_state *fw, uint8_t seq, const uint8_t *image)
{
    if (fw->load_status != TRT_OK) {
        link_send_error(&uart_link, seq, LINK_ERR_NO_PROGRAM, fw->load_status, fw->load_detail);
        return;
    }
    int8_t out_q[FIRMWARE_MAX_LOGITS];
    float logits[FIRMWARE_MAX_LOGITS];
    size_t n_out = 0;
    uint64_t instructions = 0;
    trt_status status = firmware_infer(fw, image, out_q, logits, &n_out, &instructions);
    if (status != TRT_OK || n_out > FIRMWARE_MAX_LOGITS) {
        link_send_error(&uart_link, seq, LINK_ERR_INFER_FAILED, status, trt_status_name(status));
        return;
    }
    uint8_t reply[LINK_INFER_HEADER_BYTES + FIRMWARE_MAX_LOGITS * (1 + sizeof(float))];
    link_put_u32(reply, (uint32_t)status);
    link_put_u32(reply + 4, (uint32_t)n_out);
    link_put_u64(reply + 8, instructions);
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

static void handle_frame(firmware_state *fw, const link_frame *frame)
{
    switch (frame->type) {
    case LINK_CMD_INFO:
        if (frame->length != 0)
            break;
        reply_info(fw, frame->seq);
        return;
    case LINK_CMD_INFER:
        if (frame->length != TRT_IMAGE_BYTES)
            break;
        reply_infer(fw, frame->seq, frame->payload);
        return;
    case LINK_CMD_ECHO:
        link_send(&uart_link, LINK_CMD_ECHO | LINK_REPLY, frame->seq, frame->payload, frame->length);
        return;
    default:
        link_send_error(&uart_link, frame->seq, LINK_ERR_UNKNOWN_COMMAND, frame->type,
                        error_text(LINK_ERR_UNKNOWN_COMMAND));
        return;
    }
    link_send_error(&uart_link, frame->seq, LINK_ERR_BAD_PAYLOAD, frame->length, error_text(LINK_ERR_BAD_PAYLOAD));
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

void serve_report_fault(const char *what)
{
    link_send_error(&uart_link, 0, LINK_ERR_FAULT, 0, what);
}

void serve_forever(firmware_state *fw)
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
