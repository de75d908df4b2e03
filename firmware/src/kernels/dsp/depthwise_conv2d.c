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
 * same way, so a channel is one SMLAD per two taps. Other depthwise shapes run on
 * depthwise_channels.c.
 *
 * Channel records (the usual first layer: a window of at most 10 taps, every accumulator below
 * 2^30, every shift < 0, multipliers >= 0, the whole int8 range): at load each channel becomes
 * one record of nine words, [2 w pairs x 5][2 folded][multiplier][round][right], read by two
 * LDM, and an output takes
 *   a = 2 acc                                   (the doubled weights' and bias's SMLAD chain: exact, |acc| < 2^30)
 *   t = SMMLAR(a, m, round) = round + v,        v = (acc m + 2^30) >> 31, the reference's high multiply
 *   t = t + (a >> 31)                           (-1 when acc < 0)
 *   out = SSAT8(t >> right)
 * with round = 2^(right-1) + output_offset 2^right. That is arith.h's rounding shift of v by
 * right, half away from zero, plus the output offset: floor((v + 2^(right-1) - [v < 0]) / 2^right).
 * With m >= 0, acc < 0 gives v <= 0 and acc >= 0 gives v >= 0; at v = 0 subtracting 1 or not
 * gives the same floor (2^(right-1) - 1 < 2^right), so the sign of acc stands for that of v. The
 * load checks that |round| + 2^30 stays below 2^31. Any other layer takes dsp_requantize.h's
 * short form when its accumulators stay below 2^30, arith.h's general requantization otherwise.
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

/* small_accumulators of a layer prepared as channel records */
#define CHANNEL_RECORDS 2
#define RECORD_WORDS (SHORT_PAIRS + 4)

/* scratch: depthwise_pack.h's, SHORT_PAIRS pairs or more; channel records take less
 * (tap offsets, then RECORD_WORDS words a channel against depthwise_pack.h's ten) */
size_t trt_depthwise_dsp_scratch_bytes(const trt_conv_params *p) { return trt_dsp_one_channel_scratch_bytes(p, tap_pairs(p)); }

static const trt_dsp_requant *requant_constants(const trt_conv_params *p) {
    const uint32_t *packed = (const uint32_t *)(const void *)p->packed_weights;
    return (const trt_dsp_requant *)(const void *)(packed + (size_t)p->out_c * tap_pairs(p) + 2 * (size_t)tap_pairs(p));
}

/* A channel's folded bias, bias + input_offset * sum(w) (mod 2^32), and sum |w|. */
/* (load-time code: kept out of line and small) */
static __attribute__((noinline)) int32_t channel_folded(const trt_conv_params *p, int32_t oc, int64_t *abs_sum) {
    const int32_t n = taps(p);
    uint32_t sum = 0;
    for (int32_t t = 0; t < n; t++) sum += (uint32_t)(int32_t)p->weights[(size_t)t * p->out_c + oc];
    *abs_sum = trt_abs_sum_s8(p->weights + oc, n, p->out_c);
    return trt_wrap32(sum * (uint32_t)p->input_offset + (uint32_t)(p->bias ? p->bias[oc] : 0));
}

/* Whether the layer takes the channel records (see the top of the file). */
static __attribute__((noinline)) int records_fit(const trt_conv_params *p) {
    if (p->out_c < 1 || tap_pairs(p) != SHORT_PAIRS || p->activation_min != -128 || p->activation_max != 127) return 0;
    const int64_t offset_abs = p->output_offset < 0 ? -(int64_t)p->output_offset : p->output_offset;
    for (int32_t oc = 0; oc < p->out_c; oc++) {
        const int32_t shift = p->shifts[oc];
        int64_t abs_sum;
        const int32_t folded = channel_folded(p, oc, &abs_sum);
        if (shift >= 0 || shift < -29 || p->multipliers[oc] < 0 ||
            !trt_dsp_accumulator_fits(abs_sum, 128, folded, shift) ||
            (offset_abs + 1) << -shift >= TRT_DSP_ACC_LIMIT - 1)
            return 0;
    }
    return 1;
}

