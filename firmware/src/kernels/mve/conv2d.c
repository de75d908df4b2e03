/*
 * cortex_m::quantized_conv2d.out with Helium -- NHWC int8 convolution, OHWI weights read in
 * place, per-channel requantization.
 *
 * Arithmetic (operators.quantized_conv2d_impl, arith.h):
 *   acc[oc] = bias[oc] + sum over the window of (x + input_offset) * w     (int32, wraps)
 *           = sum(x * w) + folded_bias[oc],  folded_bias = bias + input_offset * sum(w)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * Padding: each window is copied anyway (below); the taps of a window outside the image are
 * filled with pad bytes there (mve_padding.h: they contribute zero), so every window is whole
 * and folded_bias (prepared at load) is exact for every pixel, without a padded copy of the
 * image (the working memory is a few windows, not an image).
 *
 * Three output pixels at a time: their windows are copied (kernel_h runs of kernel_w * in_c
 * bytes each) so that each is as contiguous as an output channel's weights. Hot loop, two
 * output channels at a time: per 16 bytes, two weight vectors and three window vectors feed
 * six VMLADAVA (96 MACs in 12 instructions with the loop end), the loads and MACs interleaved
 * (assembly: block_dots_word_weights); a remainder shorter than 16 is one step with the
 * weights' extra lanes zeroed. Then each pixel's channels are requantized four at a time
 * (per-lane multipliers and shifts; a whole block's whole groups in assembly: finish_groups),
 * so the variant takes layers whose requantization is all on the vector path
 * (mve_requantize.h).
 *
 * A fused 2x2 max pool (trt_conv2d_mve_fuse_pool, at load; the long windows' variant alone):
 *   pooled[oc] = clamp(requantize(max over the pool window's four pixels of sum(x * w) + folded_bias[oc],
 *                                  multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * which is the maximum of the four pixels' outputs when every multiplier >= 0 and no sum plus bias
 * leaves int32 (both checked when fusing): only the pixels the pool reads are computed, the four
 * of each window in turn (trt_mve_finish_pooled), and the pooled values written at the start of `output`.
 *
 * Groups and dilation: a window is then gathered tap by tap (kernel_c bytes of its group's
 * channels per tap, taps dilation apart), group by group, each group against its own output
 * channels' weights (OHWI: contiguous per group). The same code runs the convolutions other
 * operators reduce to (transposed convolution, a one-input-channel depthwise layer with a large
 * window): trt_conv2d_mve_on_image takes an image already padded or prepared.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "../conv_geometry.h"
#include "../weight_sums.h"
#include "kernels_mve.h"
#include "mve_load.h"
#include "mve_finish_pooled.h"
#include "mve_padding.h"
#include "mve_requantize.h"

#define PIXELS 3

static int32_t window_len(const trt_conv_params *p) { return p->kernel_h * p->kernel_w * p->kernel_c; }

int trt_conv2d_mve_accepts(const trt_conv_params *p) {
    if (!trt_mve_pad_value_fits(p->input_offset)) return 0;
    for (int32_t oc = 0; oc < p->out_c; oc++)
        if (!trt_mve_requant_is_vector(p->multipliers[oc], p->shifts[oc])) return 0;
    return 1;
}

/* Windows of at most SHORT_CHUNKS * 16 bytes run a loop of their own (short_dots), on the
 * weights padded to whole 16-byte steps and an even channel count (a copy, unless they are). */
#define SHORT_CHUNKS 4
static int32_t chunks(const trt_conv_params *p) { return (window_len(p) + 15) >> 4; }
static int is_short(const trt_conv_params *p) { return chunks(p) <= SHORT_CHUNKS; }
static size_t folded_bytes(const trt_conv_params *p) { return ((size_t)p->out_c * sizeof(int32_t) + 15) & ~(size_t)15; }
/* Whole 16-byte steps and an even channel count: the weights as they are already have the
 * padded copy's layout, so they are read in place (no copy in the workspace) when word-aligned. */
static int padded_already(const trt_conv_params *p) { return window_len(p) % 16 == 0 && p->out_c % 2 == 0; }
static size_t vector_weights_bytes(const trt_conv_params *p) {
    return is_short(p) && !padded_already(p) ? (size_t)((p->out_c + 1) & ~1) * 16 * (size_t)chunks(p) : 0;
}

/* The kernel for windows over SHORT_CHUNKS * 16 bytes alone (a variant of its own, first in the
 * operator's list), of the usual layer: groups 1, no dilation, channels in whole groups of four,
 * word-aligned weights, not a 1x1 convolution read in place. Its prepare never sets the short
 * windows' loop and its driver (trt_conv2d_long_mve) has none of the other forms, so a build
 * whose layers all bind it (a deploy library of such a program) links none of them. */
int trt_conv2d_long_mve_accepts(const trt_conv_params *p) {
    const int pointwise = p->kernel_h == 1 && p->kernel_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->in_c % 16 == 0;
    return !is_short(p) && !pointwise && p->groups == 1 && p->dilation_h == 1 && p->dilation_w == 1 &&
           p->out_c % 4 == 0 && window_len(p) % 4 == 0 && trt_mve_word_aligned(p->weights) && trt_conv2d_mve_accepts(p);
}
size_t trt_conv2d_long_mve_scratch_bytes(const trt_conv_params *p) { return folded_bytes(p); }

void trt_conv2d_long_mve_prepare(trt_conv_params *p, void *scratch) {
    trt_conv_prepare_folded(p, scratch);   /* weight_sums.h: every window is whole */
    p->vector_weights = NULL;
    p->short_dots = NULL;
}

static void run_short_dots(int32_t n, const int8_t *x0, const int8_t *x1, const int8_t *x2, const int8_t *w,
                           int32_t channels, int32_t *acc);

/* scratch: folded bias [out_c], then (short windows not padded already) the padded weights */
size_t trt_conv2d_mve_scratch_bytes(const trt_conv_params *p) { return folded_bytes(p) + vector_weights_bytes(p); }

void trt_conv2d_mve_prepare(trt_conv_params *p, void *scratch) {
    const int32_t window = window_len(p);
    trt_conv2d_long_mve_prepare(p, scratch);
    if (is_short(p) && padded_already(p)) {
        /* unaligned (a hand-made program): the general loop reads them as bytes */
        if (trt_mve_word_aligned(p->weights)) p->vector_weights = p->weights;
    } else if (is_short(p)) {
        const int32_t row = 16 * chunks(p), rows = (p->out_c + 1) & ~1;
        int8_t *padded = (int8_t *)scratch + folded_bytes(p);
        for (int32_t oc = 0; oc < rows; oc++)
            for (int32_t i = 0; i < row; i++)
                padded[(size_t)oc * row + i] = oc < p->out_c && i < window ? p->weights[(size_t)oc * window + i] : 0;
        p->vector_weights = padded;
    }
    if (p->vector_weights) p->short_dots = run_short_dots;
}

