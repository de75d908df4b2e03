/*
 * cortex_m::quantized_conv2d.out with the DSP extension -- NHWC int8 convolution, OHWI
 * weights read in place, per-channel requantization.
 *
 * Arithmetic (operators.quantized_conv2d_impl, arith.h), as kernels/mve/conv2d.c:
 *   acc[oc] = sum over the window of x * w + folded_bias[oc]    (int32, wraps)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * with folded_bias = bias + input_offset * sum(w) (weight_sums.h), exact for every pixel because
 * every window is whole: the taps of a window outside the image are pad bytes (-input_offset,
 * which contribute zero, kernels/padding.h), filled in where the window is gathered (below), so
 * the working memory holds a few windows and no padded copy of the image.
 *
 * Eight output pixels at a time, in two halves of four: each window is widened once to 16
 * bits, each group of four bytes stored as the halfword pairs (x0, x2), (x1, x3) -- the order
 * SXTB16 gives the weights -- and a half's four windows interleaved group by group (8 words a
 * group). The hot loop (assembly: the compiler spilled the accumulators) takes one output
 * channel and one half: a weight word, split by two SXTB16, meets the four pixels' 8 words
 * (two LDM) in 8 SMLAD: 64 MACs in 52 instructions per four groups with the loop (LDRD for
 * word-aligned weight rows). Each channel's requantization constants are then worked out
 * once for its eight outputs. The accumulators start at folded_bias (both sums wrap modulo
 * 2^32: the order does not matter).
 * A window not a multiple of four bytes is widened with zeros up to its last group, whose
 * weight word then holds up to 3 bytes of the next channels' rows (times 0); only the rows
 * whose word would reach past the tensor's end read their last group byte by byte.
 *
 * Requantization: dsp_requantize.h's short form when no accumulator, shifted left by a
 * positive shift, can reach 2^30 (checked at load; the left shift joins SMMULR's doubling),
 * with the output offset added before the rounding shift, scaled by 2^right
 * (floor((v + c + k 2^n) / 2^n) = floor((v + c) / 2^n) + k: one add less per output; the
 * load checks that the sum stays below 2^31), and SSAT alone when the activation range is the
 * whole int8 range; arith.h's general one otherwise.
 *
 * Groups and dilation: each window is first gathered tap by tap (kernel_c bytes of its group's
 * channels per tap, taps dilation apart) into one byte run, then widened, group by group, each
 * group against its own output channels (OHWI weights: contiguous per group). A window that
 * reaches into the padding is gathered the same way, its run first filled with pad bytes. The
 * same code runs the convolutions other operators reduce to (transposed convolution):
 * trt_conv2d_dsp_on_image takes an image already padded or prepared.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../arith.h"
#include "../conv_geometry.h"
#include "../padding.h"
#include "../weight_sums.h"
#include "dsp_intrinsics.h"
#include "dsp_requantize.h"
#include "kernels_dsp.h"

#define LANES 4    /* output pixels per pass of the hot loop */
#define PIXELS 8   /* output pixels per block: two passes, one finish per output channel */

static int32_t window_len(const trt_conv_params *p) { return p->kernel_h * p->kernel_w * p->kernel_c; }
static int32_t window_groups(const trt_conv_params *p) { return (window_len(p) + 3) / 4; }
static int is_general(const trt_conv_params *p) { return p->groups != 1 || p->dilation_h != 1 || p->dilation_w != 1; }
static int has_padding(const trt_conv_params *p) { return p->pad_h > 0 || p->pad_w > 0; }
/* two halves of four interleaved windows: 8 words per group of four bytes each */
static size_t columns_bytes(const trt_conv_params *p) { return (size_t)window_groups(p) * PIXELS * 8; }
/* kernel_w * in_c not a multiple of 4, groups or dilation: a window is gathered into one byte run first */
static int needs_staging(const trt_conv_params *p) { return is_general(p) || (p->kernel_w * p->in_c) % 4 != 0; }

int trt_conv2d_dsp_accepts(const trt_conv_params *p) { return trt_pad_value_fits(p->input_offset); }


/* Whether a channel takes the short requantization: every value its accumulator can take,
 * |sum(x * w)| + |folded| with |x| <= 128, times 2^max(shift, 0), stays below 2^30 (then
 * (acc 2^left * m + 2^30) >> 31 = SMMULR(acc 2^(left + 1), m), exactly), and the output offset,
 * scaled by 2^right, can join the rounding constant (with |v| <= 2^30 the sum stays below 2^31). */
