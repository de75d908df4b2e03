/*
 * The board's NPU driver on QEMU, which models no NPU: each job of a program's Ethos-U delegate
 * goes to the NPU model on the host over the NPU link (firmware/protocol/npu_link.h), the
 * driver interface of tinyrps_runtime.h implemented over semihosting. The host starts QEMU with
 * semihosting on and BOOT_FLAG_NPU_LINK set only when it serves the link; without the flag no
 * driver is available (trt_npu_reserve returns NULL) and the run fails with TRT_ERR_NPU, since a
 * board without a debugger attached must never execute a semihosting call.
 *
 * Any failure - a pipe that closes (the host died), a short read, a reply for another job or
 * from a host holding another program - fails the invoke; the runtime then fails the run, and the
 * board reports it on its channel. Nothing here waits without the host: a dead host closes its
 * pipes, and the reads and writes return.
 */
#include "npu_link.h"

#include <string.h>

#include "firmware.h"
#include "link_frame.h"
#include "semihost.h"

struct trt_npu_driver {
    firmware_state *fw;
    int request, reply;       /* semihosting handles, -1 until opened */
    uint32_t sequence;
    int busy;
};

static struct trt_npu_driver link_driver = {NULL, -1, -1, 0, 0};

void npu_link_start(firmware_state *fw)
{
    if (!(fw->model.flags & BOOT_FLAG_NPU_LINK) || fw->load_status != TRT_OK)
        return;
    link_driver.fw = fw;
    firmware_sha256(fw); /* now, not inside the first inference's count */
}

struct trt_npu_driver *trt_npu_reserve(void)
{
    struct trt_npu_driver *d = &link_driver;
    if (!d->fw || d->busy)
        return NULL;
    if (d->request < 0)
        d->request = semihost_open(NPU_LINK_REQUEST_PATH, SEMIHOST_OPEN_WRITE);
    if (d->reply < 0 && d->request >= 0)
        d->reply = semihost_open(NPU_LINK_REPLY_PATH, SEMIHOST_OPEN_READ);
    if (d->request < 0 || d->reply < 0)
        return NULL;
    d->busy = 1;
    return d;
}

void trt_npu_release(struct trt_npu_driver *d)
{
    if (d)
        d->busy = 0;
}

/* A link that failed once stays down: the host is gone or out of step. */
static int link_down(struct trt_npu_driver *d)
{
    d->fw = NULL;
    return -1;
}

int trt_npu_invoke(struct trt_npu_driver *d, const void *command_stream, int command_stream_bytes,
                   uint64_t *const base_addresses, const size_t *base_sizes, int regions, void *user)
{
    uint8_t header[NPU_LINK_REPLY_BYTES > NPU_LINK_REQUEST_BYTES ? NPU_LINK_REPLY_BYTES : NPU_LINK_REQUEST_BYTES];
    (void)user;
    if (!d || d != &link_driver || !d->fw || regions != 3 || command_stream_bytes <= 0)
        return -1;
    const uint8_t *sha = d->fw->model_sha256;
    memset(header, 0, sizeof header);
    memcpy(header + NPU_LINK_REQUEST_MAGIC, NPU_LINK_REQUEST_ID, 4);
    link_put_u32(header + NPU_LINK_REQUEST_VERSION, NPU_LINK_VERSION);
    link_put_u32(header + NPU_LINK_REQUEST_SEQUENCE, ++d->sequence);
    link_put_u32(header + NPU_LINK_REQUEST_CMD_BYTES, (uint32_t)command_stream_bytes);
    for (int r = 0; r < 3; r++)
        link_put_u32(header + NPU_LINK_REQUEST_SIZES + 4 * r, (uint32_t)base_sizes[r]);
    memcpy(header + NPU_LINK_REQUEST_SHA256, sha, SHA256_DIGEST_BYTES);
    void *r1 = (void *)(uintptr_t)base_addresses[1], *r2 = (void *)(uintptr_t)base_addresses[2];
    if (semihost_write_all(d->request, header, NPU_LINK_REQUEST_BYTES) != 0 ||
        semihost_write_all(d->request, command_stream, (size_t)command_stream_bytes) != 0 ||
        semihost_write_all(d->request, r1, base_sizes[1]) != 0 ||
        (base_sizes[2] && semihost_write_all(d->request, r2, base_sizes[2]) != 0))
        return link_down(d);
    if (semihost_read_all(d->reply, header, NPU_LINK_REPLY_BYTES) != 0 ||
        memcmp(header + NPU_LINK_REPLY_MAGIC, NPU_LINK_REPLY_ID, 4) != 0 ||
        link_get_u32(header + NPU_LINK_REPLY_VERSION) != NPU_LINK_VERSION ||
        link_get_u32(header + NPU_LINK_REPLY_SEQUENCE) != d->sequence)
        return link_down(d);
    /* the host's program must be this one, whatever its status says */
    if (memcmp(header + NPU_LINK_REPLY_SHA256, sha, SHA256_DIGEST_BYTES) != 0 ||
        link_get_u32(header + NPU_LINK_REPLY_STATUS) != NPU_LINK_OK)
        return -1;
    if (semihost_read_all(d->reply, r1, base_sizes[1]) != 0 ||
        (base_sizes[2] && semihost_read_all(d->reply, r2, base_sizes[2]) != 0))
        return link_down(d);
    return 0;
}
