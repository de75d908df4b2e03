/*
 * The tinyrps device link: the wire format between a host and the firmware on
 * a serial line. docs/firmware.md describes it for humans; the host side
 * (src/tinyrps/firmware/link.py) reads its constants, lists and layouts from this
 * file (src/tinyrps/firmware/c_facts.py), so keep their one-line forms:
 * `#define NAME value`, `X(NAME, value, "text")` rows, `X(FIELD, offset, type)` rows.
 * All integers are little-endian.
 *
 *   offset  size  field
 *   0       2     sync: 0xA5 0x5A
 *   2       1     type: a command, its reply (command | 0x80) or LINK_ERROR
 *   3       1     sequence number: chosen by the host (1..255), echoed in the reply;
 *                 0 in messages the firmware sends on its own
 *   4       2     payload length N (at most LINK_MAX_PAYLOAD)
 *   6       N     payload
 *   6+N     4     CRC-32 (zlib) of bytes 2 .. 6+N-1 (type, sequence, length, payload)
 *
 * Tensors of any size travel in pieces: WRITE puts elements of an input at an element
 * offset, RUN runs the program on the inputs as written (its request may carry the last
 * piece, its reply the outputs that fit), READ returns the elements of an output (or its
 * raw int8 values) from an element offset, as many as fit one frame.
 * Elements are in the tensor's own order in memory (its dim_order), as TENSOR describes.
 */
#ifndef TINYRPS_LINK_PROTOCOL_H
#define TINYRPS_LINK_PROTOCOL_H

#define LINK_PROTOCOL_VERSION 3

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

/* Commands (host -> firmware): X(name, type byte, name the host uses). The reply type is
 * command | LINK_REPLY; each command's request and reply payloads are below. */
#define LINK_COMMAND_LIST(X)          \
    X(LINK_CMD_INFO, 0x01, "info")     \
    X(LINK_CMD_INFER, 0x02, "infer")   \
    X(LINK_CMD_ECHO, 0x03, "echo")     \
    X(LINK_CMD_TENSOR, 0x04, "tensor") \
    X(LINK_CMD_WRITE, 0x05, "write")   \
    X(LINK_CMD_RUN, 0x06, "run")       \
    X(LINK_CMD_READ, 0x07, "read")
#define LINK_REPLY 0x80
#define LINK_ERROR 0xFF     /* payload: the error layout below, then text */

/* Error codes (first byte of an error payload): X(name, code, what it means to the host's user). */
#define LINK_ERROR_LIST(X)                                                                                   \
    X(LINK_ERR_BAD_CRC, 1, "a frame arrived with a bad CRC")                                                 \
    X(LINK_ERR_TOO_LONG, 2, "a frame announced a payload above the maximum")       /* value: the length */  \
    X(LINK_ERR_CUT_FRAME, 3, "a frame stopped arriving before its end")            /* value: bytes */       \
    X(LINK_ERR_GARBAGE, 4, "bytes outside any frame were skipped")                 /* value: how many */    \
    X(LINK_ERR_UNKNOWN_COMMAND, 5, "the firmware does not know this command")      /* value: the type */    \
    X(LINK_ERR_BAD_PAYLOAD, 6, "the payload has the wrong size for this command")  /* value: the size */    \
    X(LINK_ERR_NO_PROGRAM, 7, "the program did not load on the firmware")          /* value: trt_status */  \
    X(LINK_ERR_INFER_FAILED, 8, "the runtime refused to run the inference")        /* value: trt_status */  \
    X(LINK_ERR_FAULT, 9, "the firmware hit a CPU fault and reset")                                           \
    X(LINK_ERR_OVERRUN, 10, "received bytes were lost (receive queue overrun)")    /* value: how many */    \
    X(LINK_ERR_BAD_TENSOR, 11, "the request names no such tensor, part or elements") /* value: see text */

#define LINK_ENUM_ENTRY(name, value, text) name = value,
enum { LINK_COMMAND_LIST(LINK_ENUM_ENTRY) LINK_ERROR_LIST(LINK_ENUM_ENTRY) };

#define LINK_ERROR_TEXT_MAX 64