static int short_form_fits(int64_t weight_abs_sum, int32_t folded, int32_t shift, int32_t output_offset) {
    const int64_t folded_abs = folded < 0 ? -(int64_t)folded : folded;
    const int64_t offset_abs = output_offset < 0 ? -(int64_t)output_offset : output_offset;
    const int32_t left = shift > 0 ? shift : 0, right = shift < 0 ? -shift : 0;
    return left < 30 && right < 30 && (128 * weight_abs_sum + folded_abs) << left < TRT_DSP_ACC_LIMIT &&
           (offset_abs + 1) << right < TRT_DSP_ACC_LIMIT - 1;
}

/* small_accumulators of a layer whose channels run from records (the top of the file) */
#define CHANNEL_RECORDS 2
#define RECORD_WORDS 3

/* Whether a layer whose channels all take the short requantization may run from records: whole
 * groups of four, one group, the whole int8 range, every shift < 0, multipliers >= 0 (its
 * records then have room in the scratch; it runs from them when its rows are also word aligned,
 * for LDRD: known only at prepare for weights a variant re-lays there). */
static int records_fit(const trt_conv_params *p) {
    if (is_general(p) || window_len(p) % 4 != 0 || p->activation_min != -128 || p->activation_max != 127)
        return 0;
    for (int32_t oc = 0; oc < p->out_c; oc++)
        if (p->shifts[oc] >= 0 || p->multipliers[oc] < 0) return 0;
    return 1;
}

/* scratch: the folded bias [out_c] (weight_sums.h: every window is whole, so no tap sums), then,
 * for a layer that may run from records, its records [out_c][RECORD_WORDS] */
static size_t records_bytes(const trt_conv_params *p) {
    return records_fit(p) ? (size_t)p->out_c * RECORD_WORDS * sizeof(int32_t) : 0;
}
size_t trt_conv2d_dsp_scratch_bytes(const trt_conv_params *p) { return trt_conv_folded_bytes(p) + records_bytes(p); }

/* The folded bias, and whether every channel takes the short requantization. */
void trt_conv2d_dsp_prepare(trt_conv_params *p, void *scratch) {
    const int32_t n = window_len(p);
    trt_conv_prepare_folded(p, scratch);
    p->small_accumulators = 1;
    for (int32_t oc = 0; oc < p->out_c && p->small_accumulators; oc++) {
        /* the test grows with sum |w| <= 128 n: a channel that passes with that sum passes with its own,
         * whose weights are then not read (most of a convolution's load when they were) */
        if (short_form_fits(128 * (int64_t)n, p->folded_bias[oc], p->shifts[oc], p->output_offset)) continue;
        const int64_t abs_sum = trt_abs_sum_s8(p->weights + (size_t)oc * n, n, 1);
        if (!short_form_fits(abs_sum, p->folded_bias[oc], p->shifts[oc], p->output_offset)) p->small_accumulators = 0;
    }
    if (!p->small_accumulators || !records_fit(p) || ((uintptr_t)(const void *)p->weights & 3) != 0) return;
    /* [multiplier][round][right] per channel, after the folded bias */
    int32_t *record = (int32_t *)(void *)((uint8_t *)scratch + trt_conv_folded_bytes(p));
    for (int32_t oc = 0; oc < p->out_c; oc++, record += RECORD_WORDS) {
        const int32_t right = -p->shifts[oc];
        record[0] = p->multipliers[oc];
        record[1] = (int32_t)(1u << (right - 1)) + p->output_offset * (int32_t)(1u << right);
        record[2] = right;
    }
    p->tap_sums = (const int32_t *)(void *)((uint8_t *)scratch + trt_conv_folded_bytes(p));   /* the records */
    p->small_accumulators = CHANNEL_RECORDS;
}

/* The working memory of a call: the interleaved windows, the staging bytes (a window gathered,
 * or filled in at the border), the spill rows of a last, partial block of pixels. */
static size_t staging_bytes(const trt_conv_params *p) {
    return needs_staging(p) || has_padding(p) ? (((size_t)window_len(p) + 3) & ~(size_t)3) : 0;
}
static size_t spill_bytes(const trt_conv_params *p) {
    return (p->out_h * p->out_w) % PIXELS != 0 ? (size_t)PIXELS * p->out_c : 0;
}
size_t trt_conv2d_dsp_block_bytes(const trt_conv_params *p) { return columns_bytes(p) + staging_bytes(p) + spill_bytes(p); }

/* temp: [interleaved windows][staging bytes][spill rows] */
size_t trt_conv2d_dsp_temp_bytes(const trt_conv_params *p) { return trt_conv2d_dsp_block_bytes(p); }

typedef struct {
    const int8_t *image;       /* [in_h][in_w][in_c] with the padding below, or prepared whole */
    int32_t pitch;             /* bytes per image row */
    int32_t pad_h, pad_w;      /* padding the windows fill in (0: every window lies in the image) */
    uint32_t *columns;
    int8_t *staging;
    /* The output pixels whose windows lie in the image: rows y_first .. y_first + y_span,
     * columns x_first .. x_first + x_span (spans as unsigned, so one compare tests each) */
    int32_t y_first, x_first;
    uint32_t y_span, x_span;
} workspace;

