/*
 * cortex_m::quantized_depthwise_conv2d.out with Helium, for the one-input-channel case (the
 * first layer of an image model: in_c = 1, depth_multiplier = out_c), weights 1HWO.
 *
 * Arithmetic (operators.quantized_depthwise_conv2d_impl, arith.h):
 *   acc[oc] = bias[oc] + sum over the window of (x + input_offset) * w[ky, kx, oc]   (int32)
 *           = sum(x * w) + folded_bias[oc]
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * Padding as in conv2d.c: a padded copy of the image, so every window is whole.
 *
 * A window of at most 16 taps is one vector: one byte gather per output pixel (offsets of
 * the taps, prepared at load), then each output channel is one VMLADAV against that
 * channel's taps, packed at load into a zero-filled 16-byte vector. Four channels are
 * requantized at once with per-lane multipliers and shifts. The load packs one record per
 * group of four channels (their four tap vectors, folded biases, multipliers and shifts: 112
 * bytes read through one post-incremented pointer); a channel count that is a multiple of four
 * has each output row in assembly (depthwise_row: loads, MACs and the requantization ordered for
 * the overlap of Helium instructions).
 *
 * A 2x2 max pool at stride 2 after the layer, which alone reads its output, is fused into it at
 * load when exact (trt_depthwise_mve_fuse_pool: multipliers >= 0, the whole int8 range): per
 * pooled pixel the four windows' sums of four channels are pooled lane-wise (VMAX.S32) before one
 * requantization (depthwise_pooled_row), the pooled values written at the start of the layer's
 * own output, which the pool then copies into place. Other depthwise shapes run on kernels/c.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"
#include "mve_load.h"
#include "mve_padding.h"
#include "mve_requantize.h"

#define LANES 16

static int32_t padded_width(const trt_conv_params *p) { return p->in_w + 2 * p->pad_w; }
static int32_t channel_blocks(const trt_conv_params *p) { return (p->out_c + 3) / 4; }

int trt_depthwise_mve_accepts(const trt_conv_params *p) {
    if (p->in_c != 1 || p->dilation_h != 1 || p->dilation_w != 1 || p->kernel_h * p->kernel_w > LANES ||
        !trt_mve_pad_value_fits(p->input_offset))
        return 0;
    if ((int64_t)(p->kernel_h - 1) * padded_width(p) + p->kernel_w - 1 > UINT8_MAX) return 0;   /* 8-bit offsets */
    for (int32_t oc = 0; oc < p->out_c; oc++)
        if (!trt_mve_requant_is_vector(p->multipliers[oc], p->shifts[oc])) return 0;
    return 1;
}

/* scratch (16-byte aligned): per group of four channels a record of RECORD bytes (their four tap
 * vectors, zero-filled; folded biases; multipliers; shifts; a missing channel's all zero), then
 * the gather offsets [16] */
#define RECORD (4 * LANES + 3 * 16)
size_t trt_depthwise_mve_scratch_bytes(const trt_conv_params *p) {
    return (size_t)channel_blocks(p) * RECORD + LANES;
}

void trt_depthwise_mve_prepare(trt_conv_params *p, void *scratch) {
    const int32_t channels = channel_blocks(p) * 4, taps = p->kernel_h * p->kernel_w;
    int8_t *records = scratch;
    uint8_t *offsets = (uint8_t *)(records + (size_t)channel_blocks(p) * RECORD);
    for (int32_t oc = 0; oc < channels; oc++) {
        int8_t *record = records + (size_t)(oc / 4) * RECORD;
        int32_t *words = (int32_t *)(void *)(record + 4 * LANES) + oc % 4;
        uint32_t sum = 0;
        for (int32_t t = 0; t < LANES; t++) {
            int8_t w = oc < p->out_c && t < taps ? p->weights[(size_t)t * p->out_c + oc] : 0;
            record[(oc % 4) * LANES + t] = w;
            sum += (uint32_t)(int32_t)w;
        }
        uint32_t bias = oc < p->out_c && p->bias ? (uint32_t)p->bias[oc] : 0;
        words[0] = trt_wrap32(sum * (uint32_t)p->input_offset + bias);
        words[4] = oc < p->out_c ? p->multipliers[oc] : 0;
        words[8] = oc < p->out_c ? p->shifts[oc] : 0;
    }
    for (int32_t t = 0; t < LANES; t++)   /* unused lanes read the first tap, against zero weights */
        offsets[t] = t < taps ? (uint8_t)((t / p->kernel_w) * padded_width(p) + t % p->kernel_w) : 0;
    p->packed_weights = records;
}