/* Payload layouts: X(field, offset, type); types u8/u16/u32/u64/i32 (little-endian), textN (N
 * bytes of ASCII, NUL-padded), bytesN, u32xN / i32xN (N of them). Each has its _BYTES size. */

/* Error payload: then up to LINK_ERROR_TEXT_MAX bytes of ASCII text (no NUL). */
#define LINK_ERROR_FIELDS(X) X(CODE, 0, u8) X(PAD1, 1, u8) X(PAD2, 2, u16) X(VALUE, 4, i32)
#define LINK_ERROR_HEADER_BYTES 8

/* INFO: empty request. Reply: */
#define LINK_INFO_FIELDS(X)                                                                                   \
    X(PROTOCOL, 0, u16)            /* LINK_PROTOCOL_VERSION */                                               \
    X(SIZE, 2, u16)                /* LINK_INFO_BYTES */                                                     \
    X(FIRMWARE, 4, text16)         /* firmware version */                                                    \
    X(BOARD, 20, text16)           /* the port's name */                                                     \
    X(SHA256, 36, bytes32)         /* SHA-256 of the program bytes (computed on the first INFO) */           \
    X(MODEL_BYTES, 68, u32)        /* program length */                                                      \
    X(MODEL_SOURCE, 72, u32)       /* where the length came from: LINK_MODEL_SOURCE_LIST */                  \
    X(LOAD_STATUS, 76, i32)        /* trt_status of trt_load */                                              \
    X(ARENA_CAPACITY, 80, u32)     /* bytes of the firmware's arena */                                       \
    X(ARENA_NEEDED, 84, u32)       /* bytes the program needs (also when it did not fit) */                 \
    X(STACK_SIZE, 88, u32)                                                                                   \
    X(STACK_USED, 92, u32)         /* high-water mark so far */                                              \
    X(BOOT_INSTRUCTIONS, 96, u32)  /* instructions from reset to ready (the program found and loaded) */     \
    X(LOAD_DETAIL, 100, text48)    /* trt_load's reason */                                                   \
    X(INPUTS, 148, u16)            /* the program's inputs (0 unless it loaded); TENSOR describes each */    \
    X(OUTPUTS, 150, u16)           /* and outputs */                                                         \
    X(LIMIT_COUNT, 152, u16)       /* TRT_LIMIT_COUNT */                                                     \
    X(PAD, 154, u16)                                                                                         \
    X(LIMITS, 156, u32x16)         /* this build's limits, in TRT_LIMIT_LIST order, 0 after the last */      \
    X(LOAD_INSTRUCTIONS, 220, u32) /* trt_load's share of BOOT_INSTRUCTIONS */                               \
    X(SHA256_INSTRUCTIONS, 224, u32) /* instructions the hash took (on the first INFO; not part of the boot) */
#define LINK_INFO_BYTES 228
#define LINK_MAX_LIMITS 16

/* How the firmware learned the program's length (INFO's MODEL_SOURCE). */
#define LINK_MODEL_SOURCE_LIST(X)                         \
    X(LINK_MODEL_SOURCE_DESCRIPTOR, 1, "boot descriptor") \
    X(LINK_MODEL_SOURCE_HEADER, 2, "program header")
enum { LINK_MODEL_SOURCE_LIST(LINK_ENUM_ENTRY) };

/* INFER (the image-classifier convenience): request a 28x28 uint8 image, row-major
 * (LINK_INFER_IMAGE_BYTES). Reply: this header, then n x i8 raw outputs, n x f32 logits. */
#define LINK_INFER_IMAGE_BYTES 784
#define LINK_INFER_FIELDS(X) X(STATUS, 0, i32) X(OUTPUTS, 4, u32) X(INSTRUCTIONS, 8, u64)
#define LINK_INFER_HEADER_BYTES 16

/* TENSOR: request which tensor; reply its description (tensor_desc.h). */
#define LINK_TENSOR_FIELDS(X) X(KIND, 0, u8) X(INDEX, 1, u8)
#define LINK_TENSOR_REQUEST_BYTES 2
#define LINK_TENSOR_KIND_LIST(X) X(LINK_TENSOR_INPUT, 0, "input") X(LINK_TENSOR_OUTPUT, 1, "output")
enum { LINK_TENSOR_KIND_LIST(LINK_ENUM_ENTRY) };

