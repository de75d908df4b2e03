/*
 * cortex_m::quantized_conv2d.out with Helium, read in place: a 3x3 convolution at stride 1 over 16 or
 * 32 input channels, whose output a fused 2x2 max pool reads (the long windows' variant's layers of
 * that shape: the loader switches such a layer to this kernel when it fuses the pool, runtime.c
 * fuse_calls and ops/conv2d.c).
 *
 * Arithmetic (operators.quantized_conv2d_impl, arith.h), as conv2d.c:
 *   acc[oc] = sum over the window of x * w + folded_bias[oc],  folded_bias = bias + input_offset * sum(w)
 *   pooled[oc] = clamp(requantize(max over the pool window's four pixels of acc[oc]) + output_offset, ...)
 * the pool taken before the requantization when the fusion was exact (trt_mve_fuse_pool checks it).
 *
 * Why a kernel of its own: conv2d.c copies each window into a column and takes three pixels by two
 * channels a step (12 instructions per 96 MACs with the loop end, a tenth of the instructions in
 * the copies). Here the image is padded once per call into the working memory (its pad bytes hold
 * -input_offset: they contribute zero), so every window lies in it: a window's row of three pixels
 * is 3 * C bytes side by side, read where it is, and its four pixels' rows are at C and `pitch`
 * from one another. One block is one pool window: its four pixels by two output channels, eight
 * sums, each 16 bytes of a window row four loads of the image, two of the weights and eight
 * VMLADAVA.S8 (14 instructions per 128 MACs), the kernel's nine rows of steps unrolled (C fixed at
 * assembly: the pixels' offsets are immediates), so no loop counter: VMLADAVA's accumulators are
 * the even registers, all eight of them with lr. The working memory is the padded image and the
 * block's sums, and it goes where the layer's unpooled output would have been: the fused layer
 * writes only its pooled quarter (runtime.c, place_by_lifetime).
 *
 * Registers (direct_dots): r0 r2 r4 r6 the sums of channel A, B at pixel (y, x) and (y, x + 1),
 * r8 r10 r12 lr at (y + 1, x) and (y + 1, x + 1); r1 r3 the two rows' pointers into the padded
 * image, r5 A's weights (B's are LEN = 9 C bytes on: an immediate), r7 the sums' destination,
 * r9 the pairs left, r11 the step from a window row's end to the next row's start. One LDM from
 * the stack clears the sums and puts both row pointers back; one STM stores a pair's eight sums:
 * [A B] at (y, x), (y, x + 1), (y + 1, x), (y + 1, x + 1), so four channels' sums of one pixel
 * are at words {0, 1, 8, 9} from the pixel's base (trt_mve_finish_pooled's offsets).
 *
 * Schedule (the cycle estimate's reason, docs/firmware.md "Cycle estimate": on a Cortex-M55 a load
 * and a MAC overlap, two loads or two MACs do not): each step's six loads alternate with the
 * previous step's last four MACs and its own first two, and every MAC reads vectors loaded at least
 * two instructions before it. The weights alternate between q0 q1 and q6 q7 from step to step, so
 * that a step's loads do not overwrite what the previous step's late MACs still read; q2 q3 hold
 * the (y) row's two pixels, q4 q5 the (y + 1) row's. A pair's first step has no previous one (10
 * instructions), its last step's late MACs follow it. Written in order, loads then MACs, the same
 * instructions took an estimated 1.65 M cycles for the default network; so, 1.34 M.
 *
 * Without a pool (a program's own image or a library that keeps only this variant binds it to
 * every layer of its shape): the same blocks over the output rounded up to even extents, each
 * pixel requantized on its own (its four bases the same), the pixels past an odd extent into
 * spare bytes.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"
#include "mve_finish_pooled.h"
#include "mve_load.h"

/* 16 bytes of one window row, software-pipelined: this step's loads of the weights (A, B) and the
 * four pixels' vectors (P Q at y, R S at y + 1) alternate with the MACs of the previous step's R and S
 * (against its weights PA, PB) and then of this step's P and Q. */