static int has_padding(const trt_conv_params *p) { return p->pad_h > 0 || p->pad_w > 0; }

size_t trt_depthwise_mve_temp_bytes(const trt_conv_params *p) {
    return has_padding(p) ? (size_t)(p->in_h + 2 * p->pad_h) * (size_t)padded_width(p) : 0;
}

/* One output pixel from its window, any channel count: per record, four VMLADAV and the
 * requantization of the four channels, the missing channels of a last group not stored. */
static void depthwise_pixel(const trt_conv_params *p, int8x16_t window, int8_t *out) {
    const int8_t *record = p->packed_weights;
    for (int32_t oc = 0; oc < p->out_c; oc += 4, record += RECORD) {
        const mve_pred16_t pred = vctp32q((uint32_t)(p->out_c - oc));
        const int32_t *words = (const int32_t *)(const void *)(record + 4 * LANES);
        int32x4_t v = vdupq_n_s32(vmladavq_s8(window, trt_mve_load_words(record)));
        v = vsetq_lane_s32(vmladavq_s8(window, trt_mve_load_words(record + LANES)), v, 1);
        v = vsetq_lane_s32(vmladavq_s8(window, trt_mve_load_words(record + 2 * LANES)), v, 2);
        v = vsetq_lane_s32(vmladavq_s8(window, trt_mve_load_words(record + 3 * LANES)), v, 3);
        v = vaddq_s32(v, vldrwq_s32(words));
        v = trt_mve_output_per_lane(v, vldrwq_s32(words + 4), vldrwq_s32(words + 8), p->output_offset,
                                    p->activation_min, p->activation_max);
        vstrbq_p_s32(out + oc, v, pred);
    }
}

/*
 * One output row of a layer whose channel count is a multiple of four, in assembly (the loop
 * over the row's pixels and, per pixel, over its records), so that the vector loads, the
 * VMLADAV and the requantization's vector operations are ordered for the Cortex-M55's overlap:
 * a Helium instruction takes two cycles and overlaps the one before it only when their pipes
 * differ (load/store, MAC, the others).
 *
 * Arithmetic: as depthwise_pixel (VMLADAV of the window with each channel's 16 taps, the
 * folded bias, trt_mve_output_per_lane's steps in its order: VQRDMULH, the step down of
 * negative lanes, VRSHL, the offset, the clamp; VSTRB.32 narrows as vstrbq_s32 does): the
 * same instructions on the same values, so the results are bit for bit those of the C.
 *
 * Per four channels: the four tap vectors' loads alternate with the four VMLADAV (each MAC
 * reads a vector loaded two instructions before it), the folded bias, multipliers and shifts
 * are loaded between the lane moves (VMOV of two lanes from two registers: VMOV Qd[2], Qd[0],
 * Rt, Rt2 puts Rt in lane 0 and Rt2 in lane 2, as the emulator runs it) and the
 * requantization, whose seven dependent vector operations then follow one another.
 *
 * Registers: r0 r2 r10 r12 the four dot products (VMLADAV writes an even register), r1 the
 * window's first tap, r3 out, r4 the record, r5 the first record, r8 output offset, r9 groups of
 * four channels, r11 bytes from one pixel's window to the next, lr the loop; q0/q1
 * act_min/act_max, q2 the window, q3 the gather offsets then a temporary, q4 q5 taps then
 * multipliers and shifts, q6 the four sums, q7 bias. The row's pixels left on the stack.
 *
 * depthwise_pooled_row: one row of a fused 2x2 pool's outputs. Per pooled pixel the four
 * windows (top-left, right, below, below right: `step` and `down` bytes apart) are gathered
 * once onto the stack; per record the four tap vectors (q4-q7) meet each window in four
 * VMLADAV, the four sums go into lanes (two VMOV) and the lane-wise maximum over the windows
 * (VMAX.S32) is requantized as above (the same steps on the maximum: with multipliers >= 0 the
 * requantization is non-decreasing, so this is the maximum of the four requantized outputs);
 * the clamp to the whole int8 range as two saturating narrowings (VQMOVNB.S32, VQMOVNB.S16:
 * the low byte of each lane is the value clamped to [-128, 127]). Registers as above, r6 twice
 * the pixel step, r7 the step, r11 `down`; q3 the gather offsets, q0 a window, q1 a lane vector
 * then a temporary, q2 the maximum.
 */
