/*
 * cortex_m::quantized_linear.out with the DSP extension -- int8 fully connected layer,
 * weights read in place.
 *
 * Arithmetic: as kernels/c/linear.c (both forms; linear_finish.h does everything after the
 * dot products). Each input row is widened once to 16 bits in the order SXTB16 gives the
 * weights (groups of four as (x0, x2), (x1, x3)); the hot loop, two output rows at a time,
 * loads two groups' input words with one LDM and per row and group reads one weight word,
 * splits it with two SXTB16 and feeds two SMLAD. Word-aligned rows (a depth of whole groups,
 * aligned weights) take four groups a step with one LDRD per row and two groups.
 * Requantization: dsp_requantize.h when no input can take an accumulator, shifted left by a
 * positive shift, to 2^30 (checked at load: then the int32 sum is the exact one of either
 * form, and the left shift joins SMMULR's doubling), linear_finish.h's otherwise.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../linear_finish.h"
#include "../weight_sums.h"
#include "dsp_intrinsics.h"
#include "dsp_requantize.h"
#include "kernels_dsp.h"

size_t trt_linear_dsp_scratch_bytes(const trt_linear_params *p) { return trt_linear_sums_bytes(p); }

/* The short requantization needs every accumulator, shifted left by a positive shift, below 2^30. */
/* The short requantization needs every accumulator, shifted left by a positive shift, below 2^30,
 * and the output offset, scaled by 2^right, small enough to join the rounding constant. */
void trt_linear_dsp_prepare(trt_linear_params *p, void *scratch) {
    const int32_t left = p->shift > 0 ? p->shift : 0, right = p->shift < 0 ? -p->shift : 0;
    const int64_t offset_abs = p->output_offset < 0 ? -(int64_t)p->output_offset : p->output_offset;
    trt_linear_prepare_sums(p, scratch);
    p->small_accumulators = left < 30 && right < 30 && (offset_abs + 1) << right < TRT_DSP_ACC_LIMIT - 1 &&
                            trt_linear_accumulators_below(p, left, TRT_DSP_ACC_LIMIT);
}

/* The short requantization's constants, read once per call: SMMULR(acc 2^(left + 1), m) =
 * (acc 2^left m + 2^30) >> 31 while |acc 2^left| < 2^30, then dsp_requantize.h's rounding shift
 * with the output offset in the rounding constant (floor((v + c + k 2^n) / 2^n) = floor((v + c)
 * / 2^n) + k; the load checked that the sum stays below 2^31). */
typedef struct {
    int32_t multiplier, left, right, negative, round, lo, hi;
} short_form;

static short_form short_form_of(const trt_linear_params *p) {
    const int32_t shift = p->shift, right = shift < 0 ? -shift : 0;
    const short_form f = {p->multiplier,
                          shift > 0 ? shift + 1 : 1,
                          right,
                          shift < 0 ? -1 : 0,
                          (shift < 0 ? (int32_t)(1u << (right - 1)) : 0) + p->output_offset * (int32_t)(1u << right),
                          p->activation_min,
                          p->activation_max};
    return f;
}

static inline int8_t short_output(const short_form *f, int32_t acc) {
    const int32_t v = trt_smmulr((int32_t)((uint32_t)acc << f->left), f->multiplier);
    const int32_t r = (v + f->round + ((v >> 31) & f->negative)) >> f->right;
    /* the whole int8 range, SSAT alone, in most layers (a ReLU folded into the zero point too) */
    return (int8_t)(f->lo == -128 && f->hi == 127 ? trt_ssat8(r) : trt_clamp(r, f->lo, f->hi));
}

/* Everything of output o's accumulator but the dot product, in int32 (exact: each term is within
 * the load-time bound). terms: filter_offset * sum(x) + depth * input_offset * filter_offset. */
static inline int32_t start_of(const trt_linear_params *p, int32_t o, int32_t input_sum, int32_t terms) {
    if (p->kernel_sum) return input_sum * p->filter_offset + p->kernel_sum[o];
    int32_t acc = terms;
    if (p->input_offset != 0) acc += p->input_offset * p->weight_sums[o];
    if (p->bias) acc += p->bias[o];
    return acc;
}

size_t trt_linear_dsp_temp_bytes(const trt_linear_params *p) { return (size_t)((p->depth + 3) & ~3) * sizeof(int16_t); }