#define TRT_DIRECT_STEP(C, LEN, A, B, PA, PB)           \
    "vldrw.u32    " A ", [r5], #16\n\t"                 \
    "vmladava.s8  r8, q4, " PA "\n\t"                   \
    "vldrw.u32    q2, [r1], #16\n\t"                    \
    "vmladava.s8  r10, q4, " PB "\n\t"                  \
    "vldrw.u32    " B ", [r5, #(" LEN " - 16)]\n\t"     \
    "vmladava.s8  r12, q5, " PA "\n\t"                  \
    "vldrw.u32    q3, [r1, #(" C " - 16)]\n\t"          \
    "vmladava.s8  lr, q5, " PB "\n\t"                   \
    "vldrw.u32    q4, [r3], #16\n\t"                    \
    "vmladava.s8  r0, q2, " A "\n\t"                    \
    "vldrw.u32    q5, [r3, #(" C " - 16)]\n\t"          \
    "vmladava.s8  r2, q2, " B "\n\t"                    \
    "vmladava.s8  r4, q3, " A "\n\t"                    \
    "vmladava.s8  r6, q3, " B "\n\t"
/* a pair's first step (no step before it), in q0 q1 */
#define TRT_DIRECT_FIRST(C, LEN)                        \
    "vldrw.u32    q0, [r5], #16\n\t"                    \
    "vldrw.u32    q2, [r1], #16\n\t"                    \
    "vldrw.u32    q1, [r5, #(" LEN " - 16)]\n\t"        \
    "vldrw.u32    q3, [r1, #(" C " - 16)]\n\t"          \
    "vmladava.s8  r0, q2, q0\n\t"                       \
    "vldrw.u32    q4, [r3], #16\n\t"                    \
    "vmladava.s8  r2, q2, q1\n\t"                       \
    "vldrw.u32    q5, [r3, #(" C " - 16)]\n\t"          \
    "vmladava.s8  r4, q3, q0\n\t"                       \
    "vmladava.s8  r6, q3, q1\n\t"
/* the last step's R and S */
#define TRT_DIRECT_LAST(A, B)                           \
    "vmladava.s8  r8, q4, " A "\n\t"                    \
    "vmladava.s8  r10, q4, " B "\n\t"                   \
    "vmladava.s8  r12, q5, " A "\n\t"                   \
    "vmladava.s8  lr, q5, " B "\n\t"
/* the steps' weights alternate between q0 q1 (even steps) and q6 q7 (odd) */
#define TRT_EVEN(C, LEN) TRT_DIRECT_STEP(C, LEN, "q0", "q1", "q6", "q7")
#define TRT_ODD(C, LEN) TRT_DIRECT_STEP(C, LEN, "q6", "q7", "q0", "q1")
#define TRT_NEXT_ROW "add      r1, r1, r11\n\t" "add      r3, r3, r11\n\t"
/* the nine window rows of 16 (three steps each) and of 32 channels (six) */
#define TRT_STEPS_16                                                                        \
    TRT_DIRECT_FIRST("16", "144") TRT_ODD("16", "144") TRT_EVEN("16", "144") TRT_NEXT_ROW    \
    TRT_ODD("16", "144") TRT_EVEN("16", "144") TRT_ODD("16", "144") TRT_NEXT_ROW             \
    TRT_EVEN("16", "144") TRT_ODD("16", "144") TRT_EVEN("16", "144") TRT_DIRECT_LAST("q0", "q1")
#define TRT_PAIR_32 TRT_EVEN("32", "288") TRT_ODD("32", "288")
#define TRT_STEPS_32                                                                        \
    TRT_DIRECT_FIRST("32", "288") TRT_ODD("32", "288") TRT_PAIR_32 TRT_PAIR_32 TRT_NEXT_ROW   \
    TRT_PAIR_32 TRT_PAIR_32 TRT_PAIR_32 TRT_NEXT_ROW                                        \
    TRT_PAIR_32 TRT_PAIR_32 TRT_PAIR_32 TRT_DIRECT_LAST("q6", "q7")

