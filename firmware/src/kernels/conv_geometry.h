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

/* The first output coordinate (along one axis) whose window starts in the input, and how many
 * more follow whose window also ends in it: the pixels whose windows need no padding. */
static inline void trt_interior(int32_t in, int32_t out, int32_t kernel, int32_t stride, int32_t pad,
                                int32_t dilation, int32_t *first, uint32_t *span) {
    const int32_t lo = (pad + stride - 1) / stride, extent = (kernel - 1) * dilation + 1;
    int32_t hi = (in - extent + pad) >= 0 ? (in - extent + pad) / stride : -1;
    if (hi > out - 1) hi = out - 1;
    *first = hi >= lo ? lo : out;   /* none: a first coordinate no output pixel has */
    *span = hi >= lo ? (uint32_t)(hi - lo) : 0;
}

#endif