/* One group's word of pixel k into its column slots. */
static inline void widen_word(uint32_t v, uint32_t *slot) {
    slot[0] = trt_sxtb16(v);
    slot[1] = trt_sxtb16_ror8(v);
}

/* n bytes (n % 4 == 0) of lane k's window, from window position pos, into its column slots. */
static void widen_groups(const int8_t *src, int32_t n, uint32_t *columns, int32_t pos, int32_t k) {
    uint32_t *slot = columns + (size_t)(pos / 4) * 2 * LANES + 2 * k;
    /* four words a step: the loads first, each word's two halves then one STRD */
    for (; n >= 16; n -= 16, src += 16, slot += 8 * LANES) {
        const uint32_t a = trt_read32(src), b = trt_read32(src + 4), c = trt_read32(src + 8), d = trt_read32(src + 12);
        widen_word(a, slot);
        widen_word(b, slot + 2 * LANES);
        widen_word(c, slot + 4 * LANES);
        widen_word(d, slot + 6 * LANES);
    }
    for (; n > 0; n -= 4, src += 4, slot += 2 * LANES) widen_word(trt_read32(src), slot);
}

/* A window of whole rows of 16-byte runs, word aligned, into lane k's column slots. */
typedef struct {
    const int8_t *x;     /* the window's first row */
    int32_t pitch;       /* bytes per image row (a multiple of 4) */
    uint32_t *slot;      /* the lane's first slot */
    int32_t rows, runs;  /* kernel_h; runs of 16 bytes per row */
} widen_job;

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
/* Per run: one LDM of four words, two SXTB16 and one STRD a word (slots 2 * LANES words apart). */
static __attribute__((naked, noinline)) void widen_rows(const widen_job *job) {
    (void)job;
    __asm__ volatile(
        "push    {r4-r11, lr}\n\t"
        "ldm     r0, {r0-r4}\n\t"
        "1:\n\t"
        "mov     r5, r0\n\t"
        "mov     r6, r4\n\t"
        "2:\n\t"
        "ldm     r5!, {r7-r10}\n\t"
        "sxtb16  r11, r7\n\t"
        "sxtb16  r7, r7, ror #8\n\t"
        "strd    r11, r7, [r2], #32\n\t"
        "sxtb16  r11, r8\n\t"
        "sxtb16  r8, r8, ror #8\n\t"
        "strd    r11, r8, [r2], #32\n\t"
        "sxtb16  r11, r9\n\t"
        "sxtb16  r9, r9, ror #8\n\t"
        "strd    r11, r9, [r2], #32\n\t"
        "sxtb16  r11, r10\n\t"
        "sxtb16  r10, r10, ror #8\n\t"
        "strd    r11, r10, [r2], #32\n\t"
        "subs    r6, r6, #1\n\t"
        "bne     2b\n\t"
        "add     r0, r0, r1\n\t"
        "subs    r3, r3, #1\n\t"
        "bne     1b\n\t"
        "pop     {r4-r11, pc}\n\t");
}
#else
static void widen_rows(const widen_job *job) {
    uint32_t *slot = job->slot;
    for (int32_t ky = 0; ky < job->rows; ky++)
        for (int32_t i = 0; i < 4 * job->runs; i++, slot += 2 * LANES)
            widen_word(trt_read32(job->x + (size_t)ky * job->pitch + 4 * i), slot);
}
#endif

/* The last rest (1..3) bytes of a window, with zeros up to the group. */
static uint32_t partial_word(const int8_t *src, int32_t rest) {
    uint32_t v = 0;
    for (int32_t i = 0; i < rest; i++) v |= (uint32_t)(uint8_t)src[i] << (8 * i);
    return v;
}

/* The window of group g at image row y, column x (its top left tap), which reaches into the
 * padding, into the staging bytes: all pad bytes first, then the taps in the image copied over
 * them (kernel_c bytes each; a row's taps as one run when they lie side by side). */
static void border_window(const trt_conv_params *p, const workspace *ws, int32_t y, int32_t x, int32_t g) {
    const int32_t kc = p->kernel_c, kw = p->kernel_w, row_len = kw * kc;
    memset(ws->staging, (int)(int8_t)-p->input_offset, (size_t)window_len(p));
    for (int32_t ky = 0; ky < p->kernel_h; ky++) {
        const int32_t iy = y + ky * p->dilation_h;
        if ((uint32_t)iy >= (uint32_t)p->in_h) continue;
        const int8_t *row = ws->image + (size_t)iy * ws->pitch + (size_t)g * kc;
        int8_t *dst = ws->staging + ky * row_len;
        if (p->groups == 1 && p->dilation_w == 1) {
            const int32_t lo = x > 0 ? x : 0, hi = x + kw < p->in_w ? x + kw : p->in_w;
            if (hi > lo) memcpy(dst + (lo - x) * kc, row + (size_t)lo * kc, (size_t)(hi - lo) * kc);
            continue;
        }
        for (int32_t kx = 0; kx < kw; kx++) {
            const int32_t ix = x + kx * p->dilation_w;
            if ((uint32_t)ix < (uint32_t)p->in_w) memcpy(dst + kx * kc, row + (size_t)ix * p->in_c, (size_t)kc);
        }
    }
}

