/*
 * The tinyrps device link: the wire format between a host and the firmware on
 * a serial line. src/tinyrps/firmware/link.py is the host side; docs/firmware.md
 * describes it for humans. All integers are little-endian.
 *
 *   offset  size  field
 *   0       2     sync: 0xA5 0x5A
 *   2       1     type: a command, its reply (command | 0x80) or LINK_ERROR
 *   3       1     sequence number: chosen by the host (1..255), echoed in the reply;
 *                 0 in messages the firmware sends on its own
 *   4       2     payload length N (at most LINK_MAX_PAYLOAD)
 *   6       N     payload
 *   6+N     4     CRC-32 (zlib) of bytes 2 .. 6+N-1 (type, sequence, length, payload)
 */
#ifndef TINYRPS_LINK_PROTOCOL_H
#define TINYRPS_LINK_PROTOCOL_H

#define LINK_PROTOCOL_VERSION 1

#define LINK_SYNC0 0xA5
#define LINK_SYNC1 0x5A
#define LINK_HEADER_BYTES 6
#define LINK_CRC_BYTES 4
#define LINK_MAX_PAYLOAD 1024
#define LINK_MAX_FRAME (LINK_HEADER_BYTES + LINK_MAX_PAYLOAD + LINK_CRC_BYTES)

/* A frame that stops arriving for this long is cut: dropped, and answered
 * with LINK_ERR_CUT_FRAME. Whole frames arrive much faster (0.2 ms/byte). */
#define LINK_INTERBYTE_TIMEOUT_MS 250
/* Bytes outside any frame are reported once the line is quiet this long. */
#define LINK_GARBAGE_REPORT_MS 100

/* Commands (host -> firmware). The reply type is command | LINK_REPLY. */
#define LINK_CMD_INFO 0x01  /* empty -> link_info_reply */
#define LINK_CMD_INFER 0x02 /* 784 bytes, a 28x28 uint8 image, row-major -> infer reply */
#define LINK_CMD_ECHO 0x03  /* any payload -> the same payload (link timing) */
#define LINK_REPLY 0x80
#define LINK_ERROR 0xFF     /* payload: link_error_reply */

/* Error codes (first byte of an error payload). */
#define LINK_ERR_BAD_CRC 1         /* the frame's CRC does not match */
#define LINK_ERR_TOO_LONG 2        /* length field above LINK_MAX_PAYLOAD */
#define LINK_ERR_CUT_FRAME 3       /* the frame stopped arriving */
#define LINK_ERR_GARBAGE 4         /* bytes outside any frame (value: how many) */
#define LINK_ERR_UNKNOWN_COMMAND 5 /* value: the type byte */
#define LINK_ERR_BAD_PAYLOAD 6     /* wrong payload size for the command (value: size) */
#define LINK_ERR_NO_PROGRAM 7      /* the program did not load (value: trt_status) */
#define LINK_ERR_INFER_FAILED 8    /* the runtime refused to run (value: trt_status) */
#define LINK_ERR_FAULT 9           /* CPU fault: the firmware reports it and resets */
#define LINK_ERR_OVERRUN 10        /* received bytes were lost (value: how many) */

/*
 * Error payload:     u8 code, u8 0, u16 0, i32 value, then up to 64 bytes of
 *                    ASCII text (no NUL).
 * INFO reply:        the fields of struct link_info below, packed, in order.
 * INFER reply:       i32 status (0), u32 n (outputs), u64 instructions of the
 *                    inference, n x i8 raw int8 outputs, n x f32 logits.
 */
#define LINK_ERROR_TEXT_MAX 64

#define LINK_VERSION_TEXT 16
#define LINK_BOARD_TEXT 16
#define LINK_DETAIL_TEXT 48

/* INFO reply layout (offsets in bytes). */
#define LINK_INFO_PROTOCOL 0          /* u16 LINK_PROTOCOL_VERSION */
#define LINK_INFO_SIZE 2              /* u16 size of this reply */
#define LINK_INFO_FIRMWARE 4          /* char[16] firmware version, NUL-padded */
#define LINK_INFO_BOARD 20            /* char[16] board name, NUL-padded */
#define LINK_INFO_SHA256 36           /* u8[32] SHA-256 of the program bytes */
#define LINK_INFO_MODEL_BYTES 68      /* u32 program length */
#define LINK_INFO_MODEL_SOURCE 72     /* u32 where the length came from (MODEL_SOURCE_*) */
#define LINK_INFO_LOAD_STATUS 76      /* i32 trt_status of trt_load */
#define LINK_INFO_ARENA_CAPACITY 80   /* u32 bytes of the firmware's static arena */
#define LINK_INFO_ARENA_NEEDED 84     /* u32 bytes the program's memory plan uses */
#define LINK_INFO_STACK_SIZE 88       /* u32 */
#define LINK_INFO_STACK_USED 92       /* u32 high-water mark so far */
#define LINK_INFO_BOOT_INSTRUCTIONS 96 /* u32 instructions to hash and load the program */
#define LINK_INFO_LOAD_DETAIL 100     /* char[48] trt_load's reason, NUL-padded */
#define LINK_INFO_BYTES 148

#define LINK_INFER_HEADER_BYTES 16

/* LINK_INFO_MODEL_SOURCE: how the firmware learned the program's length. */
#define LINK_MODEL_SOURCE_DESCRIPTOR 1 /* the boot descriptor written by the host/loader */
#define LINK_MODEL_SOURCE_HEADER 2     /* the program's own extended header (eh00) */

#endif
