/*
 * cortex_m::quantized_depthwise_conv2d.out with the DSP extension, one input channel and a window
 * of more than 10 taps (DS-CNN's 10x4 first layer is 40), weights 1HWO.
 *
 * Arithmetic (operators.quantized_depthwise_conv2d_impl, arith.h):
 *   acc[oc] = sum over the window of x * w[ky, kx, oc] + folded_bias[oc],  folded_bias = bias + input_offset * sum(w)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * with a padded copy of the image (kernels/padding.h), so every window is whole and folded_bias
 * is exact for every pixel.
 *
 * As depthwise_conv2d.c: per pixel, the window's taps are packed once into pairs of halfwords,
 * and a channel is one SMLAD per pair against its weights packed the same way at load. Here the
 * pairs come in runs of four (the pairs past the window with zero weights), and two output
 * channels share each run's inputs: one LDM of the four input words, one LDM of each channel's
 * four weight words (interleaved at load, run by run), eight SMLAD -- 16 MACs in 11 instructions
 * on the core, where the compiler's loop loads a word for each multiply.
 * Requantization: dsp_requantize.h's when every channel's accumulator stays below 2^30 (checked
 * at load); then the weights and folded biases are stored doubled, so the accumulator already is
 * the 2 acc that SMMULR takes (|2 acc| < 2^31; 2 w fits a halfword). arith.h's otherwise.
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

/* Windows of up to this many taps run depthwise_conv2d.c's unrolled loop. */
#define SHORT_TAPS 10
#define RUN 4
#define MAX_PAIRS (((TRT_MAX_DEPTHWISE_TAPS + 1) / 2 + RUN - 1) / RUN * RUN)

static int32_t taps(const trt_conv_params *p) { return p->kernel_h * p->kernel_w; }
static int32_t tap_pairs(const trt_conv_params *p) { return ((taps(p) + 1) / 2 + RUN - 1) / RUN * RUN; }
static int32_t pitch(const trt_conv_params *p) { return p->in_w + 2 * p->pad_w; }
static int has_padding(const trt_conv_params *p) { return p->pad_h > 0 || p->pad_w > 0; }

int trt_depthwise_long_window_dsp_accepts(const trt_conv_params *p) {
    return p->in_c == 1 && taps(p) > SHORT_TAPS && p->dilation_h == 1 && p->dilation_w == 1 &&
           trt_pad_value_fits(p->input_offset);
}

/* scratch: depthwise_pack.h's, in runs of four pairs; on the short requantization's path the
 * weights doubled and, channel pair by channel pair, interleaved run by run */
size_t trt_depthwise_long_window_dsp_scratch_bytes(const trt_conv_params *p) {
    return trt_dsp_one_channel_scratch_bytes(p, tap_pairs(p));
}

static const uint32_t *packed_of(const trt_conv_params *p) { return (const uint32_t *)(const void *)p->packed_weights; }
static const int32_t *offsets_of(const trt_conv_params *p) {
    return (const int32_t *)(const void *)(packed_of(p) + (size_t)p->out_c * tap_pairs(p));
}
static const trt_dsp_requant *requant_of(const trt_conv_params *p) {
    return (const trt_dsp_requant *)(const void *)(offsets_of(p) + 2 * (size_t)tap_pairs(p));
}

/* Doubles each halfword of the weights and the folded biases, then interleaves each pair of
 * channels' weights run by run: four words of the first, four of the second (dot_pairs2). */
static void double_and_interleave(const trt_conv_params *p, uint32_t *packed, int32_t *folded) {
    const int32_t pairs = tap_pairs(p);
    for (size_t i = 0; i < (size_t)p->out_c * pairs; i++)
        packed[i] = trt_dsp_halfwords((int16_t)(packed[i] & 0xFFFFu) * 2, (int16_t)(packed[i] >> 16) * 2);
    for (int32_t oc = 0; oc < p->out_c; oc++) folded[oc] = (int32_t)((uint32_t)folded[oc] << 1);
    uint32_t two[2 * MAX_PAIRS];
    for (int32_t oc = 0; oc + 2 <= p->out_c; oc += 2) {
        uint32_t *block = packed + (size_t)oc * pairs;
        for (int32_t j = 0; j < 2 * pairs; j++) two[j] = block[j];
        for (int32_t j = 0; j < pairs; j++) {
            block[(j / RUN) * 2 * RUN + j % RUN] = two[j];
            block[(j / RUN) * 2 * RUN + RUN + j % RUN] = two[pairs + j];
        }
    }
}

void trt_depthwise_long_window_dsp_prepare(trt_conv_params *p, void *scratch) {
    trt_dsp_one_channel_pack(p, scratch, tap_pairs(p), pitch(p));
    int32_t *folded = scratch;
    if (p->small_accumulators) double_and_interleave(p, (uint32_t *)(folded + p->out_c), folded);
}

size_t trt_depthwise_long_window_dsp_temp_bytes(const trt_conv_params *p) {
    return has_padding(p) ? (size_t)(p->in_h + 2 * p->pad_h) * (size_t)pitch(p) : 0;
}

