/*
 * Framing of the device link (wire format in link_protocol.h): sending frames,
 * and a receiver that turns a byte stream with noise, cut frames and
 * corrupted frames into valid frames and error reports, resynchronising on
 * the next sync word. Portable C: the byte I/O comes from the caller.
 */
#ifndef TINYRPS_LINK_FRAME_H
#define TINYRPS_LINK_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "link_protocol.h"

#define LINK_WAIT_FOREVER 0xFFFFFFFFu

typedef struct {
    /* Next received byte (0..255), or -1 when none arrives within timeout_ms. */
    int (*read_byte)(uint32_t timeout_ms);
    void (*write)(const uint8_t *data, size_t len);
} link_io;

typedef struct {
    uint8_t type;
    uint8_t seq;
    uint16_t length;
    const uint8_t *payload; /* inside the receiver's buffer: valid until the next link_next() */
} link_frame;

typedef struct {
    bool is_error;     /* false: frame is valid; true: report error/value to seq */
    link_frame frame;
    uint8_t error;     /* LINK_ERR_* */
    uint8_t seq;       /* sequence number of the bad frame when known, else 0 */
    int32_t value;
} link_event;

typedef struct {
    link_io io;
    uint8_t buffer[LINK_MAX_FRAME];
    size_t used;            /* bytes in buffer */
    size_t delivered;       /* bytes of the frame last returned, dropped on the next call */
    uint32_t garbage;       /* bytes skipped outside frames, not yet reported */
    bool after_bad_frame;   /* bytes skipped now belong to an already reported frame */
} link_receiver;

void link_receiver_init(link_receiver *rx, link_io io);

/* Blocks until a valid frame arrives or there is a framing problem to report. */
link_event link_next(link_receiver *rx);

void link_send(const link_io *io, uint8_t type, uint8_t seq, const uint8_t *payload, size_t length);
void link_send_error(const link_io *io, uint8_t seq, uint8_t code, int32_t value, const char *text);

/* Little-endian field helpers for payloads. */
void link_put_u16(uint8_t *p, uint16_t v);
void link_put_u32(uint8_t *p, uint32_t v);
void link_put_u64(uint8_t *p, uint64_t v);
uint16_t link_get_u16(const uint8_t *p);
uint32_t link_get_u32(const uint8_t *p);

#endif