/* The window of output pixel `pixel` of the image, as block pixel k's columns, group g. */
static void window_to_columns(const trt_conv_params *p, const workspace *ws, int32_t pixel, int32_t k, int32_t g) {
    const int32_t row_len = p->kernel_w * p->in_c, window = window_len(p), whole = window & ~3;
    uint32_t *columns = ws->columns + (size_t)(k / LANES) * window_groups(p) * 2 * LANES;
    const int32_t oy = pixel / p->out_w, ox = pixel % p->out_w;
    const int32_t y = oy * p->stride_h - ws->pad_h, x0 = ox * p->stride_w - ws->pad_w;
    const int inside = (uint32_t)(oy - ws->y_first) <= ws->y_span && (uint32_t)(ox - ws->x_first) <= ws->x_span;
    const int8_t *x = inside ? ws->image + (size_t)y * ws->pitch + (size_t)x0 * p->in_c : NULL;
    k %= LANES;
    if (!inside) {
        border_window(p, ws, y, x0, g);
        if (!is_general(p) && row_len % 16 == 0 && p->kernel_h > 0) {   /* rows of 16-byte runs: one call */
            const widen_job job = {ws->staging, row_len, columns + 2 * k, p->kernel_h, row_len / 16};
            widen_rows(&job);
            return;
        }
    } else if (is_general(p)) {
        const int32_t kc = p->kernel_c;
        const size_t row_step = (size_t)p->dilation_h * ws->pitch, tap_step = (size_t)p->dilation_w * p->in_c;
        int8_t *dst = ws->staging;
        x += (size_t)g * kc;
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            for (int32_t kx = 0; kx < p->kernel_w; kx++, dst += kc) memcpy(dst, x + ky * row_step + kx * tap_step, (size_t)kc);
    } else if (needs_staging(p)) {
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            memcpy(ws->staging + ky * row_len, x + (size_t)ky * ws->pitch, (size_t)row_len);
    } else {
        if (row_len % 16 == 0 && ws->pitch % 4 == 0 && ((uintptr_t)(const void *)x & 3) == 0 && p->kernel_h > 0) {
            const widen_job job = {x, ws->pitch, columns + 2 * k, p->kernel_h, row_len / 16};
            widen_rows(&job);
            return;
        }
        for (int32_t ky = 0; ky < p->kernel_h; ky++)
            widen_groups(x + (size_t)ky * ws->pitch, row_len, columns, ky * row_len, k);
        return;   /* window % 4 == 0 */
    }
    widen_groups(ws->staging, whole, columns, 0, k);
    if (window > whole)
        widen_word(partial_word(ws->staging + whole, window - whole), columns + (size_t)(whole / 4) * 2 * LANES + 2 * k);
}

/* One group: the weight word v against the four pixels' 8 column words. */
static inline __attribute__((always_inline)) void group4(const uint32_t *x, uint32_t v, int32_t acc[LANES]) {
    const uint32_t we = trt_sxtb16(v), wo = trt_sxtb16_ror8(v);
    acc[0] = trt_smlad(x[1], wo, trt_smlad(x[0], we, acc[0]));
    acc[1] = trt_smlad(x[3], wo, trt_smlad(x[2], we, acc[1]));
    acc[2] = trt_smlad(x[5], wo, trt_smlad(x[4], we, acc[2]));
    acc[3] = trt_smlad(x[7], wo, trt_smlad(x[6], we, acc[3]));
}

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
/* acc[k] += lane k's columns . w over `groups` groups: four groups a step (LDRD for the weights
 * when they are word aligned, as exported rows of whole groups are; LDR otherwise), then the
 * rest one at a time. Registers: r0 columns, r1 weights, r2 the count, r4-r7 the accumulators,
 * r8/r3 a weight word then its odd pair, lr its even pair, r9-r12 columns; the group count
 * and acc are kept on the stack. */
