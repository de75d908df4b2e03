/*
 * dim_order_ops::_clone_dim_order.out with Helium, for the one copy the Cortex-M programs
 * make: a channels-last int8 feature map [N, C, H, W] (dim order 0, 2, 3, 1) to contiguous
 * order before the flatten. Per batch that is a transpose of [H*W][C] into [C][H*W]:
 * eight bytes per step, gathered C bytes apart (VLDRB gather, 16-bit offsets) and stored
 * contiguously; the remainder tail-predicated.
 *
 * Arithmetic: none; out[n][c][h][w] = in[n][h][w][c]. Other copies run on kernels/c.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"

int trt_clone_dim_order_mve_accepts(const trt_copy_params *p) {
    if (p->elem_size != 1 || p->rank != 4) return 0;
    const int32_t c = p->sizes[1], h = p->sizes[2], w = p->sizes[3];
    const int channels_last = p->in_strides[3] == c && p->in_strides[2] == w * c && p->in_strides[1] == 1 &&
                              p->in_strides[0] == h * w * c;
    const int contiguous = p->out_strides[3] == 1 && p->out_strides[2] == w && p->out_strides[1] == h * w &&
                           p->out_strides[0] == c * h * w;
    return channels_last && contiguous && (int64_t)(h * w - 1) * c <= UINT16_MAX;
}

void trt_clone_dim_order_mve(const trt_copy_params *p) {
    const int32_t c = p->sizes[1], pixels = p->sizes[2] * p->sizes[3];
    const uint16x8_t first = vmulq_n_u16(vidupq_n_u16(0, 1), (uint16_t)c);
    const uint16_t step = (uint16_t)(8 * c);
    const int8_t *in = (const int8_t *)p->input;
    int8_t *out = (int8_t *)p->output;
    for (int32_t b = 0; b < p->sizes[0]; b++, in += (size_t)pixels * c, out += (size_t)pixels * c) {
        for (int32_t ch = 0; ch < c; ch++) {
            uint16x8_t offsets = first;
            int8_t *dst = out + (size_t)ch * pixels;
            for (int32_t n = pixels; n > 0; n -= 8, dst += 8) {
                const mve_pred16_t pred = vctp16q((uint32_t)n);
                vstrbq_p_s16(dst, vldrbq_gather_offset_z_s16(in + ch, offsets, pred), pred);
                offsets = vaddq_n_u16(offsets, step);
            }
        }
    }
}

#endif
