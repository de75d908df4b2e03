/*
 * The DSP extension's SIMD instructions the DSP kernels use, as ACLE intrinsics on a core
 * that has them (__ARM_FEATURE_DSP) and as a portable C model of the same instructions
 * elsewhere, so the DSP code path also runs, bit for bit, in the native build (tests,
 * sanitizers):
 *
 *   trt_sxtb16(x)        SXTB16: bytes 0 and 2 of x, sign-extended into two halfwords
 *   trt_sxtb16_ror8(x)   SXTB16 x, ROR #8: bytes 1 and 3
 *   trt_smlad(a, b, acc) SMLAD: acc + a.lo * b.lo + a.hi * b.hi (signed halfwords, modulo 2^32)
 *   trt_max4(a, b)       SSUB8 then SEL: the larger of each of the four signed byte pairs
 *   trt_min4(a, b)       the same with SEL's operands swapped: the smaller
 *   trt_smmulr(a, b)     SMMULR: (a * b + 2^31) >> 32, the rounded high word of the 64-bit product
 *   trt_ssat8(v)         SSAT #8: v saturated to [-128, 127]
 *   trt_pack16(lo, hi)   PKHBT: the low halfwords of lo and hi (lo's in the low half)
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
/* GCC 12's ACLE has no rotating form, and does not fold a rotate into SXTB16 by itself */
static inline uint32_t trt_sxtb16_ror8(uint32_t x) {
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}
static inline int32_t trt_smlad(uint32_t a, uint32_t b, int32_t acc) {
    return __smlad((int32_t)a, (int32_t)b, acc);
}
static inline uint32_t trt_max4(uint32_t a, uint32_t b) {
    (void)__ssub8((int8x4_t)a, (int8x4_t)b);   /* sets the GE flag of each byte where a >= b */
    return (uint32_t)__sel((uint8x4_t)a, (uint8x4_t)b);
}
static inline uint32_t trt_min4(uint32_t a, uint32_t b) {
    (void)__ssub8((int8x4_t)a, (int8x4_t)b);
    return (uint32_t)__sel((uint8x4_t)b, (uint8x4_t)a);
}
/* GCC 12's ACLE has no SMMULR intrinsic */
static inline int32_t trt_smmulr(int32_t a, int32_t b) {
    int32_t r;
    __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
static inline int32_t trt_ssat8(int32_t v) { return __ssat(v, 8); }
static inline uint32_t trt_pack16(uint32_t lo, uint32_t hi) {
    uint32_t r;
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(r) : "r"(lo), "r"(hi));
    return r;
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

static inline uint32_t trt_byte_pick(uint32_t a, uint32_t b, int larger) {
    uint32_t r = 0;
    for (int i = 0; i < 32; i += 8) {
        int32_t x = (int32_t)((a >> i) & 0xFFu), y = (int32_t)((b >> i) & 0xFFu);
        x -= (x & 0x80) << 1;
        y -= (y & 0x80) << 1;
        r |= (uint32_t)((larger ? (x >= y ? x : y) : (x >= y ? y : x)) & 0xFF) << i;
    }
    return r;
}
static inline uint32_t trt_max4(uint32_t a, uint32_t b) { return trt_byte_pick(a, b, 1); }
static inline uint32_t trt_min4(uint32_t a, uint32_t b) { return trt_byte_pick(a, b, 0); }

static inline int32_t trt_smmulr(int32_t a, int32_t b) {
    /* the rounded high word; (a * b + 2^31) fits int64 for all int32 a, b */
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 31)) >> 32);
}

static inline int32_t trt_ssat8(int32_t v) { return v < -128 ? -128 : (v > 127 ? 127 : v); }
static inline uint32_t trt_pack16(uint32_t lo, uint32_t hi) { return (lo & 0xFFFFu) | (hi << 16); }

#endif

#endif