#define TRT_CONV_GROUP(raw)                  \
    "sxtb16  lr, " raw "\n\t"               \
    "sxtb16  " raw ", " raw ", ror #8\n\t"   \
    "ldm     r0!, {r9-r12}\n\t"             \
    "smlad   r4, r9, lr, r4\n\t"            \
    "smlad   r4, r10, " raw ", r4\n\t"      \
    "smlad   r5, r11, lr, r5\n\t"           \
    "smlad   r5, r12, " raw ", r5\n\t"      \
    "ldm     r0!, {r9-r12}\n\t"             \
    "smlad   r6, r9, lr, r6\n\t"            \
    "smlad   r6, r10, " raw ", r6\n\t"      \
    "smlad   r7, r11, lr, r7\n\t"           \
    "smlad   r7, r12, " raw ", r7\n\t"
/* Two groups of four channels from one LDRD of eight weight bytes: the unrolled step of both passes. */
#define TRT_CONV_GROUP_PAIR                  \
    "ldrd    r8, r3, [r1], #8\n\t"           \
    TRT_CONV_GROUP("r8")                     \
    TRT_CONV_GROUP("r3")
/* One pass: r0 columns, r1 weights; the group count at [sp, #4]. */
#define TRT_CONV_PASS                        \
    "ldr     r2, [sp, #4]\n\t"               \
    "lsrs    r2, r2, #2\n\t"                 \
    "beq     5f\n\t"                         \
    "tst     r1, #3\n\t"                     \
    "bne     3f\n\t"                         \
    "2:\n\t"                                 \
    TRT_CONV_GROUP_PAIR                      \
    TRT_CONV_GROUP_PAIR                      \
    "subs    r2, r2, #1\n\t"                 \
    "bne     2b\n\t"                         \
    "b       5f\n\t"                         \
    "3:\n\t"                                 \
    "ldr     r8, [r1], #4\n\t"               \
    "ldr     r3, [r1], #4\n\t"               \
    TRT_CONV_GROUP("r8")                     \
    TRT_CONV_GROUP("r3")                     \
    "ldr     r8, [r1], #4\n\t"               \
    "ldr     r3, [r1], #4\n\t"               \
    TRT_CONV_GROUP("r8")                     \
    TRT_CONV_GROUP("r3")                     \
    "subs    r2, r2, #1\n\t"                 \
    "bne     3b\n\t"                         \
    "5:\n\t"                                 \
    "ldr     r2, [sp, #4]\n\t"               \
    "ands    r2, r2, #3\n\t"                 \
    "beq     7f\n\t"                         \
    "6:\n\t"                                 \
    "ldr     r8, [r1], #4\n\t"               \
    TRT_CONV_GROUP("r8")                     \
    "subs    r2, r2, #1\n\t"                 \
    "bne     6b\n\t"                         \
    "7:\n\t"
static __attribute__((naked, noinline)) void dot4(const uint32_t *x, const int8_t *w, int32_t groups,
                                                  int32_t acc[LANES]) {
    (void)x, (void)w, (void)groups, (void)acc;
    __asm__ volatile(
        "push    {r1-r11, lr}\n\t"   /* [sp] w, [sp, #4] groups, [sp, #8] acc */
        "ldm     r3, {r4-r7}\n\t"
        TRT_CONV_PASS
        "ldr     r3, [sp, #8]\n\t"
        "stm     r3, {r4-r7}\n\t"
        "pop     {r1-r11, pc}\n\t");
}
/* Both halves of a block: the second half's columns follow the first's, where the first pass
 * leaves r0; the weights are read again from the start. */
static __attribute__((naked, noinline)) void dot8(const uint32_t *x, const int8_t *w, int32_t groups,
                                                  int32_t acc[PIXELS]) {
    (void)x, (void)w, (void)groups, (void)acc;
    __asm__ volatile(
        "push    {r1-r11, lr}\n\t"
        "ldm     r3, {r4-r7}\n\t"
        TRT_CONV_PASS
        "ldr     r3, [sp, #8]\n\t"
        "stm     r3!, {r4-r7}\n\t"
        "ldm     r3, {r4-r7}\n\t"
        "ldr     r1, [sp]\n\t"
        TRT_CONV_PASS
        "ldr     r3, [sp, #8]\n\t"
        "add     r3, r3, #16\n\t"
        "stm     r3, {r4-r7}\n\t"
        "pop     {r1-r11, pc}\n\t");
}
#else
static void dot4(const uint32_t *x, const int8_t *w, int32_t groups, int32_t acc[LANES]) {
    for (; groups > 0; groups--, x += 2 * LANES, w += 4) group4(x, trt_read32(w), acc);
}
static void dot8(const uint32_t *x, const int8_t *w, int32_t groups, int32_t acc[PIXELS]) {
    dot4(x, w, groups, acc);
    dot4(x + (size_t)groups * 2 * LANES, w, groups, acc + LANES);
}
#endif