typedef struct {
    const int8_t *records;              /* 0 */
    uint8_t offsets_pad[12];            /* 4: (unused) */
    uint8_t offsets[LANES];             /* 16: the gather offsets (word-aligned) */
    const int8_t *x;                    /* 32: the row's first window, tap (0, 0) */
    int32_t step, pixels;               /* 36: bytes from one window to the next; 40: the row's pixels */
    int8_t *out;                        /* 44 */
    int32_t groups, output_offset, act_min, act_max;   /* 48 .. 60 */
    int32_t down;                       /* 64: bytes from a window to the one below (pooled rows) */
} row_job;

static __attribute__((naked, noinline)) void depthwise_row(const row_job *job) {
    (void)job;
    __asm__ volatile(
        "push     {r4-r11, lr}\n\t"
        "vpush    {d8-d15}\n\t"
        "sub      sp, sp, #8\n\t"               /* [0] the job, [4] pixels left */
        "str      r0, [sp]\n\t"
        "ldr      r5, [r0]\n\t"
        "ldrd     r1, r11, [r0, #32]\n\t"
        "ldrd     r2, r3, [r0, #40]\n\t"
        "str      r2, [sp, #4]\n\t"
        "ldrd     r9, r8, [r0, #48]\n\t"
        "ldrd     r2, r12, [r0, #56]\n\t"
        "vdup.32  q0, r2\n\t"
        "vdup.32  q1, r12\n\t"
        "1:\n\t"                                /* a pixel */
        "ldr      r0, [sp]\n\t"
        "mov      r4, r5\n\t"
        "vldrw.u32    q3, [r0, #16]\n\t"
        "vldrb.u8     q2, [r1, q3]\n\t"
        "add      r1, r1, r11\n\t"
        "dls      lr, r9\n\t"
        "2:\n\t"                                /* four channels */
        "vldrw.u32    q4, [r4], #16\n\t"
        "vldrw.u32    q5, [r4], #16\n\t"
        "vmladav.s8   r0, q2, q4\n\t"
        "vldrw.u32    q4, [r4], #16\n\t"
        "vmladav.s8   r2, q2, q5\n\t"
        "vldrw.u32    q5, [r4], #16\n\t"
        "vmladav.s8   r10, q2, q4\n\t"
        "vldrw.u32    q7, [r4], #16\n\t"
        "vmladav.s8   r12, q2, q5\n\t"
        "vmov     q6[2], q6[0], r0, r10\n\t"
        "vldrw.u32    q4, [r4], #16\n\t"
        "vmov     q6[3], q6[1], r2, r12\n\t"
        "vldrw.u32    q5, [r4], #16\n\t"
        "vadd.i32     q6, q6, q7\n\t"
        "vqrdmulh.s32 q6, q6, q4\n\t"
        "vand     q3, q6, q5\n\t"
        "vshr.s32     q3, q3, #31\n\t"
        "vqadd.s32    q6, q6, q3\n\t"
        "vrshl.s32    q6, q6, q5\n\t"
        "vadd.i32     q6, q6, r8\n\t"
        "vmax.s32     q6, q6, q0\n\t"
        "vmin.s32     q6, q6, q1\n\t"
        "vstrb.32     q6, [r3], #4\n\t"
        "le       lr, 2b\n\t"
        "ldr      r0, [sp, #4]\n\t"
        "subs     r0, r0, #1\n\t"
        "str      r0, [sp, #4]\n\t"
        "bne      1b\n\t"
        "add      sp, sp, #8\n\t"
        "vpop     {d8-d15}\n\t"
        "pop      {r4-r11, pc}\n\t");
}