static int32_t widen(const int8_t *src, int32_t n, int16_t *dst) {
    int32_t sum = 0;
    for (; n >= 4; n -= 4, src += 4, dst += 4) {
        uint32_t v = trt_read32(src);
        uint32_t even = trt_sxtb16(v), odd = trt_sxtb16_ror8(v);
        memcpy(dst, &even, sizeof even);
        memcpy(dst + 2, &odd, sizeof odd);
        sum += src[0] + src[1] + src[2] + src[3];
    }
    for (int32_t i = 0; i < n; i++) {
        dst[i] = src[i];
        sum += src[i];
    }
    return sum;
}

/* Two output rows' dot products with the widened input x over `groups` groups of four. */
typedef struct {
    const uint32_t *x;           /* per group: (x0, x2), (x1, x3) */
    const int8_t *w0, *w1;
    int32_t groups;
    int32_t acc0, acc1;          /* in: the start values; out: the sums */
} dot2_job;

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
/* Two groups a step: an LDM of four input words, per row and group a weight word (LDR: the rows
 * need not be aligned), two SXTB16 and two SMLAD: 16 MACs in 23 instructions with the loop.
 * Registers: r0 the job, r1 x, r2 w0, r3 w1, r4 the count, r5/r6 the sums, r7/r8 and r11/r12
 * input words, r9 a weight word then its odd pair, r10 its even pair. */
#define TRT_LINEAR_GROUP(acc, wp, xe, xo)              \
    "ldr     r9, [" wp "], #4\n\t"                      \
    "sxtb16  r10, r9\n\t"                               \
    "sxtb16  r9, r9, ror #8\n\t"                        \
    "smlad   " acc ", " xe ", r10, " acc "\n\t"         \
    "smlad   " acc ", " xo ", r9, " acc "\n\t"
static __attribute__((naked, noinline)) void dot2(dot2_job *job) {
    (void)job;
    __asm__ volatile(
        "push    {r4-r11, lr}\n\t"
        "ldm     r0, {r1-r6}\n\t"
        "lsrs    r4, r4, #1\n\t"   /* pairs of groups; carry: one more */
        "bcc     2f\n\t"
        "ldm     r1!, {r7, r8}\n\t"
        TRT_LINEAR_GROUP("r5", "r2", "r7", "r8")
        TRT_LINEAR_GROUP("r6", "r3", "r7", "r8")
        "2:\n\t"
        "beq     3f\n\t"           /* the flags are still those of lsrs */
        "1:\n\t"
        "ldm     r1!, {r7, r8, r11, r12}\n\t"
        TRT_LINEAR_GROUP("r5", "r2", "r7", "r8")
        TRT_LINEAR_GROUP("r6", "r3", "r7", "r8")
        TRT_LINEAR_GROUP("r5", "r2", "r11", "r12")
        TRT_LINEAR_GROUP("r6", "r3", "r11", "r12")
        "subs    r4, r4, #1\n\t"
        "bne     1b\n\t"
        "3:\n\t"
        "strd    r5, r6, [r0, #16]\n\t"
        "pop     {r4-r11, pc}\n\t");
}
/* Word-aligned rows: four groups a step, two LDM of the input's words, per row and pair of groups
 * one LDRD, four SXTB16 and four SMLAD: 32 MACs in 40 instructions with the loop. Leaves the job's
 * pointers past the groups it took (groups / 4 * 4) and the sums in it. Registers: r0 the job, r1 x,
 * r2 w0, r3 w1, r4 the count, r5/r6 the sums, r7/r8/r11/r12 input words, r9/r10 weight words (then
 * their odd pairs), lr an even pair. */
#define TRT_LINEAR_PAIR(acc, wp)                        \
    "ldrd    r9, r10, [" wp "], #8\n\t"                 \
    "sxtb16  lr, r9\n\t"                                \
    "sxtb16  r9, r9, ror #8\n\t"                        \
    "smlad   " acc ", r7, lr, " acc "\n\t"              \
    "smlad   " acc ", r8, r9, " acc "\n\t"              \
    "sxtb16  lr, r10\n\t"                               \
    "sxtb16  r10, r10, ror #8\n\t"                      \
    "smlad   " acc ", r11, lr, " acc "\n\t"             \
    "smlad   " acc ", r12, r10, " acc "\n\t"