/* WRITE: request this header, then the data: whole elements of input INDEX from element FIRST
 * on, in its memory order, as ENCODING says. Reply: FIRST and COUNT, the elements written. */
#define LINK_WRITE_FIELDS(X) X(INDEX, 0, u8) X(ENCODING, 1, u8) X(PAD, 2, u16) X(FIRST, 4, u32)
#define LINK_WRITE_HEADER_BYTES 8
#define LINK_WRITE_REPLY_FIELDS(X) X(FIRST, 0, u32) X(COUNT, 4, u32)
#define LINK_WRITE_REPLY_BYTES 8
/* raw: the elements' own bytes; image: one uint8 v per element of a float32 input, which
 * becomes (float)v / 255.0f (an image's pixels in a quarter of the bytes) */
#define LINK_ENCODING_LIST(X) X(LINK_ENCODING_RAW, 0, "raw") X(LINK_ENCODING_IMAGE, 1, "uint8 / 255")
enum { LINK_ENCODING_LIST(LINK_ENUM_ENTRY) };

/* RUN: runs the program on the inputs as written (write them all before every run). The request
 * is empty, or carries the last piece of the inputs as a WRITE request does (header and data),
 * written first. Reply: STATUS (0), the instructions of trt_run, then the first OUTPUTS outputs
 * in full, as many as fit the frame: each output's values, then its raw int8 values when it has
 * them (the others are READ). So a small program's inference is one exchange. */
#define LINK_RUN_FIELDS(X) X(STATUS, 0, i32) X(OUTPUTS, 4, u16) X(PAD, 6, u16) X(INSTRUCTIONS, 8, u64)
#define LINK_RUN_REPLY_BYTES 16

/* READ: request which output, which part, from which element. Reply: this header, then as many
 * whole elements from FIRST on as fit one frame; TOTAL is the part's element count. */
#define LINK_READ_FIELDS(X) X(INDEX, 0, u8) X(PART, 1, u8) X(PAD, 2, u16) X(FIRST, 4, u32)
#define LINK_READ_REQUEST_BYTES 8
#define LINK_READ_REPLY_FIELDS(X) X(FIRST, 0, u32) X(TOTAL, 4, u32)
#define LINK_READ_REPLY_HEADER_BYTES 8
#define LINK_PART_LIST(X) X(LINK_PART_VALUES, 0, "values") X(LINK_PART_INT8, 1, "int8")
enum { LINK_PART_LIST(LINK_ENUM_ENTRY) };

/* The layouts' offsets as LINK_<LAYOUT>_<FIELD> constants. */
#define LINK_FIELD_ERROR(f, o, t) LINK_ERROR_##f = o,
#define LINK_FIELD_INFO(f, o, t) LINK_INFO_##f = o,
#define LINK_FIELD_INFER(f, o, t) LINK_INFER_##f = o,
#define LINK_FIELD_TENSOR(f, o, t) LINK_TENSOR_##f = o,
#define LINK_FIELD_WRITE(f, o, t) LINK_WRITE_##f = o,
#define LINK_FIELD_WRITE_REPLY(f, o, t) LINK_WRITE_REPLY_##f = o,
#define LINK_FIELD_RUN(f, o, t) LINK_RUN_##f = o,
#define LINK_FIELD_READ(f, o, t) LINK_READ_##f = o,
#define LINK_FIELD_READ_REPLY(f, o, t) LINK_READ_REPLY_##f = o,
enum {
    LINK_ERROR_FIELDS(LINK_FIELD_ERROR) LINK_INFO_FIELDS(LINK_FIELD_INFO) LINK_INFER_FIELDS(LINK_FIELD_INFER)
    LINK_TENSOR_FIELDS(LINK_FIELD_TENSOR) LINK_WRITE_FIELDS(LINK_FIELD_WRITE)
    LINK_WRITE_REPLY_FIELDS(LINK_FIELD_WRITE_REPLY) LINK_RUN_FIELDS(LINK_FIELD_RUN)
    LINK_READ_FIELDS(LINK_FIELD_READ) LINK_READ_REPLY_FIELDS(LINK_FIELD_READ_REPLY)
};

#endif