/* four sums of the window in q0 against the taps q4-q7, into the lanes of qd */
#define TRT_WINDOW_SUMS(qd)                             \
    "vmladav.s8   r0, q0, q4\n\t"                      \
    "vmladav.s8   r2, q0, q5\n\t"                      \
    "vmladav.s8   r10, q0, q6\n\t"                     \
    "vmladav.s8   r12, q0, q7\n\t"                     \
    "vmov     " qd "[2], " qd "[0], r0, r10\n\t"       \
    "vmov     " qd "[3], " qd "[1], r2, r12\n\t"

static __attribute__((naked, noinline)) void depthwise_pooled_row(const row_job *job) {
    (void)job;
    __asm__ volatile(
        "push     {r4-r11, lr}\n\t"
        "vpush    {d8-d15}\n\t"
        "sub      sp, sp, #72\n\t"              /* [0] the job, [4] pixels left, [8..71] the four windows */
        "str      r0, [sp]\n\t"
        "ldr      r5, [r0]\n\t"
        "vldrw.u32    q3, [r0, #16]\n\t"
        "ldrd     r1, r7, [r0, #32]\n\t"
        "ldrd     r2, r3, [r0, #40]\n\t"
        "str      r2, [sp, #4]\n\t"
        "ldrd     r9, r8, [r0, #48]\n\t"
        "ldr      r11, [r0, #64]\n\t"
        "add      r6, r7, r7\n\t"
        "1:\n\t"                                /* a pooled pixel: its four windows */
        "add      r0, r1, r7\n\t"
        "add      r2, r1, r11\n\t"
        "add      r10, r2, r7\n\t"
        "vldrb.u8     q0, [r1, q3]\n\t"
        "vldrb.u8     q1, [r0, q3]\n\t"
        "vstrw.32     q0, [sp, #8]\n\t"
        "vldrb.u8     q0, [r2, q3]\n\t"
        "vstrw.32     q1, [sp, #24]\n\t"
        "vldrb.u8     q1, [r10, q3]\n\t"
        "vstrw.32     q0, [sp, #40]\n\t"
        "vstrw.32     q1, [sp, #56]\n\t"
        "add      r1, r1, r6\n\t"
        "mov      r4, r5\n\t"
        "dls      lr, r9\n\t"
        "2:\n\t"                                /* four channels */
        "vldrw.u32    q4, [r4], #16\n\t"
        "vldrw.u32    q5, [r4], #16\n\t"
        "vldrw.u32    q0, [sp, #8]\n\t"
        "vldrw.u32    q6, [r4], #16\n\t"
        "vldrw.u32    q7, [r4], #16\n\t"
        TRT_WINDOW_SUMS("q2")
        "vldrw.u32    q0, [sp, #24]\n\t"
        TRT_WINDOW_SUMS("q1")
        "vmax.s32     q2, q2, q1\n\t"
        "vldrw.u32    q0, [sp, #40]\n\t"
        TRT_WINDOW_SUMS("q1")
        "vmax.s32     q2, q2, q1\n\t"
        "vldrw.u32    q0, [sp, #56]\n\t"
        TRT_WINDOW_SUMS("q1")
        "vldrw.u32    q4, [r4], #16\n\t"        /* folded bias */
        "vmax.s32     q2, q2, q1\n\t"
        "vldrw.u32    q5, [r4], #16\n\t"        /* multipliers */
        "vadd.i32     q2, q2, q4\n\t"
        "vldrw.u32    q6, [r4], #16\n\t"        /* shifts */
        "vqrdmulh.s32 q2, q2, q5\n\t"
        "vand     q1, q2, q6\n\t"
        "vshr.s32     q1, q1, #31\n\t"
        "vqadd.s32    q2, q2, q1\n\t"
        "vrshl.s32    q2, q2, q6\n\t"
        "vadd.i32     q2, q2, r8\n\t"
        "vqmovnb.s32  q2, q2\n\t"
        "vqmovnb.s16  q2, q2\n\t"
        "vstrb.32     q2, [r3], #4\n\t"
        "le       lr, 2b\n\t"
        "ldr      r0, [sp, #4]\n\t"
        "subs     r0, r0, #1\n\t"
        "str      r0, [sp, #4]\n\t"
        "bne      1b\n\t"
        "add      sp, sp, #72\n\t"
        "vpop     {d8-d15}\n\t"
        "pop      {r4-r11, pc}\n\t");
}
#undef TRT_WINDOW_SUMS

