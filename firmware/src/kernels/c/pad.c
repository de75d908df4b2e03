/*
 * cortex_m::pad.out -- constant padding of an int8 tensor (the quantized pad value), in memory
 * order: NHWC for a channels-last tensor, whose padding the exporter gives in that order.
 *
 * Arithmetic (operators.pad_impl: F.pad, mode constant): none; out[i + before] = in[i] along
 * each of the four extents, every other element the pad value. The bind step merged unpadded
 * inner extents into longer rows.
 */
#include <string.h>

#include "kernels_c.h"

void trt_pad_c(const trt_pad_params *p) {
    int32_t out_sizes[4];
    for (int k = 0; k < 4; k++) out_sizes[k] = p->before[k] + p->in_sizes[k] + p->after[k];
    const size_t row = (size_t)out_sizes[3], plane = (size_t)out_sizes[2] * row, cube = (size_t)out_sizes[1] * plane;
    const int8_t *in = p->input;
    int8_t *out = p->output;
    const size_t total = (size_t)out_sizes[0] * cube;
    if (total == (size_t)p->in_sizes[0] * p->in_sizes[1] * p->in_sizes[2] * p->in_sizes[3]) {
        memcpy(out, in, total);   /* no padding at all (what avg_pool2d's count_include_pad leaves) */
        return;
    }
    memset(out, p->value, total);
    for (int32_t i0 = 0; i0 < p->in_sizes[0]; i0++)
        for (int32_t i1 = 0; i1 < p->in_sizes[1]; i1++)
            for (int32_t i2 = 0; i2 < p->in_sizes[2]; i2++, in += p->in_sizes[3]) {
                int8_t *dst = out + (size_t)(i0 + p->before[0]) * cube + (size_t)(i1 + p->before[1]) * plane +
                              (size_t)(i2 + p->before[2]) * row + (size_t)p->before[3];
                memcpy(dst, in, (size_t)p->in_sizes[3]);
            }
}