/* direct_dots_C(p, w, pairs, acc, pitch): the block at p (the top-left pixel's window in the padded
 * image, rows `pitch` bytes apart) against `pairs` pairs of output channels from w (OHWI), eight
 * sums a pair into acc. */
#define TRT_DIRECT_DOTS(C, LEN)                                                                             \
    static __attribute__((naked, noinline)) void direct_dots_##C(const int8_t *p, const int8_t *w,          \
                                                                int32_t pairs, int32_t *acc, int32_t pitch) { \
        (void)p, (void)w, (void)pairs, (void)acc, (void)pitch;                                              \
        __asm__ volatile(                                                                                   \
            "push     {r4-r11, lr}\n\t"                                                                     \
            "ldr      r11, [sp, #36]\n\t"                                                                   \
            "vpush    {d8-d15}\n\t"                                                                         \
            "sub      sp, sp, #40\n\t"             /* 0 p 0 q 0 0 0 0 0 0: the LDM of a pair's start */     \
            "movs     r4, #0\n\t"                                                                           \
            "movs     r6, #0\n\t"                                                                           \
            "strd     r4, r0, [sp]\n\t"                                                                     \
            "add      r0, r0, r11\n\t"                                                                      \
            "strd     r4, r0, [sp, #8]\n\t"                                                                 \
            "strd     r4, r6, [sp, #16]\n\t"                                                                \
            "strd     r4, r6, [sp, #24]\n\t"                                                                \
            "strd     r4, r6, [sp, #32]\n\t"                                                                \
            "sub      r11, r11, #(3 * " #C ")\n\t"                                                          \
            "mov      r5, r1\n\t"                                                                           \
            "mov      r7, r3\n\t"                                                                           \
            "mov      r9, r2\n\t"                                                                           \
            "1:\n\t"                                                                                        \
            "ldm      sp, {r0, r1, r2, r3, r4, r6, r8, r10, r12, lr}\n\t"                                   \
            TRT_STEPS_##C                                                                                   \
            "stmia    r7!, {r0, r2, r4, r6, r8, r10, r12, lr}\n\t"                                          \
            "add      r5, r5, #" #LEN "\n\t"         /* B's row: the next A's is after it */                \
            "subs     r9, r9, #1\n\t"                                                                       \
            "bne      1b\n\t"                                                                               \
            "add      sp, sp, #40\n\t"                                                                      \
            "vpop     {d8-d15}\n\t"                                                                         \
            "pop      {r4-r11, pc}\n\t");                                                                   \
    }
TRT_DIRECT_DOTS(16, 144)
TRT_DIRECT_DOTS(32, 288)
#undef TRT_DIRECT_DOTS
#undef TRT_STEPS_32
#undef TRT_PAIR_32
#undef TRT_STEPS_16
#undef TRT_NEXT_ROW
#undef TRT_ODD
#undef TRT_EVEN
#undef TRT_DIRECT_LAST
#undef TRT_DIRECT_FIRST
#undef TRT_DIRECT_STEP

/* What the long windows' variant takes (the same scratch and prepare), of this shape. */
int trt_conv2d_pooled_mve_accepts(const trt_conv_params *p) {
    return (p->in_c == 16 || p->in_c == 32) && p->kernel_h == 3 && p->kernel_w == 3 && p->stride_h == 1 &&
           p->stride_w == 1 && trt_conv2d_long_mve_accepts(p);
}

/* The output pixels computed, rows and columns: the pool's (fused), else every pixel in whole 2x2
 * blocks (a last odd row or column's extra pixels are computed into the spare bytes). */
static int32_t rows_of(const trt_conv_params *p) { return p->pooled_h ? 2 * p->pooled_h : (p->out_h + 1) & ~1; }
static int32_t cols_of(const trt_conv_params *p) { return p->pooled_h ? 2 * p->pooled_w : (p->out_w + 1) & ~1; }
/* The padded image: the windows of those pixels, whole. */
static int32_t pitch_of(const trt_conv_params *p) { return (cols_of(p) + 2) * p->in_c; }
static size_t padded_bytes(const trt_conv_params *p) { return (size_t)(rows_of(p) + 2) * (size_t)pitch_of(p); }

