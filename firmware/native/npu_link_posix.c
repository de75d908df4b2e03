/*
 * The NPU driver of tinyrps-native-npu: the NPU link (firmware/protocol/npu_link.h) over the named
 * pipes of a folder on this computer, the same jobs the board's driver sends over semihosting
 * (firmware/board/common/npu_link.c), to the same NPU model (src/tinyrps/firmware/npu_host.py).
 *
 * The folder is TINYRPS_NPU_LINK's; without it no NPU is available (trt_npu_reserve returns NULL)
 * and a run fails with TRT_ERR_NPU, while a load succeeds: `info` and `dump` need no NPU. The
 * program's hash, which the host checks, is given by the tool once it has read the program.
 * Any failure - a pipe that closes, a short read, a reply for another job or program - fails the
 * invoke, and the link stays down.
 */
#include "npu_link_posix.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "link_frame.h"
#include "npu_link.h"
#include "sha256.h"
#include "tinyrps_runtime.h"

struct trt_npu_driver {
    uint8_t sha[SHA256_DIGEST_BYTES];
    int known, request, reply, busy, down;
    uint32_t sequence;
};

static struct trt_npu_driver host_link = {{0}, 0, -1, -1, 0, 0, 0};

void npu_link_posix_program(const uint8_t *pte, size_t len) {
    sha256(pte, len, host_link.sha);
    host_link.known = 1;
}

static int open_pipe(const char *folder, const char *name, int flags) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", folder, name) >= (int)sizeof path) return -1;
    return open(path, flags);
}

struct trt_npu_driver *trt_npu_reserve(void) {
    struct trt_npu_driver *d = &host_link;
    const char *folder = getenv("TINYRPS_NPU_LINK");
    if (!folder || !d->known || d->down || d->busy) return NULL;
    if (d->request < 0) d->request = open_pipe(folder, NPU_LINK_REQUEST_PATH, O_WRONLY);
    if (d->reply < 0 && d->request >= 0) d->reply = open_pipe(folder, NPU_LINK_REPLY_PATH, O_RDONLY);
    if (d->request < 0 || d->reply < 0) return NULL;
    d->busy = 1;
    return d;
}

void trt_npu_release(struct trt_npu_driver *d) {
    if (d) d->busy = 0;
}

static int write_all(int fd, const void *data, size_t len) {
    const uint8_t *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n <= 0) return -1;
        p += n, len -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *data, size_t len) {
    uint8_t *p = data;
    while (len) {
        ssize_t n = read(fd, p, len);
        if (n <= 0) return -1;
        p += n, len -= (size_t)n;
    }
    return 0;
}

static int link_down(struct trt_npu_driver *d) {
    d->down = 1;
    return -1;
}

int trt_npu_invoke(struct trt_npu_driver *d, const void *command_stream, int command_stream_bytes,
                   uint64_t *const base_addresses, const size_t *base_sizes, int regions, void *user) {
    uint8_t header[NPU_LINK_REPLY_BYTES > NPU_LINK_REQUEST_BYTES ? NPU_LINK_REPLY_BYTES : NPU_LINK_REQUEST_BYTES];
    (void)user;
    if (d != &host_link || d->down || regions != TRT_NPU_REGIONS || command_stream_bytes <= 0) return -1;
    memset(header, 0, sizeof header);
    memcpy(header + NPU_LINK_REQUEST_MAGIC, NPU_LINK_REQUEST_ID, 4);
    link_put_u32(header + NPU_LINK_REQUEST_VERSION, NPU_LINK_VERSION);
    link_put_u32(header + NPU_LINK_REQUEST_SEQUENCE, ++d->sequence);
    link_put_u32(header + NPU_LINK_REQUEST_CMD_BYTES, (uint32_t)command_stream_bytes);
    for (int r = 0; r < TRT_NPU_REGIONS; r++) link_put_u32(header + NPU_LINK_REQUEST_SIZES + 4 * r, (uint32_t)base_sizes[r]);
    memcpy(header + NPU_LINK_REQUEST_SHA256, d->sha, SHA256_DIGEST_BYTES);
    void *r1 = (void *)(uintptr_t)base_addresses[1], *r2 = (void *)(uintptr_t)base_addresses[2];
    if (write_all(d->request, header, NPU_LINK_REQUEST_BYTES) || write_all(d->request, command_stream, (size_t)command_stream_bytes) ||
        write_all(d->request, r1, base_sizes[1]) || (base_sizes[2] && write_all(d->request, r2, base_sizes[2])))
        return link_down(d);
    if (read_all(d->reply, header, NPU_LINK_REPLY_BYTES) || memcmp(header + NPU_LINK_REPLY_MAGIC, NPU_LINK_REPLY_ID, 4) ||
        link_get_u32(header + NPU_LINK_REPLY_VERSION) != NPU_LINK_VERSION ||
        link_get_u32(header + NPU_LINK_REPLY_SEQUENCE) != d->sequence)
        return link_down(d);
    if (memcmp(header + NPU_LINK_REPLY_SHA256, d->sha, SHA256_DIGEST_BYTES) ||
        link_get_u32(header + NPU_LINK_REPLY_STATUS) != NPU_LINK_OK)
        return -1;
    if (read_all(d->reply, r1, base_sizes[1]) || (base_sizes[2] && read_all(d->reply, r2, base_sizes[2])))
        return link_down(d);
    return 0;
}
