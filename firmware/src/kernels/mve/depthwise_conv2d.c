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
 * requantized at once with per-lane multipliers and shifts. Other depthwise shapes run on
 * kernels/c.
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

void trt_depthwise_conv2d_mve(const trt_conv_params *p, void *temp) {
    const int32_t pitch = padded_width(p);
    const uint8x16_t offsets = vldrbq_u8((const uint8_t *)(p->packed_weights + (size_t)channel_blocks(p) * 4 * LANES));
    const layer l = {p->packed_weights, p->folded_bias, p->multipliers, p->shifts, p->out_c, p->output_offset,
                     p->activation_min, p->activation_max};
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * p->in_h * p->in_w;
        if (has_padding(p)) {
            trt_mve_pad_image(image, temp, p->in_h, p->in_w, 1, p->pad_h, p->pad_w, p->input_offset);
            image = temp;
        }
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int8_t *row = image + (size_t)oy * p->stride_h * pitch;
            for (int32_t ox = 0; ox < p->out_w; ox++, out += p->out_c)
                depthwise_pixel(&l, vldrbq_gather_offset_s8(row + (size_t)ox * p->stride_w, offsets), out);
        }
    }
}

#endif