/* The channels [oc0, oc1) of a block from their records (the top of the file), in one call. */
typedef struct {
    const uint32_t *columns;   /* 0: the first half's windows, the second's after them */
    const int8_t *weights;     /* 4: the current channel's row (advanced) */
    int32_t groups;            /* 8 */
    const int32_t *folded;     /* 12: the current channel's folded bias (advanced) */
    const int32_t *records;    /* 16: its record (advanced) */
    int8_t *out;               /* 20: its output in the block's first pixel (advanced) */
    int32_t stride;            /* 24: bytes from one pixel's outputs to the next one's */
    int32_t channels;          /* 28: channels left (at least one) */
    int32_t halves;            /* 32: 2, or 1 for a last block of at most four pixels */
} record_job;

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
/* One pass over a channel's row for four pixels, eight groups a step (four LDRD), then four,
 * then one at a time: r0 columns, r1 weights, the group count in the job at [sp]. */
#define TRT_RECORD_PASS                      \
    "ldr     r2, [sp]\n\t"                   \
    "ldr     r2, [r2, #8]\n\t"               \
    "lsrs    r2, r2, #3\n\t"                 \
    "beq     4f\n\t"                         \
    "2:\n\t"                                 \
    TRT_CONV_GROUP_PAIR                      \
    TRT_CONV_GROUP_PAIR                      \
    TRT_CONV_GROUP_PAIR                      \
    TRT_CONV_GROUP_PAIR                      \
    "subs    r2, r2, #1\n\t"                 \
    "bne     2b\n\t"                         \
    "4:\n\t"                                 \
    "ldr     r2, [sp]\n\t"                   \
    "ldr     r2, [r2, #8]\n\t"               \
    "tst     r2, #4\n\t"                     \
    "beq     5f\n\t"                         \
    TRT_CONV_GROUP_PAIR                      \
    TRT_CONV_GROUP_PAIR                      \
    "5:\n\t"                                 \
    "ands    r2, r2, #3\n\t"                 \
    "beq     7f\n\t"                         \
    "6:\n\t"                                 \
    "ldr     r8, [r1], #4\n\t"               \
    TRT_CONV_GROUP("r8")                     \
    "subs    r2, r2, #1\n\t"                 \
    "bne     6b\n\t"                         \
    "7:\n\t"
/* One output of accumulator acc (folded bias included): a = 2 acc, SMMLAR(a, m, round) + (a >> 31),
 * shifted right and saturated; r8 m, r9 round, r10 right. */
#define TRT_RECORD_OUT(acc, address)         \
    "lsl     r2, " acc ", #1\n\t"            \
    "smmlar  lr, r2, r8, r9\n\t"             \
    "add     lr, lr, r2, asr #31\n\t"        \
    "asr     lr, lr, r10\n\t"                \
    "ssat    lr, #8, lr\n\t"                 \
    "strb    lr, " address "\n\t"
/* Four pixels' outputs (r4-r7) of the channel, r11 its output in the first of them (after `move`),
 * r12 the stride; r0 and r1 kept. */
#define TRT_RECORD_FINISH(move)              \
    "ldr     r3, [sp]\n\t"                   \
    "ldr     r8, [r3, #16]\n\t"              \
    "ldm     r8, {r8-r10}\n\t"               \
    "ldr     r11, [r3, #20]\n\t"             \
    "ldr     r12, [r3, #24]\n\t"             \
    move                                     \
    TRT_RECORD_OUT("r4", "[r11]")            \
    TRT_RECORD_OUT("r5", "[r11, r12]")       \
    "add     r11, r11, r12, lsl #1\n\t"      \
    TRT_RECORD_OUT("r6", "[r11]")            \
    TRT_RECORD_OUT("r7", "[r11, r12]")
/* Per channel: the accumulators start at its folded bias, a pass and the first half's outputs,
 * then (two halves) a second pass over the same row with the columns where the first left r0;
 * the row's end is the next channel's row. The job stays at [sp]. */