/* Each window's copy starts on 16 bytes, so the hot loop reads it as words (mve_load.h). */
static int32_t column_stride(const trt_conv_params *p) { return (window_len(p) + 15) & ~15; }
static size_t columns_bytes(const trt_conv_params *p) { return (size_t)PIXELS * column_stride(p); }

/* The working memory of a call on a prepared image: three windows, then the dot products
 * (out_c rounded up to even, x 3 int32; two blocks' with a fused pool), then out_c spare bytes
 * (a short block's missing pixels are finished there). */
size_t trt_conv2d_mve_block_bytes(const trt_conv_params *p) {
    return columns_bytes(p) + (size_t)((p->out_c + 1) & ~1) * PIXELS * sizeof(int32_t) * (p->pooled_h ? 2 : 1) +
           (((size_t)p->out_c + 15) & ~(size_t)15);
}

/* temp: [three windows][dot products] */
size_t trt_conv2d_mve_temp_bytes(const trt_conv_params *p) { return trt_conv2d_mve_block_bytes(p); }

/* n bytes from src to dst (a window row into its column); as words when both are aligned. */
static void copy_run(int8_t *dst, const int8_t *src, int32_t n) {
    if (trt_mve_word_aligned(dst) && trt_mve_word_aligned(src)) {
        for (; n >= 16; n -= 16, src += 16, dst += 16) trt_mve_store_words(dst, trt_mve_load_words(src));
    } else {
        for (; n >= 16; n -= 16, src += 16, dst += 16) vstrbq_s8(dst, vldrbq_s8(src));
    }
    if (n > 0) {
        const mve_pred16_t p = vctp8q((uint32_t)n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
    }
}

/*
 * acc[3 oc + k] = dot product of window k (k < 3; `len` bytes each, `stride` bytes apart
 * from `columns`, 16-byte aligned) with output channel oc's weights (OHWI: `len` bytes each
 * from w), for every channel (an odd last channel is paired with itself; acc has room for
 * it). The weights read as bytes (any alignment): weights that may be read as words take
 * block_dots_word_weights, below.
 */
static __attribute__((noinline)) void block_dots_byte_weights(const int8_t *columns, int32_t len, int32_t stride,
                                                             const int8_t *w, int32_t channels, int32_t *acc) {
    const int32_t chunks = len >> 4, tail = len & 15;
    for (int32_t oc = 0; oc < channels; oc += 2, acc += 6) {
        const int8_t *x0 = columns, *x1 = x0 + stride, *x2 = x1 + stride;
        const int8_t *wa = w, *wb = oc + 1 < channels ? w + len : w;
        w += 2 * (size_t)len;
        int32_t a0 = 0, a1 = 0, a2 = 0, b0 = 0, b1 = 0, b2 = 0;
        for (int32_t k = chunks; k > 0; k--) {
            const int8x16_t va = vldrbq_s8(wa);
            wa += 16;
            const int8x16_t vb = vldrbq_s8(wb);
            wb += 16;
            int8x16_t xv = trt_mve_load_words(x0);
            x0 += 16;
            a0 = vmladavaq_s8(a0, xv, va);
            b0 = vmladavaq_s8(b0, xv, vb);
            xv = trt_mve_load_words(x1);
            x1 += 16;
            a1 = vmladavaq_s8(a1, xv, va);
            b1 = vmladavaq_s8(b1, xv, vb);
            xv = trt_mve_load_words(x2);
            x2 += 16;
            a2 = vmladavaq_s8(a2, xv, va);
            b2 = vmladavaq_s8(b2, xv, vb);
        }
        if (tail) {   /* the window's last bytes; the weights' zeroed lanes mask the rest */
            const mve_pred16_t lanes = vctp8q((uint32_t)tail);
            const int8x16_t va = vldrbq_z_s8(wa, lanes), vb = vldrbq_z_s8(wb, lanes);
            int8x16_t xv = trt_mve_load_words(x0);
            a0 = vmladavaq_s8(a0, xv, va);
            b0 = vmladavaq_s8(b0, xv, vb);
            xv = trt_mve_load_words(x1);
            a1 = vmladavaq_s8(a1, xv, va);
            b1 = vmladavaq_s8(b1, xv, vb);
            xv = trt_mve_load_words(x2);
            a2 = vmladavaq_s8(a2, xv, va);
            b2 = vmladavaq_s8(b2, xv, vb);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = b0;
        acc[4] = b1;
        acc[5] = b2;
    }
}

/*
 * The same on weights read as words (w and len word-aligned), in assembly: the hot loop of the
 * convolutions, written so that its vector loads and VMLADAVA alternate.
 *
 * Arithmetic: as block_dots_byte_weights (integer sums: the order of the products does not
 * matter, the results are the C's bit for bit). Per pair of output channels A, B (an odd last
 * channel is paired with itself) and 16 bytes of the three windows x0, x1, x2: two weight
 * vectors wa, wb and three window vectors, six VMLADAVA.S8 into a0 a1 a2 b0 b1 b2; a
 * remainder of 4, 8 or 12 bytes (len % 16) is one step with the weights' other lanes zeroed
 * by a predicated load (the windows are whole 16-byte steps: read as such).
 *
 * Why this schedule: on the Cortex-M55 a Helium instruction takes two cycles and overlaps the
 * one before it only when the two use different pipes (load/store and MAC). Five loads then
 * six MACs (what the compiler emits) pair only at the two ends: about 20 cycles a step. Here a
 * load and a MAC alternate, 11 instructions of which only the last MAC follows a MAC: about 12
 * cycles a step, the MAC pipe's own bound (six 2-cycle MACs). To have a MAC ready after every
 * load, two MACs of a step (b1 and b2) run in the next one (software pipelining), and every MAC
 * reads vectors loaded at least two instructions before it (no wait on a load's result):
 *
 *      L wa   M b2 += x2'.wb'   L x0   M b1 += x1'.wb'   L wb   M a0 += x0.wa
 *      L x1   M b0 += x0.wb     L x2   M a1 += x1.wa     M a2 += x2.wa          LE
 *
 * (' : the step before). Registers: q0 wa, q1 wb, q2 x0 then x2 (x0 is dead after b0), q3 x1,
 * so no callee-saved vector register. The first step's b1 and b2 add products with x1' = x2'
 * = 0, the last step's are two MACs after the loop, each followed by the VMOV that zeroes its
 * window vector for the next pair (a MAC and a move overlap: different pipes). No load reaches
 * past a window or a weight row. VMLADAVA's accumulator is an even register: a0 a1 a2 b0 b1 b2
 * in r0 r2 r4 r6 r8 r10, so one STM writes acc[0..5] in order; x0 x1 x2 in r1 r3 r5, so one
 * LDM of nine words from the stack (0 x0 0 x1 0 x2 0 0 0) clears the accumulators and puts the
 * windows' pointers back at their starts; wa wb in r7 r9 (B's row's end, plus the remainder, is
 * the next A's row), r11 the count of steps (WLS/LE: a window shorter than 16 bytes runs none),
 * r12 acc, lr the loop. Per pair, besides the steps, 12 instructions: the loop over pairs is
 * written twice (an assembler macro), with and without the remainder, so the common case tests
 * nothing per pair; an odd last channel is one more pass of the loop after the whole pairs, its
 * wb = wa (it writes acc's spare slots). On the stack: those nine words, the remainder, the end
 * of the pairs' results, the odd flag.
 */
static __attribute__((naked, noinline)) void block_dots_word_weights(const int8_t *columns, int32_t len,
                                                                    int32_t stride, const int8_t *w,
                                                                    int32_t channels, int32_t *acc) {
    (void)columns, (void)len, (void)stride, (void)w, (void)channels, (void)acc;
    __asm__ volatile(
        /* The loop over pairs, once without a remainder (tail 0) and once with one (tail 1).
         * At a pair's start q2 and q3 (x2', x1') are zero, so the first step's b2 and b1 add
         * nothing. */
        ".macro   TRT_CONV_PAIRS tail\n\t"
        "1:\n\t"
        "ldm      sp, {r0, r1, r2, r3, r4, r5, r6, r8, r10}\n\t"   /* zeros, the windows' starts */
        "wls      lr, r11, 3f\n\t"
        "2:\n\t"                                /* a step of 16 bytes */
        "vldrw.u32    q0, [r7], #16\n\t"
        "vmladava.s8  r10, q2, q1\n\t"
        "vldrw.u32    q2, [r1], #16\n\t"
        "vmladava.s8  r8, q3, q1\n\t"
        "vldrw.u32    q1, [r9], #16\n\t"
        "vmladava.s8  r0, q2, q0\n\t"
        "vldrw.u32    q3, [r3], #16\n\t"
        "vmladava.s8  r6, q2, q1\n\t"
        "vldrw.u32    q2, [r5], #16\n\t"
        "vmladava.s8  r2, q3, q0\n\t"
        "vmladava.s8  r4, q2, q0\n\t"
        "le       lr, 2b\n\t"
        "3:\n\t"                                /* the last step's b2 and b1; q2, q3 zero again */
        "vmladava.s8  r10, q2, q1\n\t"
        "vmov.i8  q2, #0\n\t"
        "vmladava.s8  r8, q3, q1\n\t"
        "vmov.i8  q3, #0\n\t"
        ".if \\tail\n\t"                        /* the remainder: lr bytes */
        "ldr      lr, [sp, #36]\n\t"
        "vctp.8   lr\n\t"
        "vpstt\n\t"
        "vldrbt.u8    q0, [r7]\n\t"
        "vldrbt.u8    q1, [r9]\n\t"
        "vldrw.u32    q2, [r1]\n\t"
        "vmladava.s8  r0, q2, q0\n\t"
        "vldrw.u32    q3, [r3]\n\t"
        "vmladava.s8  r6, q2, q1\n\t"
        "vldrw.u32    q2, [r5]\n\t"
        "vmladava.s8  r2, q3, q0\n\t"
        "vmladava.s8  r8, q3, q1\n\t"
        "vmladava.s8  r4, q2, q0\n\t"
        "vmladava.s8  r10, q2, q1\n\t"
        "vmov.i8  q2, #0\n\t"
        "vmov.i8  q3, #0\n\t"
        ".endif\n\t"
        "stmia    r12!, {r0, r2, r4, r6, r8, r10}\n\t"
        "ldr      r0, [sp, #40]\n\t"
        "cmp      r12, r0\n\t"                  /* the flags for blo below */
        ".if \\tail\n\t"                        /* the next A: B's row's end plus the remainder */
        "add      r7, r9, lr\n\t"
        "add      r9, r7, r11, lsl #4\n\t"
        "add      r9, r9, lr\n\t"
        ".else\n\t"
        "mov      r7, r9\n\t"
        "add      r9, r9, r11, lsl #4\n\t"
        ".endif\n\t"
        "blo      1b\n\t"
        "ldr      r0, [sp, #44]\n\t"            /* an odd last channel: one more pair, with itself */
        "cbz      r0, 4f\n\t"
        "movs     r0, #0\n\t"
        "str      r0, [sp, #44]\n\t"
        "mov      r9, r7\n\t"
        "add      r0, r12, #24\n\t"
        "str      r0, [sp, #40]\n\t"
        "b        1b\n\t"
        "4:\n\t"
        "add      sp, sp, #48\n\t"
        "pop      {r4-r11, pc}\n\t"
        ".endm\n\t"

        "push     {r4-r11, lr}\n\t"            /* channels, acc at [sp, #84] after the next */
        "sub      sp, sp, #48\n\t"              /* [0..35] 0 x0 0 x1 0 x2 0 0 0, [36] remainder, */
        "ldrd     r4, r12, [sp, #84]\n\t"       /* [40] the end of the pairs' results, [44] an */
        "cmp      r4, #1\n\t"                   /* odd channel count */
        "blt      9f\n\t"
        "movs     r6, #0\n\t"
        "movs     r7, #0\n\t"
        "strd     r6, r7, [sp]\n\t"
        "strd     r6, r7, [sp, #8]\n\t"
        "strd     r6, r7, [sp, #16]\n\t"
        "strd     r6, r7, [sp, #24]\n\t"
        "str      r6, [sp, #32]\n\t"
        "and      r6, r1, #15\n\t"
        "str      r6, [sp, #36]\n\t"
        "and      r8, r4, #1\n\t"
        "str      r8, [sp, #44]\n\t"
        "lsr      r11, r1, #4\n\t"
        "mov      r7, r3\n\t"
        "add      r9, r3, r1\n\t"
        "lsrs     r4, r4, #1\n\t"               /* whole pairs */
        "bne      5f\n\t"
        "mov      r9, r7\n\t"                   /* one channel: its pair with itself */
        "movs     r4, #1\n\t"
        "movs     r8, #0\n\t"
        "str      r8, [sp, #44]\n\t"
        "5:\n\t"
        "add      r4, r4, r4, lsl #1\n\t"       /* 24 bytes of results a pair */
        "add      r4, r12, r4, lsl #3\n\t"
        "str      r4, [sp, #40]\n\t"
        "str      r0, [sp, #4]\n\t"
        "add      r3, r0, r2\n\t"
        "str      r3, [sp, #12]\n\t"
        "add      r5, r3, r2\n\t"
        "str      r5, [sp, #20]\n\t"
        "vmov.i8  q2, #0\n\t"
        "vmov.i8  q3, #0\n\t"
        "cmp      r6, #0\n\t"
        "bne      6f\n\t"
        "TRT_CONV_PAIRS 0\n\t"
        "6:\n\t"
        "TRT_CONV_PAIRS 1\n\t"
        "9:\n\t"
        "add      sp, sp, #48\n\t"
        "pop      {r4-r11, pc}\n\t");
}

/*
 * The same for windows of N <= SHORT_CHUNKS steps of 16 bytes, the loop over those steps
 * unrolled: per pair of output channels no loop set-up, the first step a VMLADAV (no zeroing),
 * the second channel's weights at a constant offset. x0, x1, x2: the three windows (16 * N
 * readable bytes each, the bytes past a window's end multiplied by zero weights); w: the padded
 * weights ([channels rounded up to even][16 * N]); acc as block_dots_byte_weights.
 */
static inline __attribute__((always_inline)) void short_dots(const int8_t *x0, const int8_t *x1, const int8_t *x2,
                                                            const int8_t *w, int32_t channels, int32_t *acc,
                                                            const int n) {
    const int row = 16 * n;
    /* up to two steps, the windows stay in registers (six of the eight vectors) */
    const int keep = n <= 2;
    int8x16_t kept[3][2];
    if (keep)
        for (int j = 0; j < n; j++) {
            kept[0][j] = trt_mve_load_words(x0 + 16 * j);
            kept[1][j] = trt_mve_load_words(x1 + 16 * j);
            kept[2][j] = trt_mve_load_words(x2 + 16 * j);
        }
    for (int32_t oc = 0; oc < channels; oc += 2, acc += 6, w += 2 * row) {
        int32_t a0 = 0, a1 = 0, a2 = 0, b0 = 0, b1 = 0, b2 = 0;
        for (int j = 0; j < n; j++) {
            const int8x16_t va = trt_mve_load_words(w + 16 * j), vb = trt_mve_load_words(w + row + 16 * j);
            const int8x16_t x = keep ? kept[0][j] : trt_mve_load_words(x0 + 16 * j);
            a0 = vmladavaq_s8(a0, x, va);
            b0 = vmladavaq_s8(b0, x, vb);
            const int8x16_t y = keep ? kept[1][j] : trt_mve_load_words(x1 + 16 * j);
            a1 = vmladavaq_s8(a1, y, va);
            b1 = vmladavaq_s8(b1, y, vb);
            const int8x16_t z = keep ? kept[2][j] : trt_mve_load_words(x2 + 16 * j);
            a2 = vmladavaq_s8(a2, z, va);
            b2 = vmladavaq_s8(b2, z, vb);
        }
        acc[0] = a0;
        acc[1] = a1;
        acc[2] = a2;
        acc[3] = b0;
        acc[4] = b1;
        acc[5] = b2;
    }
}

#define SHORT_DOTS(n)                                                                                          \
    static __attribute__((noinline)) void short_dots_##n(const int8_t *x0, const int8_t *x1, const int8_t *x2,  \
                                                         const int8_t *w, int32_t channels, int32_t *acc) {    \
        short_dots(x0, x1, x2, w, channels, acc, n);                                                           \
    }
SHORT_DOTS(1)
SHORT_DOTS(2)
SHORT_DOTS(3)
SHORT_DOTS(4)

static void run_short_dots(int32_t n, const int8_t *x0, const int8_t *x1, const int8_t *x2, const int8_t *w,
                           int32_t channels, int32_t *acc) {
    switch (n) {
    case 1: short_dots_1(x0, x1, x2, w, channels, acc); break;
    case 2: short_dots_2(x0, x1, x2, w, channels, acc); break;
    case 3: short_dots_3(x0, x1, x2, w, channels, acc); break;
    default: short_dots_4(x0, x1, x2, w, channels, acc); break;
    }
}

/*
 * The requantization of whole groups of four channels, in assembly: finish_groups (a block's
 * three pixels, each its own output) and trt_mve_finish_pooled (one output pixel of a fused 2x2
 * max pool: the maximum of four pixels' sums, then one requantization; mve_finish_pooled.h, also
 * conv2d_pooled.c's).
 *
 * Arithmetic: the C's own operations in its order (a gather of four channels' sums from acc,
 * the folded bias, trt_mve_output_per_lane's steps, VSTRB.32), so its bytes bit for bit. The
 * pooled form first takes the lane-wise maximum of the four pixels' sums (VMAX.S32): with
 * every multiplier >= 0 and no sum plus bias able to leave int32 (checked when the pool was
 * fused: trt_conv2d_mve_fuse_pool), the requantization is non-decreasing, so requantizing the
 * maximum gives the maximum of the requantized values, which the pool would have taken.
 *
 * Why: the compiler's loop spends about 28 estimated cycles per pixel and group, a third of
 * them scalar address arithmetic between the vector instructions (each scalar instruction
 * costs a cycle and stops two Helium instructions of different pipes from overlapping). Here
 * the group's bias, multipliers and shifts are three post-incremented loads and each pixel's
 * chain gathers, requantizes and stores with no scalar instruction inside.
 *
 * Registers (finish_groups): r1 r2 r3 the three pixels' gather bases (acc, acc + 1, acc + 2
 * words; moved 48 bytes a group), r4 r5 r6 their outputs, r7 folded bias, r8 multipliers, r9
 * shifts, r10 output offset, lr the loop; q0 the gather offsets {0, 3, 6, 9} (words), q1/q2
 * act_min/act_max, q3 bias, q4 multipliers, q5 shifts, q6 a pixel's values, q7 a temporary.
 * trt_mve_finish_pooled: r1 r2 r3 r4 the four pixels' bases, which stay; the offsets q0 (the
 * job's: {0, 3, 6, 9} here) move by the job's step a group instead (r9: 12 words here); r5 the
 * output, r6 r7 r8 bias, multipliers, shifts.
 */
typedef struct {
    const int32_t *acc;                 /* 0 */
    int8_t *out[3];                     /* 4: the three pixels' outputs */
    const int32_t *folded, *multipliers, *shifts;   /* 16, 20, 24 */
    int32_t groups, output_offset, act_min, act_max; /* 28 .. 40 */
} finish_job;

/* q6: four channels' sums (bias not yet added) -> requantized, clamped, stored at out */
#define TRT_FINISH_CHAIN(out)                           \
    "vadd.i32     q6, q6, q3\n\t"                       \
    "vqrdmulh.s32 q6, q6, q4\n\t"                       \
    "vand         q7, q6, q5\n\t"                       \
    "vshr.s32     q7, q7, #31\n\t"                      \
    "vqadd.s32    q6, q6, q7\n\t"                       \
    "vrshl.s32    q6, q6, q5\n\t"                       \
    "vadd.i32     q6, q6, r10\n\t"                      \
    "vmax.s32     q6, q6, q1\n\t"                       \
    "vmin.s32     q6, q6, q2\n\t"                       \
    "vstrb.32     q6, [" out "], #4\n\t"
#define TRT_FINISH_PIXEL(base, out)                     \
    "vldrw.u32    q6, [" base ", q0, uxtw #2]\n\t"      \
    TRT_FINISH_CHAIN(out)

/* q0 = {0, 3, 6, 9} (r0 is free) */
#define TRT_EVERY_THIRD                                 \
    "movs     r0, #0\n\t"                               \
    "vidup.u32    q0, r0, #1\n\t"                       \
    "vadd.i32     q7, q0, q0\n\t"                       \
    "vadd.i32     q0, q0, q7\n\t"

static __attribute__((naked, noinline)) void finish_groups(const finish_job *job) {
    (void)job;
    __asm__ volatile(
        "push     {r4-r10, lr}\n\t"
        "vpush    {d8-d15}\n\t"
        "ldm      r0, {r1, r4, r5, r6, r7, r8, r9, r10, r12}\n\t"   /* .. groups in r10 */
        "ldrd     r2, r3, [r0, #36]\n\t"
        "vdup.32  q1, r2\n\t"
        "vdup.32  q2, r3\n\t"
        "dls      lr, r10\n\t"
        "mov      r10, r12\n\t"
        "add      r2, r1, #4\n\t"
        "add      r3, r1, #8\n\t"
        TRT_EVERY_THIRD
        "1:\n\t"
        "vldrw.u32    q3, [r7], #16\n\t"
        "vldrw.u32    q4, [r8], #16\n\t"
        "vldrw.u32    q5, [r9], #16\n\t"
        TRT_FINISH_PIXEL("r1", "r4")
        TRT_FINISH_PIXEL("r2", "r5")
        TRT_FINISH_PIXEL("r3", "r6")
        "add      r1, r1, #48\n\t"
        "add      r2, r2, #48\n\t"
        "add      r3, r3, #48\n\t"
        "le       lr, 1b\n\t"
        "vpop     {d8-d15}\n\t"
        "pop      {r4-r10, pc}\n\t");
}

__attribute__((naked, noinline)) void trt_mve_finish_pooled(const trt_pooled_job *job) {
    (void)job;
    __asm__ volatile(
        "push     {r4-r10, lr}\n\t"
        "vpush    {d8-d15}\n\t"
        "ldm      r0, {r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r12, lr}\n\t"
        "vdup.32  q1, r12\n\t"
        "vdup.32  q2, lr\n\t"
        "dls      lr, r9\n\t"
        "vldrw.u32    q0, [r0, #48]\n\t"     /* the offsets */
        "ldr      r9, [r0, #64]\n\t"         /* the step */
        "1:\n\t"
        "vldrw.u32    q3, [r6], #16\n\t"
        "vldrw.u32    q6, [r1, q0, uxtw #2]\n\t"
        "vldrw.u32    q7, [r2, q0, uxtw #2]\n\t"
        "vmax.s32     q6, q6, q7\n\t"
        "vldrw.u32    q7, [r3, q0, uxtw #2]\n\t"
        "vmax.s32     q6, q6, q7\n\t"
        "vldrw.u32    q7, [r4, q0, uxtw #2]\n\t"
        "vmax.s32     q6, q6, q7\n\t"
        "vldrw.u32    q4, [r7], #16\n\t"
        "vadd.i32     q0, q0, r9\n\t"
        "vldrw.u32    q5, [r8], #16\n\t"
        TRT_FINISH_CHAIN("r5")
        "le       lr, 1b\n\t"
        "vpop     {d8-d15}\n\t"
        "pop      {r4-r10, pc}\n\t");
}
#undef TRT_FINISH_PIXEL
#undef TRT_FINISH_CHAIN
#undef TRT_EVERY_THIRD

/* The block's `count` pixels' out_c results (acc[3 oc + k] for pixel k) in plain intrinsics:
 * four channels per step, their biases, multipliers and shifts read once for all pixels,
 * per-lane requantization; whole steps unpredicated, a last partial one tail-predicated. */
static void finish_block(const trt_conv_params *p, const int32_t *acc, int32_t count, int8_t *out) {
    const uint32x4_t every_third = vmulq_n_u32(vidupq_n_u32(0, 1), PIXELS);
    const int32_t *folded = p->folded_bias, *mult = p->multipliers, *shift = p->shifts;
    const int32_t out_c = p->out_c, offset = p->output_offset, lo = p->activation_min, hi = p->activation_max;
    for (int32_t oc = 0; oc < out_c; oc += 4, acc += 4 * PIXELS) {
        const mve_pred16_t pred = vctp32q((uint32_t)(out_c - oc));
        const int32x4_t f = vldrwq_z_s32(folded + oc, pred), m = vldrwq_z_s32(mult + oc, pred);
        const int32x4_t s = vldrwq_z_s32(shift + oc, pred);
        for (int32_t k = 0; k < count; k++) {
            const int32x4_t v = vaddq_s32(vldrwq_gather_shifted_offset_z_s32(acc + k, every_third, pred), f);
            vstrbq_p_s32(out + (size_t)k * out_c + oc, trt_mve_output_per_lane(v, m, s, offset, lo, hi), pred);
        }
    }
}

typedef struct {
    const int8_t *image;       /* [in_h][in_w][in_c] with the padding below, or prepared whole */
    int32_t pitch;             /* bytes from one image row to the next */
    int32_t pad_h, pad_w;      /* padding the windows fill in (0: every window lies in the image) */
    int8_t *columns;           /* three windows, one after the other */
    int32_t *acc;              /* [out_c][PIXELS] dot products of one block (two blocks' when pooled) */
    int8_t *spare;             /* out_c bytes where a short block's missing pixels are finished */
    /* The output pixels whose windows lie in the image: rows y_first .. y_first + y_span,
     * columns x_first .. x_first + x_span (spans as unsigned, so one compare tests each) */
    int32_t y_first, x_first;
    uint32_t y_span, x_span;
    int words;                 /* window rows are whole 16-byte steps of words: copied as such */
    finish_job job;            /* the layer's constants for finish_groups */
} workspace;

static inline __attribute__((always_inline)) void dots(const trt_conv_params *p, const workspace *ws,
                                                       const int8_t *weights, int32_t len, int32_t channels,
                                                       int32_t *acc) {
    if (trt_mve_word_aligned(weights) && len % 4 == 0)
        block_dots_word_weights(ws->columns, len, column_stride(p), weights, channels, acc);
    else
        block_dots_byte_weights(ws->columns, len, column_stride(p), weights, channels, acc);
}

/* The three windows' dot products with `channels` output channels from channel `first` (the
 * padded copy of the weights for short windows). `general`: any kernel this file has; else the
 * long windows' variant alone (word-aligned weights, trt_conv2d_long_mve_accepts). */
static inline __attribute__((always_inline)) void block_products(const trt_conv_params *p, const workspace *ws,
                                                                 int32_t first, int32_t len, int32_t channels,
                                                                 int32_t *acc, const int general) {
    if (!general) {
        block_dots_word_weights(ws->columns, len, column_stride(p), p->weights + (size_t)first * len, channels, acc);
    } else if (p->short_dots) {
        const int32_t stride = column_stride(p);
        p->short_dots(stride >> 4, ws->columns, ws->columns + stride, ws->columns + 2 * stride,
                      p->vector_weights + (size_t)first * stride, channels, acc);
    } else {
        dots(p, ws, p->weights + (size_t)first * len, len, channels, acc);
    }
}

/* The window at (y, x) of group g, which reaches into the padding, into column: all pad bytes
 * first (a few vector stores), then the taps in the image copied over them (kernel_c bytes
 * each; a row's taps as one run when they lie side by side: groups 1, dilation 1). */
static void border_window(const trt_conv_params *p, const workspace *ws, int32_t y, int32_t x, int32_t g,
                          int8_t *column) {
    const int32_t kc = p->kernel_c, kw = p->kernel_w, row_len = kw * kc;
    trt_mve_fill(column, column_stride(p), vdupq_n_s8((int8_t)-p->input_offset));
    for (int32_t ky = 0; ky < p->kernel_h; ky++) {
        const int32_t iy = y + ky * p->dilation_h;
        if ((uint32_t)iy >= (uint32_t)p->in_h) continue;
        const int8_t *row = ws->image + (size_t)iy * ws->pitch + (size_t)g * kc;
        int8_t *dst = column + ky * row_len;
        if (p->groups == 1 && p->dilation_w == 1) {
            const int32_t lo = x > 0 ? x : 0, hi = x + kw < p->in_w ? x + kw : p->in_w;
            if (hi > lo) copy_run(dst + (lo - x) * kc, row + (size_t)lo * kc, (hi - lo) * kc);
            continue;
        }
        for (int32_t kx = 0; kx < kw; kx++) {
            const int32_t ix = x + kx * p->dilation_w;
            if ((uint32_t)ix < (uint32_t)p->in_w) copy_run(dst + kx * kc, row + (size_t)ix * p->in_c, kc);
        }
    }
}

/* border_window for taps of whole 16-byte steps (groups 1, dilation 1, in_c a multiple of 16, the
 * image's rows of words): each step of the window is a pad vector or a step of the image, stored
 * once; a row's steps in the image are the taps lo .. hi. */
static void border_steps(const trt_conv_params *p, const workspace *ws, int32_t y, int32_t x, int8_t *column) {
    const int32_t kw = p->kernel_w, c = p->in_c, steps = (kw * c) >> 4, kh = p->kernel_h;
    const int32_t lo = (x < 0 ? -x : 0) * c >> 4, hi = (x + kw > p->in_w ? p->in_w - x : kw) * c >> 4;
    const int8x16_t pad = vdupq_n_s8((int8_t)-p->input_offset);
    const int8_t *row = ws->image + (ptrdiff_t)y * ws->pitch + (ptrdiff_t)x * c;
    const uint32_t in_h = (uint32_t)p->in_h;
    const int32_t pitch = ws->pitch;
    for (int32_t ky = 0; ky < kh; ky++, row += pitch) {
        const int32_t a = (uint32_t)(y + ky) < in_h ? lo : steps, b = a < hi ? hi : a;
        int32_t n = 0;
        for (; n < a; n++, column += 16) trt_mve_store_words(column, pad);
        for (const int8_t *src = row + 16 * n; n < b; n++, src += 16, column += 16)
            trt_mve_store_words(column, trt_mve_load_words(src));
        for (; n < steps; n++, column += 16) trt_mve_store_words(column, pad);
    }
}

/*
 * `rows` rows of `steps` 16-byte steps each (rows_steps: rows << 16 | steps, both >= 1) from src,
 * `skip` bytes apart after each row's end, one after the other into dst: a window whose rows are
 * whole steps of words, into its column. In assembly: a counted loop of a load and a store a step
 * (the compiler reloads the loop's bounds after every vector store, which may alias them).
 */
static __attribute__((naked, noinline)) void copy_rows(int8_t *dst, const int8_t *src, uint32_t rows_steps,
                                                      int32_t skip) {
    (void)dst, (void)src, (void)rows_steps, (void)skip;
    __asm__ volatile(
        "push     {r4, lr}\n\t"
        "uxth     r4, r2\n\t"
        "lsrs     r2, r2, #16\n\t"
        "1:\n\t"
        "dls      lr, r4\n\t"
        "2:\n\t"
        "vldrw.u32    q0, [r1], #16\n\t"
        "vstrw.32     q0, [r0], #16\n\t"
        "le       lr, 2b\n\t"
        "add      r1, r1, r3\n\t"
        "subs     r2, r2, #1\n\t"
        "bne      1b\n\t"
        "pop      {r4, pc}\n\t");
}

/* The window of output pixel (oy, ox) into column (groups 1, dilation 1): rows of whole 16-byte
 * steps of words by copy_rows, other rows by copy_run; a window reaching into the padding through
 * border_window. */
static inline __attribute__((always_inline)) void window(const trt_conv_params *p, const workspace *ws,
                                                         int32_t oy, int32_t ox, int8_t *column) {
    const int32_t y = oy * p->stride_h - ws->pad_h, x = ox * p->stride_w - ws->pad_w;
    if ((uint32_t)(oy - ws->y_first) > ws->y_span || (uint32_t)(ox - ws->x_first) > ws->x_span) {
        if (ws->words && p->in_c % 16 == 0) border_steps(p, ws, y, x, column);
        else border_window(p, ws, y, x, 0, column);
        return;
    }
    const int32_t row_len = p->kernel_w * p->in_c;
    const int8_t *src = ws->image + (size_t)y * ws->pitch + (size_t)x * p->in_c;
    if (ws->words) {
        copy_rows(column, src, (uint32_t)p->kernel_h << 16 | (uint32_t)(row_len >> 4), ws->pitch - row_len);
        return;
    }
    for (int32_t ky = 0; ky < p->kernel_h; ky++) copy_run(column + ky * row_len, src + (size_t)ky * ws->pitch, row_len);
}

/* The next output pixel: row-major, or (pooled) the four pixels of each 2x2 window in turn,
 * (2r, 2j) (2r + 1, 2j) (2r, 2j + 1) (2r + 1, 2j + 1), windows row-major; `end` is out_w, or
 * twice the pooled width. */
typedef struct {
    int32_t oy, ox, phase;
} cursor;

static inline __attribute__((always_inline)) void next_pixel(cursor *c, int32_t end, const int pooled) {
    if (!pooled) {
        if (++c->ox == end) c->ox = 0, c->oy++;
        return;
    }
    if (!(c->phase & 1)) {
        c->oy++;
    } else {
        c->oy--;
        if (++c->ox == end && c->phase == 3) c->ox = 0, c->oy += 2;
    }
    c->phase = (c->phase + 1) & 3;
}

/* The windows of the next `count` pixels (count <= 3; a short block's other columns keep what
 * they held: their sums are computed and never used), then their dot products into acc. The
 * windows out of line, once for both orders of the pixels (`pooled` a flag). */
static __attribute__((noinline)) void gather_windows(const trt_conv_params *p, const workspace *ws, cursor *c,
                                                     int32_t end, int32_t count, int pooled) {
    const int32_t stride = column_stride(p);
    for (int32_t k = 0; k < count; k++) {
        window(p, ws, c->oy, c->ox, ws->columns + (size_t)k * stride);
        if (pooled) next_pixel(c, end, 1);
        else next_pixel(c, end, 0);
    }
}

static inline __attribute__((always_inline)) void windows_and_dots(const trt_conv_params *p, const workspace *ws,
                                                                   cursor *c, int32_t end, int32_t count,
                                                                   int32_t *acc, const int pooled, const int general) {
    gather_windows(p, ws, c, end, count, pooled);
    block_products(p, ws, 0, window_len(p), p->out_c, acc, general);
}

/* Output pixels first .. first + count - 1 of a layer with groups or dilation: each group's
 * windows gathered tap by tap, then its channels. */
static void conv_block_grouped(const trt_conv_params *p, const workspace *ws, int32_t first, int32_t count,
                               int8_t *out) {
    const int32_t kc = p->kernel_c, window = window_len(p), stride = column_stride(p);
    const int32_t per_group = p->out_c / p->groups;
    const size_t row_step = (size_t)p->dilation_h * ws->pitch, tap_step = (size_t)p->dilation_w * p->in_c;
    for (int32_t g = 0; g < p->groups; g++) {
        for (int32_t k = 0; k < count; k++) {
            const int32_t pixel = first + k, oy = pixel / p->out_w, ox = pixel - oy * p->out_w;
            const int32_t y = oy * p->stride_h - ws->pad_h, x0 = ox * p->stride_w - ws->pad_w;
            int8_t *column = ws->columns + (size_t)k * stride;
            if ((uint32_t)(oy - ws->y_first) > ws->y_span || (uint32_t)(ox - ws->x_first) > ws->x_span) {
                border_window(p, ws, y, x0, g, column);
                continue;
            }
            const int8_t *x = ws->image + (size_t)y * ws->pitch + (size_t)x0 * p->in_c + (size_t)g * kc;
            for (int32_t ky = 0; ky < p->kernel_h; ky++)
                for (int32_t kx = 0; kx < p->kernel_w; kx++, column += kc)
                    copy_run(column, x + ky * row_step + kx * tap_step, kc);
        }
        /* group g's channels' results at acc[3 * g * per_group ...]; an odd last pair writes into
         * the next group's first slots, which that group overwrites */
        block_products(p, ws, g * per_group, window, per_group, ws->acc + (size_t)g * per_group * PIXELS, 1);
    }
    finish_block(p, ws->acc, count, out);
}

/* A 1x1 convolution with stride 1 over whole 16-byte steps of channels: the windows are the
 * input pixels themselves, read in place. */
static int reads_in_place(const trt_conv_params *p, const int8_t *image, int32_t pitch) {
    return p->kernel_h == 1 && p->kernel_w == 1 && p->stride_h == 1 && p->stride_w == 1 && p->groups == 1 &&
           p->in_c % 16 == 0 && pitch == p->in_w * p->in_c && trt_mve_word_aligned(image);
}

/* The block's results: whole blocks of a channel count in groups of four by finish_groups (a short
 * block's missing pixels written to the spare bytes), else finish_block. */
static inline __attribute__((always_inline)) void finish(const trt_conv_params *p, workspace *ws, int32_t count,
                                                        int8_t *out, const int general) {
    if (general && (p->out_c % 4 != 0 || p->out_c == 0)) {
        finish_block(p, ws->acc, count, out);
        return;
    }
    ws->job.out[0] = out;
    ws->job.out[1] = count > 1 ? out + p->out_c : ws->spare;
    ws->job.out[2] = count > 2 ? out + 2 * (size_t)p->out_c : ws->spare;
    finish_groups(&ws->job);
}

static void pointwise_block(const trt_conv_params *p, workspace *ws, int32_t first, int32_t count, int8_t *out) {
    const int32_t c = p->in_c;
    const int8_t *x0 = ws->image + (size_t)first * c;
    const int8_t *x1 = count > 1 ? x0 + c : x0, *x2 = count > 2 ? x1 + c : x0;
    if (p->short_dots) p->short_dots(c >> 4, x0, x1, x2, p->vector_weights, p->out_c, ws->acc);
    else block_dots_word_weights(x0, c, c, p->weights, p->out_c, ws->acc);
    finish(p, ws, count, out, 1);
}

/* The output pixels of a fused 2x2 max pool: the four pixels of each window in turn, three a
 * block into the two halves of acc alternately; once a window's fourth pixel is in, its four
 * sums (in one or two blocks) are pooled and requantized (trt_mve_finish_pooled). Window t's pixels are
 * 4t .. 4t + 3 of the sequence, block s / 3 (its half: the block's parity), place s % 3; four
 * blocks are three windows, so the places repeat every three windows: three jobs made once. */
static inline __attribute__((always_inline)) void run_pooled(const trt_conv_params *p, workspace *ws, int8_t *out,
                                                             const int general) {
    const int32_t half = ((p->out_c + 1) & ~1) * PIXELS, pixels = 4 * p->pooled_h * p->pooled_w;
    trt_pooled_job jobs[3];
    for (int32_t t = 0; t < 3; t++) {
        jobs[t] = (trt_pooled_job){{NULL}, NULL, p->folded_bias, p->multipliers, p->shifts, p->out_c / 4,
                                   p->output_offset, p->activation_min, p->activation_max, {0, 3, 6, 9}, 12};
        for (int32_t i = 0; i < 4; i++) {
            const int32_t s = 4 * t + i, b = s / PIXELS;
            jobs[t].base[i] = ws->acc + (b & 1) * half + (s - b * PIXELS);
        }
    }
    cursor c = {0, 0, 0};
    int32_t done = 0, phase = 0;   /* pixels whose sums are in; the next window's place in the three */
    for (int32_t block = 0; done < pixels; block++) {
        const int32_t count = pixels - done < PIXELS ? pixels - done : PIXELS;
        windows_and_dots(p, ws, &c, 2 * p->pooled_w, count, ws->acc + (block & 1) * half, 1, general);
        done += count;
        if ((done & ~3) <= done - count) continue;   /* no window completed in this block */
        jobs[phase].out = out;
        trt_mve_finish_pooled(&jobs[phase]);
        out += p->out_c;
        phase = phase == 2 ? 0 : phase + 1;
    }
}

/* The image with `pad_h` rows and `pad_w` columns of padding around it that the windows fill in. */
static inline __attribute__((always_inline)) void run_on_image(const trt_conv_params *p, const int8_t *image,
                                                              int32_t pitch, int32_t pad_h, int32_t pad_w, int8_t *out,
                                                              void *temp, const int general) {
    const int32_t pixels = p->out_h * p->out_w;
    const int grouped = general && (p->groups != 1 || p->dilation_h != 1 || p->dilation_w != 1);
    const int in_place = general && (pad_h | pad_w) == 0 && reads_in_place(p, image, pitch) &&
                         (p->short_dots || trt_mve_word_aligned(p->weights));
    workspace ws = {image, pitch, pad_h, pad_w, temp, (int32_t *)(void *)((int8_t *)temp + columns_bytes(p)), NULL,
                    0, 0, (uint32_t)(p->out_h - 1), (uint32_t)(p->out_w - 1),
                    (p->kernel_w * p->in_c) % 16 == 0 && p->in_c % 4 == 0 && pitch % 4 == 0 && trt_mve_word_aligned(image),
                    {NULL, {NULL}, p->folded_bias, p->multipliers, p->shifts, p->out_c / 4, p->output_offset,
                     p->activation_min, p->activation_max}};
    ws.spare = (int8_t *)(ws.acc + (size_t)((p->out_c + 1) & ~1) * PIXELS * (p->pooled_h ? 2 : 1));
    ws.job.acc = ws.acc;
    if (pad_h | pad_w) {
        trt_interior(p->in_h, p->out_h, p->kernel_h, p->stride_h, pad_h, p->dilation_h, &ws.y_first, &ws.y_span);
        trt_interior(p->in_w, p->out_w, p->kernel_w, p->stride_w, pad_w, p->dilation_w, &ws.x_first, &ws.x_span);
    }
    if (!general && p->pooled_h) {   /* only the long windows' variant fuses a pool */
        run_pooled(p, &ws, out, general);
        return;
    }
    cursor c = {0, 0, 0};
    /* three pixels at a time in row-major order (a block may span two rows) */
    for (int32_t i = 0; i < pixels; i += PIXELS) {
        const int32_t count = pixels - i < PIXELS ? pixels - i : PIXELS;
        int8_t *o = out + (size_t)i * p->out_c;
        if (in_place) {
            pointwise_block(p, &ws, i, count, o);
        } else if (grouped) {
            conv_block_grouped(p, &ws, i, count, o);
        } else {
            windows_and_dots(p, &ws, &c, p->out_w, count, ws.acc, 0, general);
            finish(p, &ws, count, o, general);
        }
    }
}

/* Any layer this file takes (one copy of the general driver for both entry points below). */
static __attribute__((noinline)) void run_general(const trt_conv_params *p, const int8_t *image, int32_t pitch,
                                                  int32_t pad_h, int32_t pad_w, int8_t *out, void *temp) {
    run_on_image(p, image, pitch, pad_h, pad_w, out, temp, 1);
}

void trt_conv2d_mve_on_image(const trt_conv_params *p, const int8_t *image, int32_t pitch, int8_t *out, void *temp) {
    run_general(p, image, pitch, 0, 0, out, temp);
}

void trt_conv2d_mve(const trt_conv_params *p, void *temp) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->in_c;
    const size_t out_image = (size_t)p->out_h * p->out_w * p->out_c;
    for (int32_t b = 0; b < p->batches; b++)
        run_general(p, p->input + (size_t)b * in_image, p->in_w * p->in_c, p->pad_h, p->pad_w,
                    p->output + (size_t)b * out_image, temp);
}

