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

#endif
