/*
 * cortex_m::quantized_transpose_conv2d.out with Helium -- NHWC int8, OHWI weights.
 *
 * Arithmetic: as kernels/c/transpose_conv2d.c (the reference's float32 sum, exact as integers).
 * Computed as the stride-1 convolution of conv_forms.h: each batch's input is spread over a
 * grid of pad bytes (-input_offset: they add nothing) in the working memory, the weights are
 * turned by 180 degrees at load, and the Helium convolution (kernels/mve/conv2d.c) runs on the
 * grid: folded_bias = bias + input_offset * sum(w) is exact for every output, because every
 * window of the grid is whole. The grid's pad taps are multiplied too (about stride_h * stride_w
 * times the landing taps' work), at the convolution's 16 MACs per instruction.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include "../conv_forms.h"
#include "kernels_mve.h"

int trt_transpose_conv2d_mve_accepts(const trt_conv_params *p) { return trt_conv2d_mve_accepts(p); }

/* scratch: the turned weights, then the convolution's folded bias */
size_t trt_transpose_conv2d_mve_scratch_bytes(const trt_conv_params *p) {
    return trt_transpose_weights_bytes(p) + trt_conv2d_long_mve_scratch_bytes(p);
}

void trt_transpose_conv2d_mve_prepare(trt_conv_params *p, void *scratch) {
    trt_transpose_prepare(p, scratch, trt_conv2d_long_mve_prepare);
}

/* temp: the grid, then the convolution's blocks (conv_forms.h) */
size_t trt_transpose_conv2d_mve_temp_bytes(const trt_conv_params *p) {
    return trt_transpose_temp_bytes(p, trt_conv2d_mve_block_bytes);
}

void trt_transpose_conv2d_mve(const trt_conv_params *p, void *temp) {
    trt_transpose_run(p, temp, trt_conv2d_mve_on_image);
}

#endif
