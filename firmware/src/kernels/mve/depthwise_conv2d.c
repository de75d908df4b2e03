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
 * requantized at once with per-lane multipliers and shifts; a channel count that is a
 * multiple of four has each output row in assembly (depthwise_row: loads, MACs and the
 * requantization ordered for the overlap of Helium instructions). Other depthwise shapes
 * run on kernels/c.
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

/* scratch (16-byte aligned): folded bias [blocks * 4] int32, tap vectors [blocks * 4][16] int8
 * (read as words: mve_load.h), gather offsets [16] */
size_t trt_depthwise_mve_scratch_bytes(const trt_conv_params *p) {
    const size_t channels = (size_t)channel_blocks(p) * 4;
    return channels * sizeof(int32_t) + channels * LANES + LANES;
}

void trt_depthwise_mve_prepare(trt_conv_params *p, void *scratch) {
    const int32_t channels = channel_blocks(p) * 4, taps = p->kernel_h * p->kernel_w;
    int32_t *folded = scratch;
    int8_t *packed = (int8_t *)(folded + channels);
    uint8_t *offsets = (uint8_t *)(packed + (size_t)channels * LANES);
    for (int32_t oc = 0; oc < channels; oc++) {
        uint32_t sum = 0;
        for (int32_t t = 0; t < LANES; t++) {
            int8_t w = oc < p->out_c && t < taps ? p->weights[(size_t)t * p->out_c + oc] : 0;
            packed[(size_t)oc * LANES + t] = w;
            sum += (uint32_t)(int32_t)w;
        }
        uint32_t bias = oc < p->out_c && p->bias ? (uint32_t)p->bias[oc] : 0;
        folded[oc] = trt_wrap32(sum * (uint32_t)p->input_offset + bias);
    }
    for (int32_t t = 0; t < LANES; t++)   /* unused lanes read the first tap, against zero weights */
        offsets[t] = t < taps ? (uint8_t)((t / p->kernel_w) * padded_width(p) + t % p->kernel_w) : 0;
    p->folded_bias = folded;
    p->packed_weights = packed;
}

static int has_padding(const trt_conv_params *p) { return p->pad_h > 0 || p->pad_w > 0; }

size_t trt_depthwise_mve_temp_bytes(const trt_conv_params *p) {
    return has_padding(p) ? (size_t)(p->in_h + 2 * p->pad_h) * (size_t)padded_width(p) : 0;
}

/* The layer's parameters, read once per call rather than once per pixel. */
typedef struct {
    const int8_t *taps;           /* packed weights, 16 bytes per channel */
    const int32_t *folded, *multipliers, *shifts;
    int32_t out_c, output_offset, act_min, act_max;
} layer;

static void depthwise_pixel(const layer *l, int8x16_t window, int8_t *out) {
    const int8_t *taps = l->taps;
    for (int32_t oc = 0; oc < l->out_c; oc += 4, taps += 4 * LANES) {
        const mve_pred16_t pred = vctp32q((uint32_t)(l->out_c - oc));
        int32x4_t v = vdupq_n_s32(vmladavq_s8(window, trt_mve_load_words(taps)));
        v = vsetq_lane_s32(vmladavq_s8(window, trt_mve_load_words(taps + LANES)), v, 1);
        v = vsetq_lane_s32(vmladavq_s8(window, trt_mve_load_words(taps + 2 * LANES)), v, 2);
        v = vsetq_lane_s32(vmladavq_s8(window, trt_mve_load_words(taps + 3 * LANES)), v, 3);
        v = vaddq_s32(v, vld1q_s32(l->folded + oc));
        v = trt_mve_output_per_lane(v, vldrwq_z_s32(l->multipliers + oc, pred), vldrwq_z_s32(l->shifts + oc, pred),
                                    l->output_offset, l->act_min, l->act_max);
        vstrbq_p_s32(out + oc, v, pred);
    }
}

