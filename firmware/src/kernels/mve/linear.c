/*
 * cortex_m::quantized_linear.out with Helium -- int8 fully connected layer, weights read in
 * place (the first TinyRPS layer's 401 kB never leave the program).
 *
 * Arithmetic: as kernels/c/linear.c (both forms; linear_finish.h does everything after the
 * dot products). Hot loop: four output rows share each 16-byte input vector, four VMLADAVA
 * per step (64 MACs); the depth's remainder is one tail-predicated step. sum(x), needed
 * when filter_offset != 0, is VADDVA over the same vectors, once per input row. Rows that
 * start on words are read as words (mve_load.h), by a loop in assembly whose loads and MACs
 * interleave (dot4_words).
 * The four results are finished together in int32 lanes (finish4): the bias form's sum wraps
 * modulo 2^32 as the scalar one does, and the kernel_sum form's int64 sum is taken in int32
 * when no input can make it leave int32 (checked at load: kernel_sum_fits); then one vector
 * requantization (mve_requantize.h).
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "../linear_finish.h"
#include "../weight_sums.h"
#include "kernels_mve.h"
#include "mve_load.h"
#include "mve_requantize.h"

size_t trt_linear_mve_scratch_bytes(const trt_linear_params *p) { return trt_linear_sums_bytes(p); }

void trt_linear_mve_prepare(trt_linear_params *p, void *scratch) {
    trt_linear_prepare_sums(p, scratch);
    p->kernel_sum_fits = p->kernel_sum != NULL && trt_linear_accumulators_below(p, 0, (int64_t)INT32_MAX + 1);
}

/* Outputs o .. o + 3 of a row from their dot products (the formulas: kernels/c/linear.c), on the
 * vector requantization (the caller checked trt_mve_requant_is_vector). */
static inline void finish4(const trt_linear_params *p, int32_t o, const int32_t acc[4], int32_t input_sum,
                           int8_t *out) {
    int32x4_t v = vldrwq_s32(acc);
    if (p->kernel_sum) {
        /* |input_sum * filter_offset| is within the load-time bound */
        v = vaddq_s32(v, vldrwq_s32(p->kernel_sum + o));
        v = vaddq_n_s32(v, input_sum * p->filter_offset);
    } else {
        const uint32_t terms = (uint32_t)p->filter_offset * (uint32_t)input_sum +
                               (uint32_t)p->depth * (uint32_t)p->input_offset * (uint32_t)p->filter_offset;
        if (p->input_offset != 0) v = vmlaq_n_s32(v, vldrwq_s32(p->weight_sums + o), p->input_offset);
        v = vaddq_n_s32(v, trt_wrap32(terms));
        if (p->bias) v = vaddq_s32(v, vldrwq_s32(p->bias + o));
    }
    v = vaddq_n_s32(trt_mve_requantize_s32(v, p->multiplier, p->shift), p->output_offset);
    vstrbq_s32(out + o, vminq_s32(vmaxq_s32(v, vdupq_n_s32(p->activation_min)), vdupq_n_s32(p->activation_max)));
}

/* Outputs o .. o + count - 1 one at a time, with the scalar formulas (linear_finish.h): what the
 * vector form cannot take (an int64 sum, a requantization off the vector path), out of line so
 * that its code exists once. */
static __attribute__((noinline)) void finish_scalar(const trt_linear_params *p, int32_t o, const int32_t *acc,
                                                   int32_t count, int32_t input_sum, int8_t *out) {
    for (int32_t k = 0; k < count; k++) out[o + k] = trt_linear_finish(p, o + k, acc[k], input_sum);
}

static int32_t sum_s8(const int8_t *x, int32_t n) {
    int32_t sum = 0;
    for (; n > 0; n -= 16, x += 16) sum = vaddvaq_p_s8(sum, vldrbq_z_s8(x, vctp8q((uint32_t)n)), vctp8q((uint32_t)n));
    return sum;
}

