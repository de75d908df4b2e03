/*
 * The NPU link: how the board's NPU driver on QEMU (firmware/board/common/npu_link.c) hands each
 * Ethos-U job to the NPU model on the host (src/tinyrps/firmware/npu_host.py), which reads its
 * constants and layouts from this file (src/tinyrps/firmware/c_facts.py; keep the one-line forms).
 *
 * The job travels over QEMU's semihosting channel, through two named pipes the host creates in
 * QEMU's working folder: the board writes a request to NPU_LINK_REQUEST_PATH and reads the reply
 * from NPU_LINK_REPLY_PATH. (The board's UART moves about 5 KB/s under QEMU; a job moves about
 * 90 KB.) The host holds the program too, so region 0 (the weights) never travels: the request
 * names the program by its SHA-256 and carries the command stream and regions 1 and 2; the reply
 * carries regions 1 and 2 as the NPU left them. Each side refuses a program whose hash is not
 * its own. All integers are little-endian.
 *
 *   request: the header below, the command stream (CMD_BYTES), region 1, region 2 (their sizes)
 *   reply:   the header below; when STATUS is 0, region 1 and region 2 (the request's sizes)
 */
#ifndef TINYRPS_NPU_LINK_H
#define TINYRPS_NPU_LINK_H

#define NPU_LINK_VERSION 1
#define NPU_LINK_REQUEST_PATH "npu-request"
#define NPU_LINK_REPLY_PATH "npu-reply"
#define NPU_LINK_REQUEST_ID "TNPQ"
#define NPU_LINK_REPLY_ID "TNPR"

#define NPU_LINK_REQUEST_FIELDS(X)                                                          \
    X(MAGIC, 0, text4)             /* NPU_LINK_REQUEST_ID */                                \
    X(VERSION, 4, u32)             /* NPU_LINK_VERSION */                                   \
    X(SEQUENCE, 8, u32)            /* the job's number since boot, from 1 */                \
    X(CMD_BYTES, 12, u32)          /* the COP1 payload's bytes */                           \
    X(SIZES, 16, u32x3)            /* bytes of regions 0 (weights), 1 (scratch), 2 (fast) */ \
    X(PAD, 28, u32)                                                                         \
    X(SHA256, 32, bytes32)         /* of the program the board holds */
#define NPU_LINK_REQUEST_BYTES 64

#define NPU_LINK_REPLY_FIELDS(X)                                                            \
    X(MAGIC, 0, text4)             /* NPU_LINK_REPLY_ID */                                  \
    X(VERSION, 4, u32)                                                                      \
    X(SEQUENCE, 8, u32)            /* the request's */                                      \
    X(STATUS, 12, u32)             /* NPU_LINK_STATUS_LIST */                               \
    X(SHA256, 16, bytes32)         /* of the program the host holds */                      \
    X(TEXT, 48, text64)            /* why, when STATUS is not 0 */
#define NPU_LINK_REPLY_BYTES 112

/* Reply statuses: X(name, value, text). */
#define NPU_LINK_STATUS_LIST(X)                                                              \
    X(NPU_LINK_OK, 0, "ok")                                                                  \
    X(NPU_LINK_WRONG_PROGRAM, 1, "the host holds another program")                           \
    X(NPU_LINK_UNKNOWN_STREAM, 2, "no delegate of the host's program has this command stream") \
    X(NPU_LINK_BAD_REQUEST, 3, "the request does not match the program's delegate")          \
    X(NPU_LINK_FAILED, 4, "the NPU model could not run the job")

#define NPU_LINK_ENUM(name, value, text) name = value,
enum { NPU_LINK_STATUS_LIST(NPU_LINK_ENUM) };
#undef NPU_LINK_ENUM

#define NPU_LINK_FIELD_REQUEST(f, o, t) NPU_LINK_REQUEST_##f = o,
#define NPU_LINK_FIELD_REPLY(f, o, t) NPU_LINK_REPLY_##f = o,
enum { NPU_LINK_REQUEST_FIELDS(NPU_LINK_FIELD_REQUEST) NPU_LINK_REPLY_FIELDS(NPU_LINK_FIELD_REPLY) };
#undef NPU_LINK_FIELD_REQUEST
#undef NPU_LINK_FIELD_REPLY

#endif
