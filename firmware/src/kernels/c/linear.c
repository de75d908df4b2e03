/*
 * cortex_m::quantized_linear.out -- int8 fully connected layer, per-tensor requantization.
 *
 * Arithmetic (operators.quantized_linear_impl), two forms chosen by the exporter:
 *   MVE form (kernel_sum given; bias and input offset already folded into it by the exporter):
 *     acc = sum(x * w) + sum(x) * filter_offset + kernel_sum[o]          (int64: torch.sum promotes)
 *   DSP / scalar form (bias given or absent):
 *     acc = sum((x + input_offset) * (w + filter_offset)) + bias[o]     (int32, wraps modulo 2^32)
 *         = sum(x*w) + input_offset*sum(w) + filter_offset*sum(x) + depth*input_offset*filter_offset + bias[o]
 *       with sum(w) per row prepared at load.
 *   out = clamp(requantize(acc, multiplier, shift) + output_offset, activation_min, activation_max)
 * Inner loop: four output rows share each input byte (trt_dot4_s8).
 */
#include "../arith.h"
#include "../linear_finish.h"
#include "kernels_c.h"

void trt_linear_c(const trt_linear_params *p) {
    const int32_t n = p->depth;
    for (int32_t r = 0; r < p->rows; r++) {
        const int8_t *x = p->input + (size_t)r * n;
        int8_t *out = p->output + (size_t)r * p->out_features;
        const int32_t input_sum = p->filter_offset != 0 ? trt_sum_s8(x, n) : 0;
        int32_t o = 0;
        for (; o + 4 <= p->out_features; o += 4) {
            int32_t acc[4] = {0, 0, 0, 0};
            trt_dot4_s8(x, p->weights + (size_t)o * n, n, n, acc);
            for (int lane = 0; lane < 4; lane++) out[o + lane] = trt_linear_finish(p, o + lane, acc[lane], input_sum);
        }
        for (; o < p->out_features; o++)
            out[o] = trt_linear_finish(p, o, trt_dot_s8(x, p->weights + (size_t)o * n, n), input_sum);
    }
}
