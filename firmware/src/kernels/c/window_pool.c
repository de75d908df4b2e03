/*
 * The portable pools: aten::max_pool2d_with_indices.out and aten::avg_pool2d.out over any strides,
 * padding, dilation and ceil_mode windows, on any dim order.
 *
 * Arithmetic (ExecuTorch's portable kernels): each output pixel visits its window's taps row by row,
 * skipping those outside the input;
 *   max  keeps the first tap and then a tap greater than the kept one (so the first of equal ones,
 *        and a NaN only when it comes first), with its index row * in_w + column
 *   avg  s = the first tap, s += each next one in float32; out = s / (float)divisor, where the
 *        divisor is divisor_override, or the window's size clipped to the input plus its padding
 *        (count_include_pad) or to the input
 * A max compares the dtype's values and copies the kept element, so every dtype keeps its bits; the
 * average's sum follows the reference's order, so it gives its bits too.
 */
#include <string.h>

#include "kernels_c.h"
#include "tinyrps_runtime.h"   /* the dtype codes */

static double value_at(const trt_window_pool_params *p, size_t at) {
    switch (p->dtype) {
    case TRT_UINT8: return p->input[at];
    case TRT_INT8: return ((const int8_t *)(const void *)p->input)[at];
    case TRT_INT16: return ((const int16_t *)(const void *)p->input)[at];
    case TRT_INT32: return ((const int32_t *)(const void *)p->input)[at];
    default: return ((const float *)(const void *)p->input)[at];
    }
}

static int32_t min32(int32_t a, int32_t b) { return a < b ? a : b; }
static int32_t max32(int32_t a, int32_t b) { return a > b ? a : b; }

/* The window's divisor: the override, or its taps counted as the reference counts them. */
static float divisor_of(const trt_window_pool_params *p, int32_t y0, int32_t x0) {
    if (p->divisor) return (float)p->divisor;
    int32_t y1 = min32(y0 + p->kernel[0], p->in_h + p->pad[0]), x1 = min32(x0 + p->kernel[1], p->in_w + p->pad[1]);
    if (p->count_include_pad) return (float)((y1 - y0) * (x1 - x0));
    y1 = min32(y1, p->in_h);
    x1 = min32(x1, p->in_w);
    return (float)((y1 - max32(y0, 0)) * (x1 - max32(x0, 0)));
}

/* One output pixel of one plane (input elements from `plane`); 0 when no tap lies inside the input. */
static int pool_pixel(const trt_window_pool_params *p, size_t plane, int32_t y0, int32_t x0, size_t *kept,
                      int64_t *kept_index, float *sum) {
    int found = 0;
    double best = 0.0;
    for (int32_t i = 0; i < p->kernel[0]; i++) {
        const int32_t y = y0 + i * p->dilation[0];
        if (y < 0 || y >= p->in_h) continue;
        for (int32_t j = 0; j < p->kernel[1]; j++) {
            const int32_t x = x0 + j * p->dilation[1];
            if (x < 0 || x >= p->in_w) continue;
            const size_t at = plane + (size_t)y * (size_t)p->in_strides[2] + (size_t)x * (size_t)p->in_strides[3];
            if (p->op == TRT_WINDOW_AVG) {
                const float v = ((const float *)(const void *)p->input)[at];
                *sum = found ? *sum + v : v;
            } else {
                const double v = value_at(p, at);
                if (!found || v > best) {
                    best = v;
                    *kept = at;
                    *kept_index = (int64_t)y * p->in_w + x;
                }
            }
            found = 1;
        }
    }
    return found;
}

void trt_window_pool_c(const trt_window_pool_params *p) {
    for (int32_t n = 0; n < p->batches; n++) {
        for (int32_t c = 0; c < p->channels; c++) {
            const size_t plane = (size_t)n * (size_t)p->in_strides[0] + (size_t)c * (size_t)p->in_strides[1];
            const size_t out_plane = (size_t)n * (size_t)p->out_strides[0] + (size_t)c * (size_t)p->out_strides[1];
            for (int32_t y = 0; y < p->out_h; y++) {
                for (int32_t x = 0; x < p->out_w; x++) {
                    const int32_t y0 = y * p->stride[0] - p->pad[0], x0 = x * p->stride[1] - p->pad[1];
                    const size_t out_at = out_plane + (size_t)y * (size_t)p->out_strides[2] +
                                          (size_t)x * (size_t)p->out_strides[3];
                    size_t kept = 0;
                    int64_t kept_index = 0;
                    float sum = 0.0f;
                    /* the bind step admits no window without a tap inside the input */
                    if (!pool_pixel(p, plane, y0, x0, &kept, &kept_index, &sum)) continue;
                    if (p->op == TRT_WINDOW_AVG) {
                        ((float *)(void *)p->output)[out_at] = sum / divisor_of(p, y0, x0);
                        continue;
                    }
                    memcpy(p->output + out_at * p->elem_size, p->input + kept * p->elem_size, p->elem_size);
                    if (p->indices) p->indices[out_at] = kept_index;
                }
            }
        }
    }
}
