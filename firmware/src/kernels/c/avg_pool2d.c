/*
 * cortex_m::quantized_avg_pool2d.out -- NHWC int8 average pooling, in the reference's float32.
 *
 * Arithmetic (operators.quantized_avg_pool2d_impl: dequantize_per_tensor_cmsis, F.avg_pool2d
 * with count_include_pad=False, quantize_per_tensor_cmsis), every step a float32 operation:
 *   scale  = (float)(multiplier * 2^shift / 2^31)
 *   v      = ((float)x - (float)zero_point) * scale                  per input value
 *   sum    = (((0 + v0) + v1) + ...)   over the window's in-bounds taps in row-major order
 *   avg    = sum / (float)count        count = in-bounds taps (padding is not counted)
 *   out    = clamp(round_half_even(avg / scale) + (float)zero_point, -128, 127)
 * This is the order torch's CPU kernel adds in (one accumulator per channel, taps row by row),
 * so the float results are the same bits; the C code is built without contraction (no fused
 * multiply-add). v takes 256 values: a table prepared at load (avg_pool_finish.h).
 * Windows are clipped to the input; in ceil mode the last ones may reach past the padding, and
 * the load-time checks (padding <= kernel / 2, torch's output size) leave every window at least
 * one in-bounds tap.
 * Taps outer, channels inner: one pass over each input pixel's channels per tap, into
 * `channels` float accumulators in the working memory.
 */
#include "../avg_pool_finish.h"
#include "kernels_c.h"

size_t trt_avg_pool2d_c_temp_bytes(const trt_avg_pool_params *p) { return (size_t)p->channels * sizeof(float); }

static void pool_pixel(const trt_avg_pool_params *p, const int8_t *image, const int32_t window[4], float *acc,
                       int8_t *out) {
    const int32_t c = p->channels;
    const float *table = p->dequantized + 128;
    for (int32_t i = 0; i < c; i++) acc[i] = 0.0f;
    for (int32_t y = window[0]; y < window[1]; y++)
        for (int32_t x = window[2]; x < window[3]; x++) {
            const int8_t *tap = image + ((size_t)y * p->in_w + (size_t)x) * c;
            for (int32_t i = 0; i < c; i++) acc[i] += table[tap[i]];
        }
    const int32_t count = (window[1] - window[0]) * (window[3] - window[2]);
    for (int32_t i = 0; i < c; i++) out[i] = trt_avg_pool_quantize(acc[i], count, p->scale, p->zero_point);
}

void trt_avg_pool2d_c(const trt_avg_pool_params *p, void *temp) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->channels;
    float *acc = temp;
    int32_t window[4];
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * in_image;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->channels;
        for (int32_t oy = 0; oy < p->out_h; oy++)
            for (int32_t ox = 0; ox < p->out_w; ox++, out += p->channels) {
                trt_avg_pool_window(p, oy, ox, window);
                pool_pixel(p, image, window, acc, out);
            }
    }
}
