/*
 * The DSP extension's SIMD instructions the DSP kernels use, as ACLE intrinsics on a core
 * that has them (__ARM_FEATURE_DSP) and as a portable C model of the same instructions
 * elsewhere, so the DSP code path also runs, bit for bit, in the native build (tests,
 * sanitizers):
 *
 *   trt_sxtb16(x)        SXTB16: bytes 0 and 2 of x, sign-extended into two halfwords
 *   trt_sxtb16_ror8(x)   SXTB16 x, ROR #8: bytes 1 and 3
 *   trt_smlad(a, b, acc) SMLAD: acc + a.lo * b.lo + a.hi * b.hi (signed halfwords, modulo 2^32)
 *   trt_read32(p)        four bytes as one word (an unaligned LDR on the core)
 */
#ifndef TINYRPS_DSP_INTRINSICS_H
#define TINYRPS_DSP_INTRINSICS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t trt_read32(const void *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP

#include <arm_acle.h>

static inline uint32_t trt_sxtb16(uint32_t x) { return (uint32_t)__sxtb16((int32_t)x); }
static inline uint32_t trt_sxtb16_ror8(uint32_t x) { return (uint32_t)__sxtb16((int32_t)(x >> 8 | x << 24)); }
static inline int32_t trt_smlad(uint32_t a, uint32_t b, int32_t acc) {
    return __smlad((int32_t)a, (int32_t)b, acc);
}

#else   /* the portable model */

static inline uint32_t trt_halfword_of_byte(uint32_t byte) { return (byte & 0x80u) ? (byte | 0xFF00u) : byte; }

static inline uint32_t trt_sxtb16(uint32_t x) {
    return trt_halfword_of_byte(x & 0xFFu) | trt_halfword_of_byte((x >> 16) & 0xFFu) << 16;
}

static inline uint32_t trt_sxtb16_ror8(uint32_t x) { return trt_sxtb16(x >> 8 | x << 24); }

static inline int32_t trt_halfword_value(uint32_t h) { return (h & 0x8000u) ? (int32_t)h - 0x10000 : (int32_t)h; }

static inline int32_t trt_smlad(uint32_t a, uint32_t b, int32_t acc) {
    int32_t lo = trt_halfword_value(a & 0xFFFFu) * trt_halfword_value(b & 0xFFFFu);
    int32_t hi = trt_halfword_value(a >> 16) * trt_halfword_value(b >> 16);
    uint32_t sum = (uint32_t)acc + (uint32_t)lo + (uint32_t)hi;   /* wraps like the instruction */
    return sum <= INT32_MAX ? (int32_t)sum : -(int32_t)(~sum) - 1;
}

#endif

#endif
