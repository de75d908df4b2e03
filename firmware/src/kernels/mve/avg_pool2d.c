/*
 * cortex_m::quantized_avg_pool2d.out with Helium -- NHWC int8 average pooling in float32, four
 * channels per vector.
 *
 * Arithmetic: as kernels/c/avg_pool2d.c, the same float32 operations in the same order, so the
 * same bits: per tap, four bytes sign-extended into int32 lanes, minus the zero point (exact),
 * converted to float (exact: |x - zp| <= 255), times the scale (VMUL.F32, rounded as the scalar
 * multiply) and added to the lane's sum (VADD.F32), taps in row-major order. The divisions by
 * the tap count and the scale are correctly rounded scalar VDIV.F32 per lane (Helium has no
 * vector divide). Values never become subnormal (the scale is checked at load), so Helium's
 * floating point gives the IEEE results of the scalar code.
 */
#include "../isa.h"
#if TRT_HAVE_MVE_FLOAT

#include <arm_mve.h>

#include "../avg_pool_finish.h"
#include "kernels_mve.h"

static void pool_pixel(const trt_avg_pool_params *p, const int8_t *image, const int32_t window[4], int8_t *out) {
    const int32_t c = p->channels, row_step = p->in_w * c;
    const int32_t count = (window[1] - window[0]) * (window[3] - window[2]);
    const int8_t *first = image + ((size_t)window[0] * p->in_w + (size_t)window[2]) * c;
    for (int32_t ch = 0; ch < c; ch += 4) {
        const mve_pred16_t pred = vctp32q((uint32_t)(c - ch));
        float32x4_t sum = vdupq_n_f32(0.0f);
        const int8_t *row = first + ch;
        for (int32_t y = window[0]; y < window[1]; y++, row += row_step) {
            const int8_t *tap = row;
            for (int32_t x = window[2]; x < window[3]; x++, tap += c) {
                const int32x4_t q = vsubq_n_s32(vldrbq_z_s32(tap, pred), p->zero_point);
                sum = vaddq_f32(sum, vmulq_n_f32(vcvtq_f32_s32(q), p->scale));
            }
        }
        float lanes[4];
        vst1q_f32(lanes, sum);
        const int32_t n = c - ch < 4 ? c - ch : 4;
        for (int32_t k = 0; k < n; k++) out[ch + k] = trt_avg_pool_quantize(lanes[k], count, p->scale, p->zero_point);
    }
}

void trt_avg_pool2d_mve(const trt_avg_pool_params *p) {
    const size_t in_image = (size_t)p->in_h * p->in_w * p->channels;
    int32_t window[4];
    for (int32_t b = 0; b < p->batches; b++) {
        const int8_t *image = p->input + (size_t)b * in_image;
        int8_t *out = p->output + (size_t)b * p->out_h * p->out_w * p->channels;
        for (int32_t oy = 0; oy < p->out_h; oy++)
            for (int32_t ox = 0; ox < p->out_w; ox++, out += p->channels) {
                trt_avg_pool_window(p, oy, ox, window);
                pool_pixel(p, image, window, out);
            }
    }
}

#endif