/* The pool after the layer, fused when exact (trt_mve_fuse_pool, conv2d.c: multipliers >= 0, no
 * sum plus bias beyond int32) and when the pooled loop's clamp by saturation is the layer's: the
 * whole int8 range. */
int trt_depthwise_mve_fuse_pool(trt_conv_params *p, trt_max_pool_params *pool) {
    return p->activation_min == -128 && p->activation_max == 127 && trt_mve_fuse_pool(p, pool, LANES * 255 * 128);
}

void trt_depthwise_conv2d_mve(const trt_conv_params *p, void *temp) {
    const int32_t pitch = padded_width(p);
    const uint8x16_t offsets = vldrbq_u8((const uint8_t *)(p->packed_weights + (size_t)channel_blocks(p) * RECORD));
    /* channels in whole groups of four: each row in assembly (depthwise_row) */
    const int whole_groups = p->out_c > 0 && p->out_c % 4 == 0 && p->out_w > 0;
    const int pooled = p->pooled_h > 0;
    row_job job = {p->packed_weights, {0}, {0}, NULL, p->stride_w, pooled ? p->pooled_w : p->out_w, NULL,
                   p->out_c / 4, p->output_offset, p->activation_min, p->activation_max, p->stride_h * pitch};
    vstrbq_u8(job.offsets, offsets);
    const int32_t rows = pooled ? p->pooled_h : p->out_h, row_step = (pooled ? 2 : 1) * p->stride_h * pitch;
    const size_t out_row = (size_t)job.pixels * p->out_c;
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * p->in_h * p->in_w;
        if (has_padding(p)) {
            trt_mve_pad_image(image, temp, p->in_h, p->in_w, 1, p->pad_h, p->pad_w, p->input_offset);
            image = temp;
        }
        int8_t *out = p->output + (size_t)b * rows * out_row;
        for (int32_t r = 0; r < rows; r++, out += out_row) {
            const int8_t *row = image + (size_t)r * row_step;
            if (pooled) {
                job.x = row;
                job.out = out;
                depthwise_pooled_row(&job);
            } else if (whole_groups) {
                job.x = row;
                job.out = out;
                depthwise_row(&job);
            } else {
                for (int32_t ox = 0; ox < p->out_w; ox++)
                    depthwise_pixel(p, vldrbq_gather_offset_s8(row + (size_t)ox * p->stride_w, offsets), out + (size_t)ox * p->out_c);
            }
        }
    }
}

#endif