/* acc + the dot product of `runs` runs of four pairs of halfwords (one channel). */
static inline int32_t dot_pairs(const uint32_t *x, const uint32_t *w, int32_t runs, int32_t acc) {
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
    __asm__("1:\n\t"
            "ldm %[x]!, {r4, r5, r6, r8}\n\t"
            "ldm %[w]!, {r9, r10, r11, r12}\n\t"
            "smlad %[acc], r4, r9, %[acc]\n\t"
            "smlad %[acc], r5, r10, %[acc]\n\t"
            "smlad %[acc], r6, r11, %[acc]\n\t"
            "smlad %[acc], r8, r12, %[acc]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b"
            : [acc] "+r"(acc), [x] "+r"(x), [w] "+r"(w), [n] "+r"(runs)
            :
            : "r4", "r5", "r6", "r8", "r9", "r10", "r11", "r12", "cc", "memory");
#else
    for (int32_t j = 0; j < runs * RUN; j++) acc = trt_smlad(x[j], w[j], acc);
#endif
    return acc;
}

/* The same for two output channels, sharing the inputs' loads: w holds their weights run by run,
 * four words of the first channel, then four of the second. */
static inline void dot_pairs2(const uint32_t *x, const uint32_t *w, int32_t runs, int32_t *a, int32_t *b) {
    int32_t acc_a = *a, acc_b = *b;
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
    __asm__("1:\n\t"
            "ldm %[x]!, {r4, r5, r6, r8}\n\t"
            "ldm %[w]!, {r9, r10, r11, r12}\n\t"
            "smlad %[a], r4, r9, %[a]\n\t"
            "smlad %[a], r5, r10, %[a]\n\t"
            "smlad %[a], r6, r11, %[a]\n\t"
            "smlad %[a], r8, r12, %[a]\n\t"
            "ldm %[w]!, {r9, r10, r11, r12}\n\t"
            "smlad %[b], r4, r9, %[b]\n\t"
            "smlad %[b], r5, r10, %[b]\n\t"
            "smlad %[b], r6, r11, %[b]\n\t"
            "smlad %[b], r8, r12, %[b]\n\t"
            "subs %[n], %[n], #1\n\t"
            "bne 1b"
            : [a] "+r"(acc_a), [b] "+r"(acc_b), [x] "+r"(x), [w] "+r"(w), [n] "+r"(runs)
            :
            : "r4", "r5", "r6", "r8", "r9", "r10", "r11", "r12", "cc", "memory");
#else
    for (int32_t run = 0; run < runs; run++, x += RUN, w += 2 * RUN)
        for (int32_t j = 0; j < RUN; j++) {
            acc_a = trt_smlad(x[j], w[j], acc_a);
            acc_b = trt_smlad(x[j], w[RUN + j], acc_b);
        }
#endif
    *a = acc_a;
    *b = acc_b;
}

/* dsp_requantize.h's trt_dsp_output_s8 of an accumulator already doubled. */
static inline int8_t output_doubled(int32_t acc2, const trt_dsp_requant *r, int32_t output_offset, int32_t act_min,
                                    int32_t act_max) {
    const int32_t v = trt_smmulr(acc2, r->multiplier);
    return (int8_t)trt_clamp(((v + r->half + ((v >> 31) & r->negative)) >> r->right) + output_offset, act_min, act_max);
}

/* Every channel of one pixel whose window's pairs are `inputs`. */
static void pixel_channels(const trt_conv_params *p, const uint32_t *inputs, int8_t *out) {
    const int32_t pairs = tap_pairs(p), offset = p->output_offset, lo = p->activation_min, hi = p->activation_max;
    const uint32_t *packed = packed_of(p);
    const int32_t *folded = p->folded_bias;
    if (!p->small_accumulators) {
        for (int32_t oc = 0; oc < p->out_c; oc++, packed += pairs)
            out[oc] = trt_output_s8(trt_add_wrap(dot_pairs(inputs, packed, pairs / RUN, 0), folded[oc]), p->multipliers[oc],
                                    p->shifts[oc], offset, lo, hi);
        return;
    }
    const trt_dsp_requant *r = requant_of(p);
    int32_t oc = 0;
    for (; oc + 2 <= p->out_c; oc += 2, packed += 2 * pairs, r += 2) {
        int32_t a = folded[oc], b = folded[oc + 1];
        dot_pairs2(inputs, packed, pairs / RUN, &a, &b);
        out[oc] = output_doubled(a, &r[0], offset, lo, hi);
        out[oc + 1] = output_doubled(b, &r[1], offset, lo, hi);
    }
    if (oc < p->out_c) out[oc] = output_doubled(dot_pairs(inputs, packed, pairs / RUN, folded[oc]), r, offset, lo, hi);
}

void trt_depthwise_long_window_dsp(const trt_conv_params *p, void *temp) {
    uint32_t inputs[MAX_PAIRS];
    const int32_t pairs = tap_pairs(p), *offsets = offsets_of(p);
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * p->in_h * p->in_w;
        if (has_padding(p)) {
            trt_pad_image(image, temp, p->in_h, p->in_w, 1, p->pad_h, p->pad_w, p->input_offset);
            image = temp;
        }
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->out_c;
        for (int32_t oy = 0; oy < p->out_h; oy++) {
            const int8_t *row = image + (size_t)oy * p->stride_h * pitch(p);
            for (int32_t ox = 0; ox < p->out_w; ox++, out += p->out_c) {
                const int8_t *window = row + (size_t)ox * p->stride_w;
                for (int32_t j = 0; j < pairs; j++)
                    inputs[j] = trt_dsp_halfwords(window[offsets[2 * j]], window[offsets[2 * j + 1]]);
                pixel_channels(p, inputs, out);
            }
        }
    }
}

#endif
