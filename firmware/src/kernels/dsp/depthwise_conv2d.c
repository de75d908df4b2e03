/*
 * cortex_m::quantized_depthwise_conv2d.out with the DSP extension, for the one-input-channel
 * case (the first layer of an image model: in_c = 1, depth_multiplier = out_c), weights 1HWO.
 *
 * Arithmetic (operators.quantized_depthwise_conv2d_impl, arith.h):
 *   acc[oc] = sum over the window of x * w[ky, kx, oc] + folded_bias[oc]     (int32)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * with a padded copy of the image (kernels/padding.h) so every window is whole and
 * folded_bias = bias + input_offset * sum(w) is exact for every pixel.
 *
 * The window's taps are taken two at a time: per pixel, each pair of inputs is packed once
 * into one word of two halfwords; at load, each output channel's weights were packed the
 * same way, so a channel is one SMLAD per two taps. Requantization: dsp_requantize.h when
 * every channel's accumulator stays below 2^30 (checked at load; its constants prepared per
 * channel), arith.h's otherwise. Other depthwise shapes run on depthwise_channels.c.
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../arith.h"
#include "../kernels.h"
#include "../padding.h"
#include "depthwise_pack.h"
#include "dsp_intrinsics.h"
#include "dsp_requantize.h"
#include "kernels_dsp.h"

/* Windows of up to 10 taps (3x3 and smaller) run a fully unrolled loop of this many pairs;
 * the pairs beyond the window's hold zero weights. */
#define SHORT_PAIRS 5

static int32_t taps(const trt_conv_params *p) { return p->kernel_h * p->kernel_w; }
static int32_t tap_pairs(const trt_conv_params *p) {
    const int32_t pairs = (taps(p) + 1) / 2;
    return pairs <= SHORT_PAIRS ? SHORT_PAIRS : pairs;
}
static int32_t pitch(const trt_conv_params *p) { return p->in_w + 2 * p->pad_w; }
static int has_padding(const trt_conv_params *p) { return p->pad_h > 0 || p->pad_w > 0; }

int trt_depthwise_dsp_accepts(const trt_conv_params *p) {
    return p->in_c == 1 && p->dilation_h == 1 && p->dilation_w == 1 && trt_pad_value_fits(p->input_offset);
}

/* scratch: depthwise_pack.h's, SHORT_PAIRS pairs or more */
size_t trt_depthwise_dsp_scratch_bytes(const trt_conv_params *p) { return trt_dsp_one_channel_scratch_bytes(p, tap_pairs(p)); }

static const trt_dsp_requant *requant_constants(const trt_conv_params *p) {
    const uint32_t *packed = (const uint32_t *)(const void *)p->packed_weights;
    return (const trt_dsp_requant *)(const void *)(packed + (size_t)p->out_c * tap_pairs(p) + 2 * (size_t)tap_pairs(p));
}

void trt_depthwise_dsp_prepare(trt_conv_params *p, void *scratch) {
    trt_dsp_one_channel_pack(p, scratch, tap_pairs(p), pitch(p));
}

size_t trt_depthwise_dsp_temp_bytes(const trt_conv_params *p) {
    return has_padding(p) ? (size_t)(p->in_h + 2 * p->pad_h) * (size_t)pitch(p) : 0;
}

static void depthwise_pixel(const trt_conv_params *p, const int8_t *window, uint32_t *inputs, int8_t *out) {
    const int32_t pairs = tap_pairs(p);
    const uint32_t *packed = (const uint32_t *)(const void *)p->packed_weights;
    const int32_t *offsets = (const int32_t *)(packed + (size_t)p->out_c * pairs);
    for (int32_t j = 0; j < pairs; j++) inputs[j] = trt_dsp_halfwords(window[offsets[2 * j]], window[offsets[2 * j + 1]]);
    const int32_t offset = p->output_offset, lo = p->activation_min, hi = p->activation_max;
    if (p->small_accumulators && pairs == SHORT_PAIRS) {   /* the first layer of an image model */
        const trt_dsp_requant *r = requant_constants(p);
        const int32_t *folded = p->folded_bias;
        const uint32_t x0 = inputs[0], x1 = inputs[1], x2 = inputs[2], x3 = inputs[3], x4 = inputs[4];
        for (int32_t oc = 0; oc < p->out_c; oc++, packed += SHORT_PAIRS, r++) {
            int32_t acc = trt_smlad(x0, packed[0], folded[oc]);
            acc = trt_smlad(x1, packed[1], acc);
            acc = trt_smlad(x2, packed[2], acc);
            acc = trt_smlad(x3, packed[3], acc);
            acc = trt_smlad(x4, packed[4], acc);
            out[oc] = trt_dsp_output_s8(acc, r, offset, lo, hi);
        }
        return;
    }
    if (p->small_accumulators) {
        const trt_dsp_requant *r = requant_constants(p);
        for (int32_t oc = 0; oc < p->out_c; oc++, packed += pairs, r++) {
            int32_t acc = p->folded_bias[oc];
            for (int32_t j = 0; j < pairs; j++) acc = trt_smlad(inputs[j], packed[j], acc);
            out[oc] = trt_dsp_output_s8(acc, r, offset, lo, hi);
        }
        return;
    }
    for (int32_t oc = 0; oc < p->out_c; oc++, packed += pairs) {
        int32_t acc = 0;
        if (pairs == SHORT_PAIRS) {
            acc = trt_smlad(inputs[0], packed[0], acc);
            acc = trt_smlad(inputs[1], packed[1], acc);
            acc = trt_smlad(inputs[2], packed[2], acc);
            acc = trt_smlad(inputs[3], packed[3], acc);
            acc = trt_smlad(inputs[4], packed[4], acc);
        } else {
            for (int32_t j = 0; j < pairs; j++) acc = trt_smlad(inputs[j], packed[j], acc);
        }
        out[oc] = trt_output_s8(trt_add_wrap(acc, p->folded_bias[oc]), p->multipliers[oc], p->shifts[oc], offset, lo,
                                hi);
    }
}

void trt_depthwise_conv2d_dsp(const trt_conv_params *p, void *temp) {
    uint32_t inputs[(TRT_MAX_DEPTHWISE_TAPS + 1) / 2 > SHORT_PAIRS ? (TRT_MAX_DEPTHWISE_TAPS + 1) / 2 : SHORT_PAIRS];
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * p->in_h * p->in_w;
        if (has_padding(p)) {
            trt_pad_image(image, temp, p->in_h, p->in_w, 1, p->pad_h, p->pad_w, p->input_offset);
            image = temp;
        }
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int8_t *row = image + (size_t)oy * p->stride_h * pitch(p);
            for (int32_t ox = 0; ox < p->out_w; ox++, out += p->out_c)
                depthwise_pixel(p, row + (size_t)ox * p->stride_w, inputs, out);
        }
    }
}

#endif
