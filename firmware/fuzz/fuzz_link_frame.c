/*
 * libFuzzer target: the firmware's frame receiver (firmware/protocol/link_frame.c)
 * on an arbitrary byte stream, under AddressSanitizer and UBSan.
 *
 * Input: byte 0 sets where the line goes quiet (a read times out before every
 * k-th byte when k > 0, which cuts frames and flushes garbage reports); the rest is
 * the received stream. The receiver runs until the stream is exhausted and it waits
 * for more. Beyond memory safety it must keep its promises, checked here: a valid
 * frame is at most LINK_MAX_PAYLOAD long, lies inside the receiver's buffer and
 * carries a CRC that matches; an error has a known code; and a delivered frame, sent
 * again with link_send, is received back unchanged.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32.h"
#include "link_frame.h"

typedef struct {
    const uint8_t *data;
    size_t len, pos;
    size_t quiet_every; /* 0: never */
    size_t quiet_before; /* 1 + the position of the last quiet period, 0 before the first */
    jmp_buf exhausted;
} stream;

static stream *input;

static int read_byte(uint32_t timeout_ms)
{
    if (input->pos >= input->len) {
        if (timeout_ms == LINK_WAIT_FOREVER)
            longjmp(input->exhausted, 1); /* the receiver would wait forever: this input is done */
        return -1;
    }
    /* quiet once before every k-th byte (never twice in a row, or the stream would stall) */
    if (input->quiet_every && input->pos % input->quiet_every == 0 && input->quiet_before != input->pos + 1) {
        input->quiet_before = input->pos + 1;
        return -1;
    }
    return input->data[input->pos++];
}

static void discard(const uint8_t *data, size_t len)
{
    (void)data;
    (void)len;
}

static void check_frame(const link_receiver *rx, const link_frame *f)
{
    if (f->length > LINK_MAX_PAYLOAD)
        abort();
    uintptr_t start = (uintptr_t)rx->buffer, at = (uintptr_t)f->payload;
    if (at < start + LINK_HEADER_BYTES || at + f->length + LINK_CRC_BYTES > start + sizeof rx->buffer)
        abort();
    const uint8_t *header = f->payload - LINK_HEADER_BYTES;
    uint32_t crc = crc32_update(0, header + 2, LINK_HEADER_BYTES - 2);
    crc = crc32_update(crc, f->payload, f->length);
    if (crc != link_get_u32(f->payload + f->length))
        abort();
}

static void check_error(const link_event *ev)
{
    if (ev->error != LINK_ERR_BAD_CRC && ev->error != LINK_ERR_TOO_LONG && ev->error != LINK_ERR_CUT_FRAME &&
        ev->error != LINK_ERR_GARBAGE)
        abort(); /* the receiver reports framing problems only */
}

/* ---- round trip: link_send's bytes decode to the same frame ---- */

static uint8_t sent[LINK_MAX_FRAME];
static size_t sent_len;

static void collect(const uint8_t *data, size_t len)
{
    if (sent_len + len > sizeof sent)
        abort(); /* link_send wrote more than one maximal frame */
    memcpy(sent + sent_len, data, len);
    sent_len += len;
}

static void check_round_trip(const link_frame *f)
{
    uint8_t payload[LINK_MAX_PAYLOAD];
    memcpy(payload, f->payload, f->length);
    uint8_t type = f->type, seq = f->seq;
    uint16_t length = f->length;
    sent_len = 0;
    link_io out = {.read_byte = read_byte, .write = collect};
    link_send(&out, type, seq, payload, length);

    stream *outer = input, replay = {.data = sent, .len = sent_len};
    input = &replay;
    static link_receiver rx;
    link_receiver_init(&rx, (link_io){.read_byte = read_byte, .write = discard});
    if (setjmp(replay.exhausted) == 0) {
        link_event ev = link_next(&rx);
        if (ev.is_error || ev.frame.type != type || ev.frame.seq != seq || ev.frame.length != length ||
            memcmp(ev.frame.payload, payload, length) != 0)
            abort();
    } else {
        abort(); /* a whole frame went in and nothing came out */
    }
    input = outer;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static stream s;
    memset(&s, 0, sizeof s);
    s.data = data + 1;
    s.len = size - 1;
    s.quiet_every = data[0];
    input = &s;
    static link_receiver rx;
    link_receiver_init(&rx, (link_io){.read_byte = read_byte, .write = discard});
    if (setjmp(s.exhausted) == 0) {
        for (;;) {
            link_event ev = link_next(&rx);
            if (ev.is_error) {
                check_error(&ev);
            } else {
                check_frame(&rx, &ev.frame);
                check_round_trip(&ev.frame);
                input = &s;
            }
        }
    }
    return 0;
}
