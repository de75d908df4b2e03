/*
 * int8 dot products, the inner loops of quantized_conv2d and quantized_linear.
 *
 * Arithmetic: acc += sum over i < n of a[i] * b[i], in int32. Callers keep n within
 * TRT_MAX_REDUCTION (65536 * 128 * 128 < 2^31), so the sums are exact.
 * trt_dot4_s8 computes four such sums against weight rows `stride` bytes apart, loading
 * each input byte once: per 4 MACs, 5 loads and 4 multiply-accumulates (about 2.5
 * instructions per MAC on a Cortex-M55 with GCC -O2, low-overhead loop included).
 */
#include "../arith.h"

int32_t trt_dot_s8(const int8_t *a, const int8_t *b, int32_t n) {
    int32_t acc = 0;
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        acc += a[i] * b[i];
        acc += a[i + 1] * b[i + 1];
        acc += a[i + 2] * b[i + 2];
        acc += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++) acc += a[i] * b[i];
    return acc;
}

void trt_dot4_s8(const int8_t *x, const int8_t *w, int32_t stride, int32_t n, int32_t acc[4]) {
    const int8_t *w0 = w, *w1 = w + stride, *w2 = w + 2 * stride, *w3 = w + 3 * stride;
    int32_t a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];
    for (int32_t i = 0; i < n; i++) {
        int32_t xv = x[i];
        a0 += xv * w0[i];
        a1 += xv * w1[i];
        a2 += xv * w2[i];
        a3 += xv * w3[i];
    }
    acc[0] = a0;
    acc[1] = a1;
    acc[2] = a2;
    acc[3] = a3;
}
