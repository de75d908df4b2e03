/*
 * The NPU driver of the ethos-u fuzz target: linked beside fuzz_pte.c, so a mutated Ethos-U program
 * goes through the delegate's blob and command-stream parser (ethos_u_delegate.c) and, when it loads,
 * through one inference whose NPU job is handed here.
 *
 * The job is not computed: what is checked is what the runtime promises a driver (tinyrps_runtime.h).
 * Every byte of each region is touched (region 0 read, the scratch and fast scratch written), so a
 * region smaller than the size the runtime passes, or outside its allocation, is an AddressSanitizer
 * report; the payload is walked as a driver and the NPU read it (driver actions, then each command),
 * so a stream the delegate accepted that ends inside a two-word command is caught too. The job then reports success: the outputs are whatever the
 * scratch holds, and the harness reads every byte of them.
 *
 * With FUZZ_NPU_JOBS=FILE in the environment, the number of jobs run is written to FILE at exit: the
 * test of the seeds checks that they reach the NPU, not only the loader.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinyrps_runtime.h"

struct trt_npu_driver {
    int reserved;
};

static struct trt_npu_driver driver;
static volatile uint8_t sink;
static unsigned long jobs;

static void write_jobs(void)
{
    FILE *f = fopen(getenv("FUZZ_NPU_JOBS"), "w");
    if (f) {
        fprintf(f, "%lu\n", jobs);
        fclose(f);
    }
}

struct trt_npu_driver *trt_npu_reserve(void)
{
    static int registered;
    if (!registered && getenv("FUZZ_NPU_JOBS")) {
        registered = 1;
        atexit(write_jobs);
    }
    if (driver.reserved)
        abort(); /* the runtime releases each reservation before the next */
    driver.reserved = 1;
    return &driver;
}

void trt_npu_release(struct trt_npu_driver *d)
{
    if (d != &driver || !d->reserved)
        abort();
    d->reserved = 0;
}

static uint32_t word_at(const uint8_t *cmd, uint32_t index)
{
    uint32_t w;
    memcpy(&w, cmd + 4u * index, 4);
    return w;
}

/* The payload as a driver reads it: "COP1", driver actions (a three-word config, one-word NOPs), then
 * the command stream's tag, whose length is the rest; each command one word (bits 15..14 = 0) or two
 * (1). The delegate refuses a payload that is not so at load, so a loaded one that is not is a bug. */
static void walk_payload(const uint8_t *cmd, uint32_t bytes)
{
    const uint32_t n = bytes / 4;
    uint32_t at = 1;
    if (n < 4 || memcmp(cmd, "COP1", 4) != 0)
        abort();
    for (;;) {
        if (at >= n)
            abort();
        uint32_t w = word_at(cmd, at), tag = w & 0xFFu;
        if (tag == 0x01u)
            at += 3;
        else if (tag == 0x05u)
            at += 1;
        else if (tag == 0x02u && ((((w >> 8) & 0xFFu) << 16) | (w >> 16)) == n - at - 1)
            break;
        else
            abort();
    }
    for (at = at + 1; at < n;) {
        uint32_t kind = (word_at(cmd, at) >> 14) & 3u;
        if (kind > 1u || (kind == 1u && at + 1 >= n))
            abort();
        sink ^= (uint8_t)word_at(cmd, at + kind);
        at += 1 + kind;
    }
}

int trt_npu_invoke(struct trt_npu_driver *d, const void *command_stream, int command_stream_bytes,
                   uint64_t *const base_addresses, const size_t *base_sizes, int regions, void *user)
{
    (void)user;
    if (d != &driver || !d->reserved || regions != TRT_NPU_REGIONS || command_stream_bytes <= 0 ||
        command_stream_bytes % 4 != 0)
        abort(); /* the delegate checked the stream's length and passes its three regions */
    walk_payload(command_stream, (uint32_t)command_stream_bytes);
    for (int r = 0; r < regions; r++) {
        uint8_t *base = (uint8_t *)(uintptr_t)base_addresses[r];
        if (base_sizes[r] && !base)
            abort();
        for (size_t b = 0; b < base_sizes[r]; b++) {
            if (r == 0)
                sink ^= base[b];               /* the weights live in the program: read only */
            else
                base[b] = (uint8_t)(b * 13u + (unsigned)r);
        }
    }
    jobs++;
    return 0;
}