static __attribute__((naked, noinline)) void record_block(record_job *job) {
    (void)job;
    __asm__ volatile(
        "push    {r0, r4-r11, lr}\n\t"
        "10:\n\t"
        "ldr     r3, [sp]\n\t"
        "ldr     r2, [r3, #12]\n\t"
        "ldr     r4, [r2], #4\n\t"
        "str     r2, [r3, #12]\n\t"
        "mov     r5, r4\n\t"
        "mov     r6, r4\n\t"
        "mov     r7, r4\n\t"
        "ldrd    r0, r1, [r3]\n\t"
        TRT_RECORD_PASS
        TRT_RECORD_FINISH("")
        "ldr     r3, [sp]\n\t"
        "ldr     r2, [r3, #32]\n\t"
        "cmp     r2, #2\n\t"
        "bne     20f\n\t"
        "ldr     r2, [r3, #12]\n\t"
        "ldr     r4, [r2, #-4]\n\t"
        "mov     r5, r4\n\t"
        "mov     r6, r4\n\t"
        "mov     r7, r4\n\t"
        "ldr     r1, [r3, #4]\n\t"
        TRT_RECORD_PASS
        TRT_RECORD_FINISH("add     r11, r11, r12, lsl #2\n\t")
        "20:\n\t"
        "ldr     r3, [sp]\n\t"
        "str     r1, [r3, #4]\n\t"
        "ldr     r2, [r3, #16]\n\t"
        "add     r2, r2, #12\n\t"
        "str     r2, [r3, #16]\n\t"
        "ldr     r2, [r3, #20]\n\t"
        "add     r2, r2, #1\n\t"
        "str     r2, [r3, #20]\n\t"
        "ldr     r2, [r3, #28]\n\t"
        "subs    r2, r2, #1\n\t"
        "str     r2, [r3, #28]\n\t"
        "bne     10b\n\t"
        "pop     {r0, r4-r11, pc}\n\t");
}
#else
static void record_block(record_job *job) {
    for (; job->channels > 0; job->channels--, job->folded++, job->records += RECORD_WORDS, job->out++) {
        const int32_t f = *job->folded, *r = job->records;
        int32_t acc[PIXELS] = {f, f, f, f, f, f, f, f};
        dot4(job->columns, job->weights, job->groups, acc);
        if (job->halves == 2) dot4(job->columns + (size_t)job->groups * 2 * LANES, job->weights, job->groups, acc + LANES);
        for (int32_t i = 0; i < LANES * job->halves; i++) {
            const int32_t a = (int32_t)((uint32_t)acc[i] << 1);
            const int32_t t = r[1] + trt_smmulr(a, r[0]) + (a >> 31);
            job->out[i * job->stride] = (int8_t)trt_ssat8(t >> r[2]);
        }
        job->weights += 4 * job->groups;
    }
}
#endif

/* What the finishing of every output channel reads, gathered once per call. */
typedef struct {
    int32_t offset, lo, hi, stride;   /* stride: bytes from one pixel's outputs to the next one's */
} finish_constants;

/* The short requantization of one output (acc: folded bias included), dsp_requantize.h's with the
 * left shift in SMMULR's operand and the output offset in the rounding constant. */
static inline __attribute__((always_inline)) int8_t short_output(int32_t acc, int32_t left, int32_t mult,
                                                                int32_t round, int32_t negative, int32_t right,
                                                                int32_t lo, int32_t hi) {
    const int32_t v = trt_smmulr((int32_t)((uint32_t)acc << left), mult);
    return (int8_t)trt_clamp((v + round + ((v >> 31) & negative)) >> right, lo, hi);
}

/* One output channel of the block's pixels, short form (a leaf function of its own: few values live). */
static __attribute__((noinline)) void finish_short(const int32_t acc[PIXELS], int32_t mult, int32_t shift,
                                                   const finish_constants *k, int8_t *out) {
    const int32_t lo = k->lo, hi = k->hi, stride = k->stride;
    if (shift < 0) {   /* the usual case: a rounding shift */
        const int32_t right = -shift, round = (int32_t)(1u << (right - 1)) + k->offset * (int32_t)(1u << right);
        if (lo == -128 && hi == 127) {   /* the whole int8 range (a ReLU folded into the output zero point too) */
            for (int32_t i = 0; i < PIXELS; i++) {
                const int32_t v = trt_smmulr(acc[i] * 2, mult);
                out[i * stride] = (int8_t)trt_ssat8((v + round + (v >> 31)) >> right);
            }
            return;
        }
        for (int32_t i = 0; i < PIXELS; i++) {
            const int32_t v = trt_smmulr(acc[i] * 2, mult);
            out[i * stride] = (int8_t)trt_clamp((v + round + (v >> 31)) >> right, lo, hi);
        }
        return;
    }
    const int32_t left = shift + 1;
    for (int32_t i = 0; i < PIXELS; i++)
        out[i * stride] = short_output(acc[i], left, mult, k->offset, 0, 0, lo, hi);
}

static __attribute__((noinline)) void finish_general(const int32_t acc[PIXELS], int32_t mult, int32_t shift,
                                                     const finish_constants *k, int8_t *out) {
    for (int32_t i = 0; i < PIXELS; i++)
        out[i * k->stride] = trt_output_s8(acc[i], mult, shift, k->offset, k->lo, k->hi);
}

/* Output channels [oc0, oc1) of the block's eight pixels, whose outputs are `stride` bytes apart
 * from out (channel oc0 of the first pixel); a last block of at most four pixels computes only
 * its first half (the other half's outputs, of the bias alone, land in the spill rows). */