/* temp: the padded image, a block's sums (eight words a pair of channels), out_c spare bytes */
size_t trt_conv2d_pooled_mve_temp_bytes(const trt_conv_params *p) {
    return padded_bytes(p) + (size_t)p->out_c * 4 * sizeof(int32_t) + (((size_t)p->out_c + 15) & ~(size_t)15);
}

/* The padded image's rows: pad vectors, then the image row's pixels that lie in it, then pad vectors
 * (C a multiple of 16: a pixel is whole vectors). */
static void pad_image(const trt_conv_params *p, const int8_t *image, int8_t *padded) {
    const int32_t c = p->in_c, steps = pitch_of(p) >> 4, rows = rows_of(p) + 2;
    const int32_t right = p->pad_w + p->in_w < cols_of(p) + 2 ? p->pad_w + p->in_w : cols_of(p) + 2;
    const int8x16_t pad = vdupq_n_s8((int8_t)-p->input_offset);
    for (int32_t r = 0; r < rows; r++) {
        const int32_t iy = r - p->pad_h;
        int32_t n = 0, a = steps, b = steps;
        if ((uint32_t)iy < (uint32_t)p->in_h && right > p->pad_w) a = (p->pad_w * c) >> 4, b = (right * c) >> 4;
        for (; n < a; n++, padded += 16) trt_mve_store_words(padded, pad);
        for (const int8_t *src = image + (size_t)iy * p->in_w * c; n < b; n++, src += 16, padded += 16)
            trt_mve_store_words(padded, vldrbq_s8(src));
        for (; n < steps; n++, padded += 16) trt_mve_store_words(padded, pad);
    }
}

static void run_image(const trt_conv_params *p, const int8_t *image, int8_t *out, int8_t *temp) {
    const int32_t c = p->in_c, pitch = pitch_of(p), rows = rows_of(p), cols = cols_of(p), out_c = p->out_c;
    int32_t *acc = (int32_t *)(void *)(temp + padded_bytes(p));
    int8_t *spare = (int8_t *)(acc + (size_t)out_c * 4);
    void (*dots)(const int8_t *, const int8_t *, int32_t, int32_t *, int32_t) = c == 16 ? direct_dots_16 : direct_dots_32;
    trt_pooled_job job = {{acc, acc + 2, acc + 4, acc + 6}, out, p->folded_bias, p->multipliers, p->shifts, out_c / 4,
                          p->output_offset, p->activation_min, p->activation_max, {0, 1, 8, 9}, 16};
    pad_image(p, image, temp);
    for (int32_t y = 0; y < rows; y += 2) {
        for (int32_t x = 0; x < cols; x += 2) {
            dots(temp + (size_t)y * pitch + (size_t)x * c, p->weights, out_c / 2, acc, pitch);
            if (p->pooled_h) {
                trt_mve_finish_pooled(&job);
                job.out += out_c;
                continue;
            }
            /* unpooled: each pixel its own output, its four bases the same */
            for (int32_t k = 0; k < 4; k++) {
                const int32_t oy = y + (k >> 1), ox = x + (k & 1);
                trt_pooled_job one = job;
                one.base[0] = one.base[1] = one.base[2] = one.base[3] = acc + 2 * k;
                one.out = oy < p->out_h && ox < p->out_w ? out + ((size_t)oy * p->out_w + ox) * out_c : spare;
                trt_mve_finish_pooled(&one);
            }
        }
    }
}

void trt_conv2d_pooled_mve(const trt_conv_params *p, void *temp) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->in_c;
    const size_t out_image = p->pooled_h ? (size_t)p->pooled_h * p->pooled_w * p->out_c
                                         : (size_t)p->out_h * p->out_w * p->out_c;
    for (int32_t b = 0; b < p->batches; b++)
        run_image(p, p->input + (size_t)b * in_image, p->output + (size_t)b * out_image, temp);
}

#endif
