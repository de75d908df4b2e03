/*
 * cortex_m::quantized_depthwise_conv2d.out with Helium, one input channel and any window (the
 * first layer of an audio or image model: DS-CNN's 10x4 at stride 2 is 40 taps), as the
 * convolution it is (conv_forms.h): kernel_c = 1, the 1HWO weights transposed to OHWI at load.
 *
 * Arithmetic (operators.quantized_depthwise_conv2d_impl, arith.h), as kernels/mve/conv2d.c:
 *   acc[oc] = sum over the window of x * w[ky, kx, oc] + folded_bias[oc],  folded_bias = bias + input_offset * sum(w)
 *   out[oc] = clamp(requantize(acc[oc], multiplier[oc], shift[oc]) + output_offset, act_min, act_max)
 * Computed by the Helium convolution (a window of kernel_h * kernel_w bytes per output pixel,
 * two output channels by three pixels per step of 16 taps); windows of at most 16 taps run the
 * one-gather kernel of mve/depthwise_conv2d.c, which this variant comes after.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include "../conv_forms.h"
#include "kernels_mve.h"

int trt_depthwise_one_channel_mve_accepts(const trt_conv_params *p) {
    return p->in_c == 1 && trt_conv2d_mve_accepts(p);
}

/* scratch: the OHWI weights, then the convolution's folded bias */
size_t trt_depthwise_one_channel_mve_scratch_bytes(const trt_conv_params *p) {
    return trt_one_channel_weights_bytes(p) + trt_conv2d_long_mve_scratch_bytes(p);
}

void trt_depthwise_one_channel_mve_prepare(trt_conv_params *p, void *scratch) {
    int8_t *packed = scratch;
    trt_one_channel_pack(p, packed);
    p->packed_weights = packed;
    trt_conv_params q = trt_one_channel_as_conv(p);
    trt_conv2d_long_mve_prepare(&q, packed + trt_one_channel_weights_bytes(p));
    p->folded_bias = q.folded_bias;
}

size_t trt_depthwise_one_channel_mve_temp_bytes(const trt_conv_params *p) {
    const trt_conv_params q = trt_one_channel_as_conv(p);
    return trt_conv2d_mve_temp_bytes(&q);
}

void trt_depthwise_one_channel_mve(const trt_conv_params *p, void *temp) {
    const trt_conv_params q = trt_one_channel_as_conv(p);
    trt_conv2d_mve(&q, temp);
}

#endif
