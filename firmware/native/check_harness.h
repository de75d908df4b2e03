/*
 * What the host's check programs (tinyrps-kernel-checks, tinyrps-elementwise-checks) share: a
 * seeded xorshift64 stream, the check counters behind their JSON summaries, and aligned buffers.
 * Each program is one translation unit, so the counters are its own.
 */
#ifndef TINYRPS_CHECK_HARNESS_H
#define TINYRPS_CHECK_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long checks, failures;
static uint64_t rng = 88172645463325252ull;

static uint64_t next_random(void) {   /* xorshift64 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* The stream of seed `text` (a decimal number): each seed its own, none of them zero. */
static void seed_random(const char *text) { rng = strtoull(text, NULL, 10) * 0x9E3779B97F4A7C15ull + 1; }

/* Uniform in [lo, hi], both included. */
static int32_t pick(int32_t lo, int32_t hi) {
    return (int32_t)((int64_t)lo + (int64_t)(next_random() % (uint64_t)((int64_t)hi - lo + 1)));
}

/* Counts a check; prints the first 20 failures. */
static void check(int ok, const char *what, long round) {
    checks++;
    if (!ok) {
        failures++;
        if (failures <= 20) printf("FAIL %s (round %ld)\n", what, round);
    }
}

/* 16-byte aligned (the MVE and DSP kernels' loads), never NULL for n = 0; NULL when out of memory. */
static void *aligned(size_t n) {
    void *p = NULL;
    return posix_memalign(&p, 16, n ? n : 16) == 0 ? p : NULL;
}

static void fill_s8(int8_t *a, size_t n) {
    for (size_t i = 0; i < n; i++) a[i] = (int8_t)pick(-128, 127);
}

#endif