/* scratch: tap offsets [2 SHORT_PAIRS], then one record a channel */
static __attribute__((noinline)) void records_pack(trt_conv_params *p, void *scratch) {
    const int32_t n = taps(p), width = p->kernel_w, rows = pitch(p);
    int32_t *offsets = scratch;
    uint32_t *record = (uint32_t *)(offsets + 2 * SHORT_PAIRS);
    for (int32_t t = 0; t < 2 * SHORT_PAIRS; t++) offsets[t] = t < n ? (t / width) * rows + t % width : 0;
    p->packed_weights = scratch;
    p->folded_bias = NULL;
    for (int32_t oc = 0; oc < p->out_c; oc++, record += RECORD_WORDS) {
        for (int32_t j = 0; j < SHORT_PAIRS; j++) {
            const int32_t lo = 2 * j < n ? p->weights[(size_t)(2 * j) * p->out_c + oc] : 0;
            const int32_t hi = 2 * j + 1 < n ? p->weights[(size_t)(2 * j + 1) * p->out_c + oc] : 0;
            record[j] = trt_dsp_halfwords(2 * lo, 2 * hi);   /* |2 w| <= 256: a halfword */
        }
        int64_t abs_sum;
        const int32_t folded = channel_folded(p, oc, &abs_sum), right = -p->shifts[oc];
        record[SHORT_PAIRS] = (uint32_t)folded * 2u;   /* |folded| < 2^30 (records_fit) */
        record[SHORT_PAIRS + 1] = (uint32_t)p->multipliers[oc];
        record[SHORT_PAIRS + 2] = (1u << (right - 1)) + (uint32_t)p->output_offset * (1u << right);
        record[SHORT_PAIRS + 3] = (uint32_t)right;
    }
    p->small_accumulators = CHANNEL_RECORDS;
}

void trt_depthwise_dsp_prepare(trt_conv_params *p, void *scratch) {
    if (records_fit(p)) records_pack(p, scratch);
    else trt_dsp_one_channel_pack(p, scratch, tap_pairs(p), pitch(p));
}

size_t trt_depthwise_dsp_temp_bytes(const trt_conv_params *p) {
    return has_padding(p) ? (size_t)(p->in_h + 2 * p->pad_h) * (size_t)pitch(p) : 0;
}

#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
/* One pixel's channels from their records (the loop at the top of the file): r0 the records,
 * r1 their end, r2 the outputs, r3 the pixel's five input pairs. Registers: r5-r9 the pairs,
 * r10 the record, r11 the output, r12 the end; a record's first six words in r0-r4 and lr (the
 * accumulator starts at the doubled folded bias), its last three in r0-r2. */
static __attribute__((naked, noinline)) void record_channels(const uint32_t *records, const uint32_t *end, int8_t *out,
                                                             const uint32_t inputs[SHORT_PAIRS]) {
    (void)records, (void)end, (void)out, (void)inputs;
    __asm__ volatile(
        "push    {r4-r11, lr}\n\t"
        "ldm     r3, {r5-r9}\n\t"
        "mov     r10, r0\n\t"
        "mov     r11, r2\n\t"
        "mov     r12, r1\n\t"
        "1:\n\t"
        "ldm     r10!, {r0-r4, lr}\n\t"
        "smlad   lr, r5, r0, lr\n\t"
        "smlad   lr, r6, r1, lr\n\t"
        "smlad   lr, r7, r2, lr\n\t"
        "smlad   lr, r8, r3, lr\n\t"
        "smlad   lr, r9, r4, lr\n\t"
        "ldm     r10!, {r0-r2}\n\t"
        "smmlar  r3, lr, r0, r1\n\t"
        "add     r3, r3, lr, asr #31\n\t"
        "asr     r3, r3, r2\n\t"
        "ssat    r3, #8, r3\n\t"
        "strb    r3, [r11], #1\n\t"
        "cmp     r10, r12\n\t"
        "bne     1b\n\t"
        "pop     {r4-r11, pc}\n\t");
}
#else
static void record_channels(const uint32_t *records, const uint32_t *end, int8_t *out, const uint32_t inputs[SHORT_PAIRS]) {
    for (const uint32_t *r = records; r < end; r += RECORD_WORDS, out++) {
        int32_t a = (int32_t)r[SHORT_PAIRS];
        for (int32_t j = 0; j < SHORT_PAIRS; j++) a = trt_smlad(inputs[j], r[j], a);
        int32_t t = (int32_t)r[SHORT_PAIRS + 2] + trt_smmulr(a, (int32_t)r[SHORT_PAIRS + 1]);
        t += a >> 31;
        *out = (int8_t)trt_ssat8(t >> r[SHORT_PAIRS + 3]);
    }
}
#endif

static void depthwise_pixel(const trt_conv_params *p, const int8_t *window, uint32_t *inputs, int8_t *out) {
    const int32_t pairs = tap_pairs(p);
    if (p->small_accumulators == CHANNEL_RECORDS) {
        const int32_t *at = (const int32_t *)(const void *)p->packed_weights;
        const uint32_t *records = (const uint32_t *)(at + 2 * SHORT_PAIRS);
        for (int32_t j = 0; j < SHORT_PAIRS; j++) inputs[j] = trt_dsp_halfwords(window[at[2 * j]], window[at[2 * j + 1]]);
        record_channels(records, records + (size_t)p->out_c * RECORD_WORDS, out, inputs);
        return;
    }
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
