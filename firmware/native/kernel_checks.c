/*
 * tinyrps-kernel-checks [SEED [ROUNDS]]: the kernels below the operator table, on the host.
 *
 * - Differential: the DSP kernels (here on the portable model of the DSP instructions)
 *   against the plain-C kernels on random, awkward shapes -- odd channel counts, groups, depth
 *   multipliers, padding wider than the kernel, strides, dilation, rectangular windows,
 *   transposed convolutions, every offset, biases large enough for the general requantization
 *   -- so the sanitizer build walks their code paths with sizes no exported model has.
 * - The load-time weight sums and accumulator bounds against their plain definitions.
 * - The portable DSP model against the instructions' definitions.
 * - Defined results: NaN and infinities in quantize_per_tensor.
 * - trt_program_extent on hand-made extended headers.
 * Prints one line per failed check and a JSON summary; exit 0 only if all hold.
 */
#define _POSIX_C_SOURCE 200112L  /* posix_memalign */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_harness.h"
#include "kernels/c/kernels_c.h"
#include "kernels/dsp/dsp_intrinsics.h"
#include "kernels/dsp/kernels_dsp.h"
#include "kernels/weight_sums.h"
#include "tinyrps_runtime.h"

/* Per-channel requantization parameters like an exporter's, sometimes with unusual shifts. */
static void requant_params(int32_t *mult, int32_t *shift, int32_t n) {
    /* now and then a layer with a negative multiplier among its channels: a quantizer never makes one,
     * and the DSP kernels' short forms (channel records, the sign add) must refuse it and fall back */
    const int negative = pick(0, 7) == 0;
    for (int32_t i = 0; i < n; i++) {
        mult[i] = pick(1 << 30, INT32_MAX);
        if (negative && pick(0, 3) == 0) mult[i] = -mult[i];
        shift[i] = pick(0, 9) == 0 ? pick(1, 3) : pick(-12, 0);
    }
}

enum { CONV, DEPTHWISE, TRANSPOSE };

static void conv_geometry(trt_conv_params *p, int kind) {
    p->batches = pick(1, 2);
    p->in_h = pick(1, 9);
    p->in_w = pick(1, 9);
    p->kernel_h = pick(1, 4);
    p->kernel_w = pick(1, 4);
    p->stride_h = pick(1, 3);
    p->stride_w = pick(1, 3);
    p->pad_h = pick(0, 5);
    p->pad_w = pick(0, 5);
    p->dilation_h = pick(0, 3) == 0 ? 2 : 1;
    p->dilation_w = pick(0, 3) == 0 ? 2 : 1;
    if (kind == DEPTHWISE) {   /* the one-input-channel first layer, or any channel count and multiplier */
        p->in_c = pick(0, 2) == 0 ? 1 : pick(2, 20);
        p->depth_multiplier = p->in_c == 1 ? pick(1, 19) : pick(1, 3);
        p->out_c = p->in_c * p->depth_multiplier;
        p->kernel_c = 1;
        p->groups = p->in_c;
    } else {
        p->groups = kind == CONV && pick(0, 3) == 0 ? pick(2, 3) : 1;
        p->kernel_c = pick(1, kind == CONV ? 7 : 20);
        p->in_c = p->kernel_c * p->groups;
        p->out_c = p->groups * pick(1, 5);
        p->depth_multiplier = 0;
    }
    if (kind == TRANSPOSE) {   /* the reference admits only groups 1 */
        p->groups = 1;
        p->kernel_c = p->in_c;
    }
    p->input_offset = pick(0, 4) == 0 ? pick(-255, 255) : pick(-127, 128);
    p->output_offset = pick(-128, 127);
    p->activation_min = pick(-128, 0);
    p->activation_max = pick(p->activation_min, 127);
    if (pick(0, 2) == 0) {   /* the whole int8 range, as most exported layers have it */
        p->activation_min = -128;
        p->activation_max = 127;
    }
}

static int32_t extent(int32_t in, int32_t k, int32_t s, int32_t pad, int32_t d) {
    int32_t span = in + 2 * pad - d * (k - 1) - 1;
    return span < 0 ? 0 : span / s + 1;
}

static int32_t transposed_extent(int32_t in, int32_t k, int32_t s, int32_t pad, int32_t d, int32_t output_padding) {
    return (in - 1) * s - 2 * pad + d * (k - 1) + output_padding + 1;
}