static void conv_block(const trt_conv_params *p, const uint32_t *columns, int32_t oc0, int32_t oc1, int8_t *out,
                       int32_t stride, int both_halves) {
    const int32_t n = window_len(p), groups = window_groups(p), whole = n / 4, rest = n % 4;
    const uint32_t *second = columns + (size_t)groups * 2 * LANES;   /* the second half's windows */
    /* the rows whose last group's word would reach past the tensor's end (the last one; more when
     * a row is shorter than the 1..3 bytes the word reads beyond it) read that group byte by byte */
    const int32_t partial_from = rest != 0 ? p->out_c - 1 - (4 * groups - n - 1) / n : p->out_c;
    const int32_t *folded = p->folded_bias, *mults = p->multipliers, *shifts = p->shifts;
    if (p->small_accumulators == CHANNEL_RECORDS) {   /* whole groups: no partial rows */
        record_job job = {columns, p->weights + (size_t)oc0 * n, groups, folded + oc0, p->tap_sums + (size_t)oc0 * RECORD_WORDS,
                          out, stride, oc1 - oc0, both_halves ? 2 : 1};
        if (oc1 > oc0) record_block(&job);
        return;
    }
    const finish_constants k = {p->output_offset, p->activation_min, p->activation_max, stride};
    void (*const finish)(const int32_t *, int32_t, int32_t, const finish_constants *, int8_t *) =
        p->small_accumulators ? finish_short : finish_general;
    const int8_t *w = p->weights + (size_t)oc0 * n;
    for (int32_t oc = oc0; oc < oc1; oc++, w += n, out++) {
        const int32_t f = folded[oc];
        int32_t acc[PIXELS] = {f, f, f, f, f, f, f, f};
        if (oc >= partial_from) {
            const uint32_t last = partial_word(w + 4 * whole, rest);
            dot4(columns, w, whole, acc);
            group4(columns + (size_t)whole * 2 * LANES, last, acc);
            if (both_halves) {
                dot4(second, w, whole, acc + LANES);
                group4(second + (size_t)whole * 2 * LANES, last, acc + LANES);
            }
        } else {
            if (both_halves) dot8(columns, w, groups, acc);
            else dot4(columns, w, groups, acc);
        }
        finish(acc, mults[oc], shifts[oc], &k, out);
    }
}

/* The image with `pad_h` rows and `pad_w` columns of padding around it that the windows fill in. */
static void run_on_image(const trt_conv_params *p, const int8_t *image, int32_t pitch, int32_t pad_h, int32_t pad_w,
                         int8_t *out, void *temp) {
    const int32_t pixels = p->out_h * p->out_w, per_group = p->out_c / p->groups;
    workspace ws = {image, pitch, pad_h, pad_w, temp, (int8_t *)temp + columns_bytes(p),
                    0, 0, (uint32_t)(p->out_h - 1), (uint32_t)(p->out_w - 1)};
    if (pad_h | pad_w) {
        trt_interior(p->in_h, p->out_h, p->kernel_h, p->stride_h, pad_h, p->dilation_h, &ws.y_first, &ws.y_span);
        trt_interior(p->in_w, p->out_w, p->kernel_w, p->stride_w, pad_w, p->dilation_w, &ws.x_first, &ws.x_span);
    }
    int8_t *spill = (int8_t *)temp + columns_bytes(p) + staging_bytes(p);
    for (int32_t i = 0; i < pixels; i += PIXELS) {
        const int whole_block = i + PIXELS <= pixels, both_halves = pixels - i > LANES;
        /* a last, partial block repeats its last pixel, its outputs going to the spill rows */
        int8_t *block_out = whole_block ? out + (size_t)i * p->out_c : spill;
        for (int32_t g = 0; g < p->groups; g++) {
            for (int32_t k = 0; k < (both_halves ? PIXELS : LANES); k++)
                window_to_columns(p, &ws, i + k < pixels ? i + k : pixels - 1, k, g);
            conv_block(p, ws.columns, g * per_group, (g + 1) * per_group, block_out + g * per_group, p->out_c,
                       both_halves);
        }
        if (!whole_block) memcpy(out + (size_t)i * p->out_c, spill, (size_t)(pixels - i) * p->out_c);
    }
}

void trt_conv2d_dsp_on_image(const trt_conv_params *p, const int8_t *image, int32_t pitch, int8_t *out, void *temp) {
    run_on_image(p, image, pitch, 0, 0, out, temp);
}

void trt_conv2d_dsp(const trt_conv_params *p, void *temp) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->in_c;
    for (int32_t b = 0; b < p->batches; b++)
        run_on_image(p, p->input + (size_t)b * in_image, p->in_w * p->in_c, p->pad_h, p->pad_w,
                     p->output + (size_t)b * p->out_h * p->out_w * p->out_c, temp);
}

#endif