void trt_conv2d_long_mve(const trt_conv_params *p, void *temp) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->in_c;
    const size_t out_image = p->pooled_h ? (size_t)p->pooled_h * p->pooled_w * p->out_c
                                         : (size_t)p->out_h * p->out_w * p->out_c;
    for (int32_t b = 0; b < p->batches; b++)
        run_on_image(p, p->input + (size_t)b * in_image, p->in_w * p->in_c, p->pad_h, p->pad_w,
                     p->output + (size_t)b * out_image, temp, 0);
}

/* A 2x2 max pool at stride 2 without padding that alone reads the output of p, a Helium layer with
 * channels in whole groups of four (the loader checked the first, the caller the layer's own
 * conditions): fused when exact, i.e. every multiplier >= 0 (a non-decreasing requantization: the
 * maximum of the requantized values is the requantized maximum) and no sum plus bias can leave
 * int32 (|bias| + reach within int32, reach the largest |sum| of a window: the sums the kernel
 * compares are then the exact accumulators, not wrapped ones). The layer then computes only the
 * pixels the pool reads and writes the pooled maxima at the start of its own output, and the pool
 * becomes a 1x1 pool of those (a copy with its clamp). Shared by conv2d.c and depthwise_conv2d.c. */
int trt_mve_fuse_pool(trt_conv_params *p, trt_max_pool_params *pool, int64_t reach) {
    if (pool->kernel_h != 2 || pool->kernel_w != 2 || pool->stride_h != 2 || pool->stride_w != 2 ||
        (pool->pad_h | pool->pad_w) != 0 || pool->input != p->output || pool->batches != p->batches ||
        pool->in_h != p->out_h || pool->in_w != p->out_w || pool->channels != p->out_c || p->out_c % 4 != 0 ||
        p->pooled_h)
        return 0;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const int64_t bias = p->bias ? p->bias[oc] : 0;
        if (p->multipliers[oc] < 0 || (bias < 0 ? -bias : bias) > INT32_MAX - reach) return 0;
    }
    p->pooled_h = pool->out_h;
    p->pooled_w = pool->out_w;
    pool->in_h = pool->out_h;
    pool->in_w = pool->out_w;
    pool->kernel_h = pool->kernel_w = pool->stride_h = pool->stride_w = 1;
    return 1;
}

/* The long windows' kernel (groups 1, no dilation: its accepts) and the pool after it. */
int trt_conv2d_mve_fuse_pool(trt_conv_params *p, trt_max_pool_params *pool) {
    return trt_mve_fuse_pool(p, pool, (int64_t)window_len(p) * 255 * 128);
}

#endif
