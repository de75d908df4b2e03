#include "link_frame.h"

#include <string.h>

#include "crc32.h"

void link_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

void link_put_u32(uint8_t *p, uint32_t v)
{
    link_put_u16(p, (uint16_t)v);
    link_put_u16(p + 2, (uint16_t)(v >> 16));
}

void link_put_u64(uint8_t *p, uint64_t v)
{
    link_put_u32(p, (uint32_t)v);
    link_put_u32(p + 4, (uint32_t)(v >> 32));
}

uint16_t link_get_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

uint32_t link_get_u32(const uint8_t *p) { return (uint32_t)link_get_u16(p) | (uint32_t)link_get_u16(p + 2) << 16; }

/* ---- sending ---- */

void link_send(const link_io *io, uint8_t type, uint8_t seq, const uint8_t *payload, size_t length)
{
    if (length > LINK_MAX_PAYLOAD)
        length = LINK_MAX_PAYLOAD; /* callers never do this; never emit an unparsable frame */
    uint8_t header[LINK_HEADER_BYTES] = {LINK_SYNC0, LINK_SYNC1, type, seq};
    link_put_u16(header + 4, (uint16_t)length);
    uint32_t crc = crc32_update(0, header + 2, LINK_HEADER_BYTES - 2);
    crc = crc32_update(crc, payload, length);
    uint8_t trailer[LINK_CRC_BYTES];
    link_put_u32(trailer, crc);
    io->write(header, sizeof header);
    io->write(payload, length);
    io->write(trailer, sizeof trailer);
}

void link_send_error(const link_io *io, uint8_t seq, uint8_t code, int32_t value, const char *text)
{
    uint8_t payload[8 + LINK_ERROR_TEXT_MAX] = {code};
    link_put_u32(payload + 4, (uint32_t)value);
    size_t text_len = 0;
    while (text && text[text_len] && text_len < LINK_ERROR_TEXT_MAX) {
        payload[8 + text_len] = (uint8_t)text[text_len];
        text_len++;
    }
    link_send(io, LINK_ERROR, seq, payload, 8 + text_len);
}

/* ---- receiving ---- */

void link_receiver_init(link_receiver *rx, link_io io)
{
    memset(rx, 0, sizeof *rx);
    rx->io = io;
}

static void drop_front(link_receiver *rx, size_t count)
{
    if (count > rx->used)
        count = rx->used;
    memmove(rx->buffer, rx->buffer + count, rx->used - count);
    rx->used -= count;
}

/* Drops bytes up to the first place a frame could start (a sync word, or a
 * first sync byte at the very end), counting them as garbage unless they are
 * the rest of a frame already reported as bad. */
static void skip_to_sync(link_receiver *rx)
{
    size_t i = 0;
    while (i < rx->used &&
           !(rx->buffer[i] == LINK_SYNC0 && (i + 1 == rx->used || rx->buffer[i + 1] == LINK_SYNC1)))
        i++;
    if (i > 0 && !rx->after_bad_frame)
        rx->garbage += (uint32_t)i;
    drop_front(rx, i);
    /* What the bad frame left in the buffer is gone now; later bytes are new. */
    rx->after_bad_frame = false;
}

static link_event error_event(uint8_t code, uint8_t seq, int32_t value)
{
    link_event ev = {.is_error = true, .error = code, .seq = seq, .value = value};
    return ev;
}

static link_event garbage_event(link_receiver *rx)
{
    link_event ev = error_event(LINK_ERR_GARBAGE, 0, (int32_t)rx->garbage);
    rx->garbage = 0;
    return ev;
}

/* A bad frame: report it, and rescan from its second byte, since a real
 * frame may start inside what was taken for its payload. */
static link_event bad_frame_event(link_receiver *rx, uint8_t code, int32_t value)
{
    uint8_t seq = rx->used > 3 ? rx->buffer[3] : 0;
    drop_front(rx, 1);
    rx->after_bad_frame = true;
    return error_event(code, seq, value);
}

static size_t frame_bytes(const link_receiver *rx)
{
    if (rx->used < LINK_HEADER_BYTES)
        return LINK_HEADER_BYTES;
    return LINK_HEADER_BYTES + link_get_u16(rx->buffer + 4) + LINK_CRC_BYTES;
}

static bool crc_matches(const link_receiver *rx, size_t total)
{
    size_t crc_at = total - LINK_CRC_BYTES;
    uint32_t expected = link_get_u32(rx->buffer + crc_at);
    return crc32_update(0, rx->buffer + 2, crc_at - 2) == expected;
}

static link_event frame_event(link_receiver *rx, size_t total)
{
    link_event ev = {.is_error = false};
    ev.frame.type = rx->buffer[2];
    ev.frame.seq = rx->buffer[3];
    ev.frame.length = link_get_u16(rx->buffer + 4);
    ev.frame.payload = rx->buffer + LINK_HEADER_BYTES;
    rx->delivered = total;
    return ev;
}

link_event link_next(link_receiver *rx)
{
    drop_front(rx, rx->delivered);
    rx->delivered = 0;
    for (;;) {
        skip_to_sync(rx);
        if (rx->garbage && rx->used > 0)
            return garbage_event(rx); /* noise, then the start of a frame */
        if (rx->used >= LINK_HEADER_BYTES && link_get_u16(rx->buffer + 4) > LINK_MAX_PAYLOAD)
            return bad_frame_event(rx, LINK_ERR_TOO_LONG, link_get_u16(rx->buffer + 4));
        size_t total = frame_bytes(rx);
        if (rx->used >= total) {
            if (!crc_matches(rx, total))
                return bad_frame_event(rx, LINK_ERR_BAD_CRC, 0);
            return frame_event(rx, total);
        }
        uint32_t timeout = rx->used > 0 ? LINK_INTERBYTE_TIMEOUT_MS
                           : rx->garbage ? LINK_GARBAGE_REPORT_MS
                                         : LINK_WAIT_FOREVER;
        int byte = rx->io.read_byte(timeout);
        if (byte >= 0) {
            rx->buffer[rx->used++] = (uint8_t)byte;
            continue;
        }
        if (rx->used == 0) {
            if (rx->garbage)
                return garbage_event(rx);
            continue;
        }
        return bad_frame_event(rx, LINK_ERR_CUT_FRAME, (int32_t)rx->used);
    }
}
