/*
 * cortex_m::quantized_transpose_conv2d.out with the DSP extension -- NHWC int8, OHWI weights.
 *
 * Arithmetic: as kernels/c/transpose_conv2d.c (the reference's float32 sum, exact as integers).
 * Computed as the stride-1 convolution of conv_forms.h: each batch's input is spread over a
 * grid of pad bytes (-input_offset: they add nothing) in the working memory, the weights are
 * turned by 180 degrees at load, and the DSP convolution (kernels/dsp/conv2d.c) runs on the
 * grid, whose windows are all whole, so folded_bias is exact for every output. The grid's pad
 * taps are multiplied too (about stride_h * stride_w times the landing taps' work).
 */
#include "../isa.h"
#if TRT_HAVE_DSP

#include "../conv_forms.h"
#include "kernels_dsp.h"

int trt_transpose_conv2d_dsp_accepts(const trt_conv_params *p) { return trt_conv2d_dsp_accepts(p); }

/* scratch: the turned weights, then the convolution's weight sums */
size_t trt_transpose_conv2d_dsp_scratch_bytes(const trt_conv_params *p) {
    const trt_conv_params q = trt_transpose_as_conv(p);
    return trt_transpose_weights_bytes(p) + trt_conv2d_dsp_scratch_bytes(&q);
}

void trt_transpose_conv2d_dsp_prepare(trt_conv_params *p, void *scratch) {
    trt_transpose_prepare(p, scratch, trt_conv2d_dsp_prepare);
}

/* temp: the grid, then the convolution's blocks (conv_forms.h) */
size_t trt_transpose_conv2d_dsp_temp_bytes(const trt_conv_params *p) {
    return trt_transpose_temp_bytes(p, trt_conv2d_dsp_block_bytes);
}

void trt_transpose_conv2d_dsp(const trt_conv_params *p, void *temp) {
    trt_transpose_run(p, temp, trt_conv2d_dsp_on_image);
}

#endif