static __attribute__((naked, noinline)) void dot2_aligned(dot2_job *job) {
    (void)job;
    __asm__ volatile(
        "push    {r4-r11, lr}\n\t"
        "ldm     r0, {r1-r6}\n\t"
        "lsrs    r4, r4, #2\n\t"
        "beq     3f\n\t"
        "1:\n\t"
        "ldm     r1!, {r7, r8, r11, r12}\n\t"
        TRT_LINEAR_PAIR("r5", "r2")
        TRT_LINEAR_PAIR("r6", "r3")
        "ldm     r1!, {r7, r8, r11, r12}\n\t"
        TRT_LINEAR_PAIR("r5", "r2")
        TRT_LINEAR_PAIR("r6", "r3")
        "subs    r4, r4, #1\n\t"
        "bne     1b\n\t"
        "3:\n\t"
        "stm     r0, {r1-r3}\n\t"
        "strd    r5, r6, [r0, #16]\n\t"
        "pop     {r4-r11, pc}\n\t");
}
#else
static void dot2(dot2_job *job) {
    const uint32_t *x = job->x;
    const int8_t *w0 = job->w0, *w1 = job->w1;
    int32_t a0 = job->acc0, a1 = job->acc1;
    for (int32_t g = job->groups; g > 0; g--, x += 2, w0 += 4, w1 += 4) {
        const uint32_t v0 = trt_read32(w0), v1 = trt_read32(w1);
        a0 = trt_smlad(x[1], trt_sxtb16_ror8(v0), trt_smlad(x[0], trt_sxtb16(v0), a0));
        a1 = trt_smlad(x[1], trt_sxtb16_ror8(v1), trt_smlad(x[0], trt_sxtb16(v1), a1));
    }
    job->acc0 = a0;
    job->acc1 = a1;
}
static void dot2_aligned(dot2_job *job) {
    const int32_t taken = job->groups / 4 * 4;
    dot2_job part = *job;
    part.groups = taken;
    dot2(&part);
    job->x += 2 * taken;
    job->w0 += 4 * taken;
    job->w1 += 4 * taken;
    job->acc0 = part.acc0;
    job->acc1 = part.acc1;
}
#endif

/* acc[i] += row w_i . the widened input x of n values: the whole groups, then n % 4 plainly. */
static void dot_rows(const int16_t *x, const int8_t *w0, const int8_t *w1, int32_t n, int32_t acc[2]) {
    const int32_t whole = n & ~3;
    dot2_job job = {(const uint32_t *)(const void *)x, w0, w1, n / 4, acc[0], acc[1]};
    if ((((uintptr_t)(const void *)w0 | (uintptr_t)(const void *)w1) & 3) == 0 && job.groups >= 4) {
        dot2_aligned(&job);
        job.groups %= 4;
        if (job.groups > 0) dot2(&job);
    } else {
        dot2(&job);
    }
    for (int32_t i = whole; i < n; i++) {
        job.acc0 += x[i] * w0[i];
        job.acc1 += x[i] * w1[i];
    }
    acc[0] = job.acc0;
    acc[1] = job.acc1;
}

void trt_linear_dsp(const trt_linear_params *p, void *temp) {
    const int32_t n = p->depth, outs = p->out_features;
    const short_form f = short_form_of(p);
    int16_t *x = temp;
    for (int32_t r = 0; r < p->rows; r++) {
        const int32_t input_sum = widen(p->input + (size_t)r * n, n, x);
        /* within the bound too, when the short form holds */
        const int32_t terms = p->filter_offset * input_sum + p->depth * p->input_offset * p->filter_offset;
        int8_t *out = p->output + (size_t)r * outs;
        for (int32_t o = 0; o < outs; o += 2) {
            const int8_t *w0 = p->weights + (size_t)o * n;
            const int32_t pair = o + 1 < outs;
            const int8_t *w1 = pair ? w0 + n : w0;
            if (p->small_accumulators) {
                int32_t acc[2] = {start_of(p, o, input_sum, terms), pair ? start_of(p, o + 1, input_sum, terms) : 0};
                dot_rows(x, w0, w1, n, acc);
                out[o] = short_output(&f, acc[0]);
                if (pair) out[o + 1] = short_output(&f, acc[1]);
                continue;
            }
            int32_t acc[2] = {0, 0};
            dot_rows(x, w0, w1, n, acc);
            out[o] = trt_linear_finish(p, o, acc[0], input_sum);
            if (pair) out[o + 1] = trt_linear_finish(p, o + 1, acc[1], input_sum);
        }
    }
}

#endif
