/*
 * cortex_m::quantized_activation.out with Helium -- the table lookup as a byte gather, 16 lanes
 * per step (VLDRB gather with 8-bit offsets: x + 128 is the byte x with its top bit flipped),
 * the tail predicated.
 *
 * Arithmetic: as kernels/c/quantized_activation.c: out = lut[x + 128].
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"

void trt_quantized_activation_mve(const trt_lut_params *p) {
    const uint8x16_t flip = vdupq_n_u8(0x80);
    const int8_t *in = p->input, *lut = p->lut;   /* locals: the stores may alias */
    int8_t *out = p->output;
    for (uint32_t i = 0, n = p->count; i < n; i += 16) {
        const mve_pred16_t pred = vctp8q(n - i);
        const uint8x16_t index = veorq_u8(vreinterpretq_u8_s8(vldrbq_z_s8(in + i, pred)), flip);
        vstrbq_p_s8(out + i, vldrbq_gather_offset_z_s8(lut, index, pred), pred);
    }
}

#endif
