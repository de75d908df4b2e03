/*
 * Which kernel taps of a convolution window fall inside the input, along one axis.
 * Shared by the conv kernels: the hot loops then run over in-bounds taps only, so
 * padding costs nothing and no pointer ever leaves the input tensor.
 */
#ifndef TINYRPS_CONV_GEOMETRY_H
#define TINYRPS_CONV_GEOMETRY_H

#include <stdint.h>

/* Output coordinate `o` reads input positions origin + k * dilation, k in [0, kernel), with
 * origin = o * stride - pad. Sets [*k0, *k1) to the k whose position is in [0, in). */
static inline void trt_tap_range(int32_t o, int32_t stride, int32_t pad, int32_t dilation, int32_t kernel,
                                 int32_t in, int32_t *origin, int32_t *k0, int32_t *k1) {
    int32_t start = o * stride - pad;
    int32_t first = start >= 0 ? 0 : (-start + dilation - 1) / dilation;
    int32_t end = in - start <= 0 ? 0 : (in - start + dilation - 1) / dilation;
    if (end > kernel) end = kernel;
    if (first > end) first = end;
    *origin = start;
    *k0 = first;
    *k1 = end;
}

/* Output pixel i of a convolution as its fast kernels take them: row-major over out_w columns, or,
 * with a max pool fused (pool_h > 0: non-overlapping pool_h x pool_w windows, pooled_w of them a
 * row), window by window, each window's pixels row-major, so a window's pixels come one after
 * another and its maximum is complete once they have. */
static inline void trt_conv_pixel(int32_t i, int32_t out_w, int32_t pool_h, int32_t pool_w, int32_t pooled_w,
                                  int32_t *oy, int32_t *ox) {
    if (!pool_h) {
        *oy = i / out_w;
        *ox = i - *oy * out_w;
        return;
    }
    const int32_t taps = pool_h * pool_w, window = i / taps, tap = i - window * taps;
    *oy = window / pooled_w * pool_h + tap / pool_w;
    *ox = window % pooled_w * pool_w + tap % pool_w;
}

#endif