/* Four rows' dot products with x, the rows read as bytes (any alignment): rows that may be read
 * as words take dot4_words, below. */
static __attribute__((noinline)) void dot4_bytes(const int8_t *x, const int8_t *w, int32_t n, int32_t acc[4]) {
    const int8_t *w0 = w, *w1 = w + n, *w2 = w + 2 * (size_t)n, *w3 = w + 3 * (size_t)n;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    /* a counted loop: GCC then gives every pointer its own post-increment */
    for (int32_t k = n >> 4; k > 0; k--) {
        const int8x16_t xv = vldrbq_s8(x);
        a0 = vmladavaq_s8(a0, xv, vldrbq_s8(w0));
        a1 = vmladavaq_s8(a1, xv, vldrbq_s8(w1));
        a2 = vmladavaq_s8(a2, xv, vldrbq_s8(w2));
        a3 = vmladavaq_s8(a3, xv, vldrbq_s8(w3));
        x += 16;
        w0 += 16;
        w1 += 16;
        w2 += 16;
        w3 += 16;
    }
    const int32_t len = n & 15;
    if (len > 0) {
        const mve_pred16_t p = vctp8q((uint32_t)len);
        const int8x16_t xv = vldrbq_z_s8(x, p);
        a0 = vmladavaq_s8(a0, xv, vldrbq_z_s8(w0, p));
        a1 = vmladavaq_s8(a1, xv, vldrbq_z_s8(w1, p));
        a2 = vmladavaq_s8(a2, xv, vldrbq_z_s8(w2, p));
        a3 = vmladavaq_s8(a3, xv, vldrbq_z_s8(w3, p));
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}

/*
 * The same on x, w and n word-aligned, in assembly, so that the loads and the VMLADAVA
 * alternate. Arithmetic: as dot4_bytes (integer sums: any order of the products gives the
 * same results); the remainder (n % 16: 4, 8 or 12 bytes) one step of predicated loads,
 * their other lanes zero.
 *
 * Why this schedule: a Cortex-M55 Helium instruction takes two cycles and overlaps the one
 * before it only when their pipes differ (load/store, MAC). A step is five loads (x and four
 * rows) and four MACs: loads first, MACs after (the compiler's order) is about 16 cycles; here
 * one load pair and the rest alternating, about 10 cycles (the load pipe's bound: five
 * 2-cycle loads). The last row's MAC runs in the next step (software pipelining), so that
 * every MAC reads vectors loaded two or more instructions before it:
 *
 *      L w0   M a3 += x'.w3'   L x   L w1   M a0 += x.w0   L w2   M a1 += x.w1
 *      L w3   M a2 += x.w2     LE                            (' : the step before)
 *
 * q0 x, q1 w0 then w2 (w0 is dead after a0), q2 w1, q3 w3: no callee-saved vector register;
 * w3 = 0 before the first step (its a3 adds nothing), the last step's a3 after the loop. No
 * load reaches past x or a row. VMLADAVA accumulates into even registers: a0 a1 a2 a3 in r4
 * r6 r8 r12 (one STM writes acc in order); x in r0, the rows in r1 r5 r7 r9, lr the loop.
 */
static __attribute__((naked, noinline)) void dot4_words(const int8_t *x, const int8_t *w, int32_t n,
                                                       int32_t acc[4]) {
    (void)x, (void)w, (void)n, (void)acc;
    __asm__ volatile(
        "push     {r4-r10, lr}\n\t"
        "add      r5, r1, r2\n\t"
        "add      r7, r5, r2\n\t"
        "add      r9, r7, r2\n\t"
        "movs     r4, #0\n\t"
        "movs     r6, #0\n\t"
        "mov      r8, #0\n\t"
        "mov      r12, #0\n\t"
        "vmov.i8  q3, #0\n\t"
        "lsr      r10, r2, #4\n\t"
        "wls      lr, r10, 2f\n\t"
        "1:\n\t"
        "vldrw.u32    q1, [r1], #16\n\t"
        "vmladava.s8  r12, q0, q3\n\t"
        "vldrw.u32    q0, [r0], #16\n\t"
        "vldrw.u32    q2, [r5], #16\n\t"
        "vmladava.s8  r4, q0, q1\n\t"
        "vldrw.u32    q1, [r7], #16\n\t"
        "vmladava.s8  r6, q0, q2\n\t"
        "vldrw.u32    q3, [r9], #16\n\t"
        "vmladava.s8  r8, q0, q1\n\t"
        "le       lr, 1b\n\t"
        "2:\n\t"
        "vmladava.s8  r12, q0, q3\n\t"
        "ands     r2, r2, #15\n\t"
        "beq      3f\n\t"
        "vctp.8   r2\n\t"                       /* the remainder */
        "vpstttt\n\t"
        "vldrbt.u8    q0, [r0]\n\t"
        "vldrbt.u8    q1, [r1]\n\t"
        "vldrbt.u8    q2, [r5]\n\t"
        "vldrbt.u8    q3, [r7]\n\t"
        "vmladava.s8  r4, q0, q1\n\t"
        "vpst\n\t"
        "vldrbt.u8    q1, [r9]\n\t"
        "vmladava.s8  r6, q0, q2\n\t"
        "vmladava.s8  r8, q0, q3\n\t"
        "vmladava.s8  r12, q0, q1\n\t"
        "3:\n\t"
        "stm      r3, {r4, r6, r8, r12}\n\t"
        "pop      {r4-r10, pc}\n\t");
}

static int32_t dot1(const int8_t *x, const int8_t *w, int32_t n) {
    int32_t acc = 0;
    for (; n > 0; n -= 16, x += 16, w += 16) {
        const mve_pred16_t p = vctp8q((uint32_t)n);
        acc = vmladavaq_s8(acc, vldrbq_z_s8(x, p), vldrbq_z_s8(w, p));
    }
    return acc;
}

/* Every input row against every four weight rows; `words_only`: the rows are all word aligned
 * (trt_linear_words_mve_accepts), so the byte loop is not even referenced. */
static inline __attribute__((always_inline)) void linear_rows(const trt_linear_params *p, const int words_only) {
    const int32_t n = p->depth;
    const int vector = (!p->kernel_sum || p->kernel_sum_fits) && trt_mve_requant_is_vector(p->multiplier, p->shift);
    for (int32_t r = 0; r < p->rows; r++) {
        const int8_t *x = p->input + (size_t)r * n;
        int8_t *out = p->output + (size_t)r * p->out_features;
        const int32_t input_sum = p->filter_offset != 0 ? sum_s8(x, n) : 0;
        const int words = words_only || (trt_mve_word_aligned(x) && trt_mve_word_aligned(p->weights) && n % 4 == 0);
        int32_t o = 0;
        for (; o + 4 <= p->out_features; o += 4) {
            int32_t acc[4];
            if (words) dot4_words(x, p->weights + (size_t)o * n, n, acc);
            else dot4_bytes(x, p->weights + (size_t)o * n, n, acc);
            if (vector) finish4(p, o, acc, input_sum, out);
            else finish_scalar(p, o, acc, 4, input_sum, out);
        }
        for (; o < p->out_features; o++) {
            const int32_t acc = dot1(x, p->weights + (size_t)o * n, n);
            finish_scalar(p, o, &acc, 1, input_sum, out);
        }
    }
}

/* Word-aligned input and weight rows (a variant of its own, first in the list): a build whose
 * linear layers all take it (a deploy library of such a program) links no byte loop. */
int trt_linear_words_mve_accepts(const trt_linear_params *p) {
    return trt_mve_word_aligned(p->input) && trt_mve_word_aligned(p->weights) && p->depth % 4 == 0;
}

void trt_linear_words_mve(const trt_linear_params *p) { linear_rows(p, 1); }

void trt_linear_mve(const trt_linear_params *p) { linear_rows(p, 0); }

#endif
