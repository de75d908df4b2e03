/*
 * An NPU driver for @name@ on QEMU (written by tinyrps deploy library): the three functions of the
 * runtime's NPU driver interface (src/runtime/tinyrps_runtime.h), sending each job of the program's
 * Ethos-U delegate over semihosting to tinyrps's NPU model on the host, which QEMU lacks. The host
 * (`python -m tinyrps.firmware.npu_host PROGRAM FOLDER`) serves two named pipes in QEMU's working
 * folder: a request carries the command stream and regions 1 and 2, the reply regions 1 and 2 as
 * the NPU left them. Region 0, the weights, stays: the host holds the same program, named by its
 * SHA-256, and each side refuses a job of another program. A pipe that closes, a short read or a
 * reply of another job fails the invoke, and the link stays down.
 *
 * GNU C (the semihosting call is inline assembly); QEMU must run with -semihosting-config enable=on.
 * On a board with an Ethos-U, link a driver over Arm's Ethos-U core driver instead (README.md).
 */
#include <stdint.h>
#include <string.h>

#include "../src/runtime/tinyrps_runtime.h"

#define REQUEST_PATH "@request_path@"
#define REPLY_PATH "@reply_path@"
#define VERSION @version@u
#define REQUEST_BYTES @request_bytes@
#define REPLY_BYTES @reply_bytes@
#define STATUS_OK @status_ok@u

static const uint8_t program_sha256[32] = {@sha256_bytes@};

struct trt_npu_driver {
    int request, reply, busy, down;
    uint32_t sequence;
};

static struct trt_npu_driver qemu_link = {-1, -1, 0, 0, 0};

static uintptr_t semihosting(uintptr_t operation, const void *block) {
    register uintptr_t r0 __asm("r0") = operation;
    register uintptr_t r1 __asm("r1") = (uintptr_t)block;
    __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

static int open_pipe(const char *path, uintptr_t mode) {   /* mode 1 "rb", 5 "wb" */
    uintptr_t block[3] = {(uintptr_t)path, mode, strlen(path)};
    return (int)(intptr_t)semihosting(0x01u, block);
}

/* 0x05 write, 0x06 read: each returns the bytes left unmoved, and on a pipe may move fewer than asked
 * (a big region takes several calls); a call that moves none is the end, or an error. */
static int move_all(uintptr_t operation, int file, const void *data, size_t len) {
    const uint8_t *at = data;
    while (len > 0) {
        uintptr_t block[3] = {(uintptr_t)file, (uintptr_t)at, len};
        uintptr_t left = semihosting(operation, block);
        if (left >= len) return -1;
        at += len - left;
        len = left;
    }
    return 0;
}

static void put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

struct trt_npu_driver *trt_npu_reserve(void) {
    struct trt_npu_driver *d = &qemu_link;
    if (d->down || d->busy) return NULL;
    if (d->request < 0) d->request = open_pipe(REQUEST_PATH, 5u);
    if (d->reply < 0 && d->request >= 0) d->reply = open_pipe(REPLY_PATH, 1u);
    if (d->request < 0 || d->reply < 0) return NULL;
    d->busy = 1;
    return d;
}

void trt_npu_release(struct trt_npu_driver *d) {
    if (d) d->busy = 0;
}

static int link_down(struct trt_npu_driver *d) {
    d->down = 1;
    return -1;
}

int trt_npu_invoke(struct trt_npu_driver *d, const void *command_stream, int command_stream_bytes,
                   uint64_t *const base_addresses, const size_t *base_sizes, int regions, void *user) {
    uint8_t header[REPLY_BYTES > REQUEST_BYTES ? REPLY_BYTES : REQUEST_BYTES];
    (void)user;
    if (d != &qemu_link || d->down || regions != TRT_NPU_REGIONS || command_stream_bytes <= 0) return -1;
    memset(header, 0, sizeof header);
    memcpy(header + @q_magic@, "@request_id@", 4);
    put_u32(header + @q_version@, VERSION);
    put_u32(header + @q_sequence@, ++d->sequence);
    put_u32(header + @q_cmd_bytes@, (uint32_t)command_stream_bytes);
    for (int r = 0; r < TRT_NPU_REGIONS; r++) put_u32(header + @q_sizes@ + 4 * r, (uint32_t)base_sizes[r]);
    memcpy(header + @q_sha256@, program_sha256, 32);
    const void *r1 = (const void *)(uintptr_t)base_addresses[1], *r2 = (const void *)(uintptr_t)base_addresses[2];
    if (move_all(0x05u, d->request, header, REQUEST_BYTES) ||
        move_all(0x05u, d->request, command_stream, (size_t)command_stream_bytes) ||
        move_all(0x05u, d->request, r1, base_sizes[1]) || move_all(0x05u, d->request, r2, base_sizes[2]))
        return link_down(d);
    if (move_all(0x06u, d->reply, header, REPLY_BYTES) || memcmp(header + @r_magic@, "@reply_id@", 4) ||
        get_u32(header + @r_version@) != VERSION || get_u32(header + @r_sequence@) != d->sequence)
        return link_down(d);
    /* the host's program must be this one, whatever its status says */
    if (memcmp(header + @r_sha256@, program_sha256, 32) || get_u32(header + @r_status@) != STATUS_OK) return -1;
    if (move_all(0x06u, d->reply, r1, base_sizes[1]) || move_all(0x06u, d->reply, r2, base_sizes[2]))
        return link_down(d);
    return 0;
}
