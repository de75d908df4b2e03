/*
 * 16-byte vector loads and stores as four words where the address allows it.
 *
 * On a core, VLDRB.8 and VLDRW.32 of the same 16 bytes cost the same one instruction. An
 * emulator moves each element separately: a byte vector is 16 memory accesses, a word vector
 * 4 -- several times faster to emulate (QEMU runs the Helium build's inference in about half
 * the time with word loads in the hot loops). MVE word accesses must be word-aligned, so the
 * kernels use these where the alignment is known: buffers of their own, or a tensor whose
 * address and row lengths were checked once per call.
 */
#ifndef TINYRPS_MVE_LOAD_H
#define TINYRPS_MVE_LOAD_H

#include <arm_mve.h>
#include <stdint.h>

static inline int8x16_t trt_mve_load_words(const int8_t *p) {
    return vreinterpretq_s8_s32(vldrwq_s32((const int32_t *)(const void *)p));
}

static inline void trt_mve_store_words(int8_t *p, int8x16_t v) {
    vstrwq_s32((int32_t *)(void *)p, vreinterpretq_s32_s8(v));
}

static inline int trt_mve_word_aligned(const void *p) { return ((uintptr_t)p & 3u) == 0; }

#endif