/*
 * One output row of a layer whose channel count is a multiple of four, in assembly (the loop
 * over the row's pixels and, per pixel, over its channels four at a time), so that the
 * vector loads, the VMLADAV and the requantization's vector operations are ordered for the
 * Cortex-M55's overlap: a Helium instruction takes two cycles and overlaps the one before it
 * only when their pipes differ (load/store, MAC, the others).
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
 * requantization, whose seven dependent vector operations then follow one another. About 31
 * estimated cycles for four channels against some 44 in the compiler's order (it re-derives the
 * predicate per step and moves lanes one by one).
 *
 * Registers: r0 the job (kept on the stack), r0 r2 r10 r12 the four dot products (VMLADAV
 * writes an even register), r1 the window's first tap, r3 out, r4 taps, r5 folded bias, r6
 * multipliers, r7 shifts, r8 output offset, r9 groups of four channels, r11 bytes from one
 * pixel's window to the next, lr the loop; q0/q1 act_min/act_max, q2 the window, q3 the gather
 * offsets then a temporary, q4 q5 taps then multipliers and shifts, q6 the four sums, q7 bias.
 */
typedef struct {
    const int8_t *taps;                 /* 0: packed weights, 16 bytes per channel */
    const int32_t *folded, *multipliers, *shifts;
    uint8_t offsets[LANES];             /* 16: the gather offsets (word-aligned) */
    const int8_t *x;                    /* 32: the row's first window, tap (0, 0) */
    int32_t step, pixels;               /* 36: bytes from one window to the next; 40: the row's pixels */
    int8_t *out;                        /* 44 */
    int32_t groups, output_offset, act_min, act_max;   /* 48 .. 60 */
} row_job;

static __attribute__((naked, noinline)) void depthwise_row(const row_job *job) {
    (void)job;
    __asm__ volatile(
        "push     {r4-r11, lr}\n\t"
        "vpush    {d8-d15}\n\t"
        "sub      sp, sp, #8\n\t"               /* [0] the job, [4] pixels left */
        "str      r0, [sp]\n\t"
        "ldrd     r1, r11, [r0, #32]\n\t"
        "ldrd     r2, r3, [r0, #40]\n\t"
        "str      r2, [sp, #4]\n\t"
        "ldrd     r9, r8, [r0, #48]\n\t"
        "ldrd     r2, r12, [r0, #56]\n\t"
        "vdup.32  q0, r2\n\t"
        "vdup.32  q1, r12\n\t"
        "1:\n\t"                                /* a pixel */
        "ldr      r0, [sp]\n\t"
        "ldm      r0, {r4-r7}\n\t"
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
        "vldrw.u32    q7, [r5], #16\n\t"
        "vmladav.s8   r12, q2, q5\n\t"
        "vmov     q6[2], q6[0], r0, r10\n\t"
        "vldrw.u32    q4, [r6], #16\n\t"
        "vmov     q6[3], q6[1], r2, r12\n\t"
        "vldrw.u32    q5, [r7], #16\n\t"
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

void trt_depthwise_conv2d_mve(const trt_conv_params *p, void *temp) {
    const int32_t pitch = padded_width(p);
    const uint8x16_t offsets = vldrbq_u8((const uint8_t *)(p->packed_weights + (size_t)channel_blocks(p) * 4 * LANES));
    const layer l = {p->packed_weights, p->folded_bias, p->multipliers, p->shifts, p->out_c, p->output_offset,
                     p->activation_min, p->activation_max};
    /* channels in whole groups of four: each row in assembly (depthwise_row) */
    const int whole_groups = p->out_c > 0 && p->out_c % 4 == 0 && p->out_w > 0;
    row_job job = {p->packed_weights, p->folded_bias, p->multipliers, p->shifts, {0}, NULL, p->stride_w, p->out_w,
                   NULL, p->out_c / 4, p->output_offset, p->activation_min, p->activation_max};
    vstrbq_u8(job.offsets, offsets);
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * p->in_h * p->in_w;
        if (has_padding(p)) {
            trt_mve_pad_image(image, temp, p->in_h, p->in_w, 1, p->pad_h, p->pad_w, p->input_offset);
            image = temp;
        }
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int8_t *row = image + (size_t)oy * p->stride_h * pitch;
            if (whole_groups) {
                job.x = row;
                job.out = out;
                depthwise_row(&job);
                out += (size_t)p->out_w * p->out_c;
                continue;
            }
            for (int32_t ox = 0; ox < p->out_w; ox++, out += p->out_c)
                depthwise_pixel(&l, vldrbq_gather_offset_s8(row + (size_t)ox * p->stride_w, offsets), out);
        }
    }
}

#endif