/* One random convolution, depthwise or transposed convolution through C and DSP; 1 if a DSP kernel took it. */
static int conv_round(long round, int kind) {
    trt_conv_params p;
    memset(&p, 0, sizeof p);
    conv_geometry(&p, kind);
    if (kind == TRANSPOSE) {
        p.out_h = transposed_extent(p.in_h, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, pick(0, p.stride_h - 1));
        p.out_w = transposed_extent(p.in_w, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, pick(0, p.stride_w - 1));
    } else {
        p.out_h = extent(p.in_h, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h);
        p.out_w = extent(p.in_w, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w);
    }
    if (p.out_h < 1 || p.out_w < 1) return 0;
    const size_t in_n = (size_t)p.batches * p.in_h * p.in_w * p.in_c;
    const size_t w_n = kind == DEPTHWISE ? (size_t)p.kernel_h * p.kernel_w * p.out_c
                                         : (size_t)p.out_c * p.kernel_h * p.kernel_w * p.kernel_c;
    const size_t out_n = (size_t)p.batches * p.out_h * p.out_w * p.out_c;
    int8_t *in = aligned(in_n), *w = aligned(w_n), *out_c = aligned(out_n), *out_d = aligned(out_n);
    int32_t *bias = aligned(sizeof(int32_t) * p.out_c), *mult = aligned(sizeof(int32_t) * p.out_c),
            *shift = aligned(sizeof(int32_t) * p.out_c);
    fill_s8(in, in_n);
    fill_s8(w, w_n);
    /* now and then a bias so large that the DSP kernels must take the general requantization */
    const int32_t bias_range = pick(0, 5) == 0 ? 1 << 30 : 20000;
    for (int32_t i = 0; i < p.out_c; i++) bias[i] = pick(-bias_range, bias_range);
    requant_params(mult, shift, p.out_c);
    p.input = in;
    p.weights = w;
    p.bias = pick(0, 3) ? bias : NULL;
    p.multipliers = mult;
    p.shifts = shift;
    int took = 0;
    void *sums = aligned(trt_conv_sums_bytes(&p));
    trt_conv_params c = p;
    trt_conv_prepare_sums(&c, sums);
    /* the prepared tap sums against their definition (both kernels use them, so their outputs
     * agreeing would not show a wrong sum): a tap's weights over its input channels */
    const int32_t taps = p.kernel_h * p.kernel_w;
    int sums_hold = 1;
    for (int32_t oc = 0; oc < p.out_c; oc++)
        for (int32_t t = 0; t < taps; t++) {
            int32_t s = 0;
            for (int32_t ic = 0; ic < p.kernel_c; ic++)
                s += kind == DEPTHWISE ? w[(size_t)t * p.out_c + oc] : w[((size_t)oc * taps + t) * p.kernel_c + ic];
            sums_hold &= c.tap_sums[(size_t)oc * taps + t] == s;
        }
    check(sums_hold, "a convolution's tap sums", round);
    c.output = out_c;
    if (kind == DEPTHWISE) trt_depthwise_conv2d_c(&c);
    else if (kind == TRANSPOSE) trt_transpose_conv2d_c(&c);
    else trt_conv2d_c(&c);
    trt_conv_params d = p;
    d.output = out_d;
#define DSP_KERNEL(name, run, what)                                                                             \
    do {                                                                                                       \
        trt_conv_params e = p;                                                                                 \
        e.output = out_d;                                                                                      \
        if (name##_accepts(&e)) {                                                                              \
            void *scratch = aligned(name##_scratch_bytes(&e)), *temp = aligned(name##_temp_bytes(&e));        \
            memset(out_d, 0x5A, out_n);                                                                        \
            name##_prepare(&e, scratch);                                                                       \
            run(&e, temp);                                                                                     \
            check(memcmp(out_c, out_d, out_n) == 0, what, round);                                             \
            free(scratch);                                                                                     \
            free(temp);                                                                                        \
            took = 1;                                                                                          \
        }                                                                                                      \
    } while (0)
    if (kind == DEPTHWISE) {
        DSP_KERNEL(trt_depthwise_dsp, trt_depthwise_conv2d_dsp, "DSP one-channel depthwise conv equals plain C");
        DSP_KERNEL(trt_depthwise_channels_dsp, trt_depthwise_channels_dsp, "DSP depthwise conv equals plain C");
    } else if (kind == TRANSPOSE) {
        DSP_KERNEL(trt_transpose_conv2d_dsp, trt_transpose_conv2d_dsp, "DSP transposed conv equals plain C");
    } else {
        DSP_KERNEL(trt_conv2d_dsp, trt_conv2d_dsp, "DSP conv2d equals plain C");
    }
#undef DSP_KERNEL
    (void)d;
    free(sums);
    free(in);
    free(w);
    free(out_c);
    free(out_d);
    free(bias);
    free(mult);
    free(shift);
    return took;
}

static void linear_round(long round) {
    trt_linear_params p;
    memset(&p, 0, sizeof p);
    p.rows = pick(1, 3);
    p.depth = pick(1, 70);
    p.out_features = pick(1, 9);
    const size_t in_n = (size_t)p.rows * p.depth, w_n = (size_t)p.out_features * p.depth;
    const size_t out_n = (size_t)p.rows * p.out_features;
    int8_t *in = aligned(in_n), *w = aligned(w_n), *out_c = aligned(out_n), *out_d = aligned(out_n);
    int32_t *terms = aligned(sizeof(int32_t) * p.out_features);
    fill_s8(in, in_n);
    fill_s8(w, w_n);
    /* now and then terms so large that the DSP kernel takes the general requantization */
    const int32_t range = pick(0, 4) == 0 ? INT32_MAX : 100000;
    for (int32_t i = 0; i < p.out_features; i++) terms[i] = pick(-range, range);
    p.input = in;
    p.weights = w;
    if (pick(0, 1)) p.kernel_sum = terms;   /* the MVE form */
    else p.bias = pick(0, 3) ? terms : NULL;
    p.input_offset = pick(-128, 127);
    p.filter_offset = pick(0, 2) ? 0 : pick(-128, 127);
    p.output_offset = pick(-128, 127);
    p.multiplier = pick(1 << 30, INT32_MAX);
    p.shift = pick(-12, 1);
    p.activation_min = pick(-128, 0);
    p.activation_max = pick(p.activation_min, 127);
    if (pick(0, 2) == 0) {   /* the whole int8 range, as most exported layers have it */
        p.activation_min = -128;
        p.activation_max = 127;
    }
    void *sums = aligned(trt_linear_sums_bytes(&p)), *temp = aligned(trt_linear_dsp_temp_bytes(&p));
    trt_linear_prepare_sums(&p, sums);
    p.output = out_c;
    trt_linear_c(&p);
    void *dsp_sums = aligned(trt_linear_dsp_scratch_bytes(&p));
    trt_linear_dsp_prepare(&p, dsp_sums);
    p.output = out_d;
    trt_linear_dsp(&p, temp);
    free(dsp_sums);
    check(memcmp(out_c, out_d, out_n) == 0, "DSP linear equals plain C", round);
    free(sums);
    free(temp);
    free(in);
    free(w);
    free(out_c);
    free(out_d);
    free(terms);
}

/* The load-time weight sums and accumulator bounds (weight_sums.c), on rows long enough to cross
 * the word sums' lane flushes (512 bytes), of any length modulo 4, sometimes all at an extreme. */
static void weight_sums_round(long round) {
    trt_linear_params p;
    memset(&p, 0, sizeof p);
    p.depth = pick(1, 1500);
    p.out_features = pick(1, 4);
    const size_t w_n = (size_t)p.out_features * p.depth;
    int8_t *w = aligned(w_n + 3);
    int32_t *terms = aligned(sizeof(int32_t) * p.out_features);
    const int fill = pick(0, 5);
    for (size_t i = 0; i < w_n + 3; i++) w[i] = fill == 0 ? -128 : fill == 1 ? 127 : (int8_t)pick(-128, 127);
    for (int32_t i = 0; i < p.out_features; i++) terms[i] = pick(-(1 << 24), 1 << 24);
    p.weights = w + pick(0, 3);    /* rows that start off words */
    if (pick(0, 1)) p.kernel_sum = terms;
    else p.bias = terms;
    p.input_offset = pick(-128, 127) | 1;      /* nonzero: the bias form then needs the sums */
    p.filter_offset = pick(0, 2) ? 0 : pick(-128, 127);
    int32_t *sums = aligned(trt_linear_sums_bytes(&p));
    trt_linear_prepare_sums(&p, sums);
    for (int32_t o = 0; o < p.out_features && !p.kernel_sum; o++) {
        int32_t expected = 0;
        for (int32_t k = 0; k < p.depth; k++) expected += p.weights[(size_t)o * p.depth + k];
        check(p.weight_sums == sums && sums[o] == expected, "a row's weight sum", round);
    }
    /* a limit just above, at or below one row's bound: the shortcut must answer as the bounds do */
    const int32_t left = pick(0, 3);
    const int64_t limit = (trt_linear_accumulator_bound(&p, pick(0, p.out_features - 1)) << left) + pick(-1, 1);
    int below = 1;
    for (int32_t o = 0; o < p.out_features; o++)
        if (trt_linear_accumulator_bound(&p, o) << left >= limit) below = 0;
    check(trt_linear_accumulators_below(&p, left, limit) == below, "accumulators below a limit", round);
    free(sums);
    free(w);
    free(terms);
}

static void pool_round(long round) {
    trt_max_pool_params p;
    memset(&p, 0, sizeof p);
    p.batches = pick(1, 2);
    p.in_h = pick(1, 9);
    p.in_w = pick(1, 9);
    p.channels = pick(1, 19);
    p.kernel_h = pick(1, 3);
    p.kernel_w = pick(1, 3);
    p.stride_h = pick(1, 3);
    p.stride_w = pick(1, 3);
    p.pad_h = pick(0, p.kernel_h / 2);
    p.pad_w = pick(0, p.kernel_w / 2);
    p.out_h = extent(p.in_h, p.kernel_h, p.stride_h, p.pad_h, 1);
    p.out_w = extent(p.in_w, p.kernel_w, p.stride_w, p.pad_w, 1);
    if (p.out_h < 1 || p.out_w < 1) return;
    p.activation_min = pick(-128, 0);
    p.activation_max = pick(p.activation_min, 127);
    const size_t in_n = (size_t)p.batches * p.in_h * p.in_w * p.channels;
    const size_t out_n = (size_t)p.batches * p.out_h * p.out_w * p.channels;
    int8_t *in = aligned(in_n), *out_c = aligned(out_n), *out_d = aligned(out_n);
    fill_s8(in, in_n);
    p.input = in;
    p.output = out_c;
    trt_max_pool2d_c(&p);
    p.output = out_d;
    trt_max_pool2d_dsp(&p);
    check(memcmp(out_c, out_d, out_n) == 0, "DSP max pool equals plain C", round);
    free(in);
    free(out_c);
    free(out_d);
}

/* The portable model against the instructions' definitions, on random words. */
static void dsp_model_round(long round) {
    const uint32_t a = (uint32_t)next_random(), b = (uint32_t)next_random();
    const int32_t acc = (int32_t)(uint32_t)next_random();
    int ok = 1;
    for (int i = 0; i < 2; i++) {
        int32_t lo = (int8_t)(a >> (16 * i)), hi = (int8_t)(a >> (16 * i + 8));
        ok &= (int16_t)(trt_sxtb16(a) >> (16 * i)) == lo && (int16_t)(trt_sxtb16_ror8(a) >> (16 * i)) == hi;
    }
    int64_t sum = (int64_t)acc + (int16_t)a * (int16_t)b + (int16_t)(a >> 16) * (int16_t)(b >> 16);
    ok &= (uint32_t)trt_smlad(a, b, acc) == (uint32_t)sum;
    for (int i = 0; i < 32; i += 8) {
        int8_t x = (int8_t)(a >> i), y = (int8_t)(b >> i);
        ok &= (int8_t)(trt_max4(a, b) >> i) == (x > y ? x : y) && (int8_t)(trt_min4(a, b) >> i) == (x < y ? x : y);
    }
    check(ok, "the DSP model computes SXTB16, SMLAD, SSUB8+SEL", round);
}

static void quantize_special_values(void) {
    const float inputs[] = {NAN, -NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 0.5f, 1.5f, -2.5f, 0.0f};
    const int8_t expected[] = {-100, -100, 90, -100, 90, -100, 2, 4, 0, 2};
    int8_t out[10];
    trt_quantize_params p = {inputs, out, 10, 1.0f, 2.0f, -100.0f, 90.0f};
    trt_quantize_c(&p);
    check(memcmp(out, expected, sizeof out) == 0, "quantize: NaN -> quant_min, infinities clamp, ties to even", 0);
    memset(out, 0, sizeof out);
    trt_quantize_dsp(&p);
    check(memcmp(out, expected, sizeof out) == 0, "DSP quantize: NaN -> quant_min, infinities clamp, ties to even", 0);
    /* the whole int8 range (the DSP kernel's own path there), large values and ties included */
    const float wide[] = {NAN, -NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 3e9f, 5000001.5f, 4194305.5f, 124.5f, -129.5f, 0.5f};
    int8_t out_c[12], out_d[12];
    trt_quantize_params q = {wide, out_c, 12, 1.0f, 2.0f, -128.0f, 127.0f};
    trt_quantize_c(&q);
    q.output = out_d;
    trt_quantize_dsp(&q);
    check(memcmp(out_c, out_d, sizeof out_c) == 0 && out_c[0] == -128 && out_c[2] == 127,
          "DSP quantize over the whole int8 range: special values as plain C", 0);
}

/* Random floats, half of them exact ties after the scaling, through C and DSP quantize. */
static void quantize_round(long round) {
    enum { N = 64 };
    float inputs[N];
    int8_t out_c[N], out_d[N];
    const float inv_scale = (float)pick(1, 4000) / 64.0f;
    for (int i = 0; i < N; i++) {
        const float tie = ((float)pick(-700, 700) + 0.5f) / inv_scale;
        inputs[i] = pick(0, 1) ? tie : (float)pick(-1000000, 1000000) / (float)pick(1, 100000);
    }
    const float zp = (float)pick(-128, 127);
    const int full = pick(0, 1);   /* the whole int8 range half the time: the DSP kernel's own path there */
    const float lo = full ? -128.0f : (float)pick(-128, 0), hi = full ? 127.0f : (float)pick(0, 127);
    trt_quantize_params p = {inputs, out_c, N, inv_scale, zp, lo, hi};
    trt_quantize_c(&p);
    p.output = out_d;
    trt_quantize_dsp(&p);
    check(memcmp(out_c, out_d, sizeof out_c) == 0, "DSP quantize equals plain C", round);
}

static void put_le(uint8_t *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static size_t extent_of(uint32_t header_len, uint64_t program, uint64_t base, uint64_t segment, size_t available,
                        trt_status *status) {
    uint8_t head[64] = {0};
    memcpy(head + 4, "ET12", 4);
    memcpy(head + 8, "eh00", 4);
    put_le(head + 12, header_len, 4);
    put_le(head + 16, program, 8);
    put_le(head + 24, base, 8);
    if (header_len >= 32) put_le(head + 32, segment, 8);
    size_t length = 0;
    *status = trt_program_extent(head, available, &length);
    return length;
}

static void program_extents(void) {
    trt_status s;
    check(extent_of(24, 4000, 0, 0, 1 << 20, &s) == 4000 && s == TRT_OK, "24-byte header, no segments: program size", 0);
    check(extent_of(32, 4000, 4096, 900, 1 << 20, &s) == 4996 && s == TRT_OK, "32-byte header: segments' end", 0);
    check(extent_of(24, 4000, 4096, 0, 1 << 20, &s) == 0 && s == TRT_ERR_MALFORMED,
          "24-byte header with segments: length unknown", 0);
    check(extent_of(32, 4000, 4096, 900, 4000, &s) == 0 && s == TRT_ERR_TRUNCATED, "an extent past what is there", 0);
    check(extent_of(16, 4000, 0, 0, 1 << 20, &s) == 0 && s == TRT_ERR_MALFORMED, "a header shorter than 24 bytes", 0);
    check(extent_of(32, 4000, 3000, 10, 1 << 20, &s) == 0 && s == TRT_ERR_MALFORMED, "segments inside the flatbuffer", 0);
    uint8_t plain[64] = {0};
    size_t length = 1;
    check(trt_program_extent(plain, sizeof plain, &length) == TRT_ERR_MALFORMED && length == 0, "no header", 0);
}

int main(int argc, char **argv) {
    if (argc > 1) seed_random(argv[1]);
    long rounds = argc > 2 ? strtol(argv[2], NULL, 10) : 400;
    long conv_dsp = 0, depthwise_dsp = 0, transpose_dsp = 0;
    for (long r = 0; r < rounds; r++) {
        conv_dsp += conv_round(r, CONV);
        depthwise_dsp += conv_round(r, DEPTHWISE);
        transpose_dsp += conv_round(r, TRANSPOSE);
        linear_round(r);
        weight_sums_round(r);
        pool_round(r);
        dsp_model_round(r);
        quantize_round(r);
    }
    quantize_special_values();
    program_extents();
    printf("{\"checks\": %ld, \"failures\": %ld, \"rounds\": %ld, \"conv_dsp\": %ld, \"depthwise_dsp\": %ld, "
           "\"transpose_dsp\": %ld}\n", checks, failures, rounds, conv_dsp, depthwise_dsp, transpose_dsp);
    return failures ? 1 : 0;
}
