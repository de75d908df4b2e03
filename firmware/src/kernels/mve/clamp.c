/*
 * aten::clamp.out on int8 with Helium -- 16 lanes per step (VMAX then VMIN), the tail predicated.
 *
 * Arithmetic: as kernels/c/clamp.c: out = min(max(x, lo), hi).
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "kernels_mve.h"

void trt_clamp_mve(const trt_clamp_params *p) {
    const int8x16_t lo = vdupq_n_s8((int8_t)p->lo), hi = vdupq_n_s8((int8_t)p->hi);
    const int8_t *in = p->input;
    int8_t *out = p->output;
    for (uint32_t i = 0, n = p->count; i < n; i += 16) {
        const mve_pred16_t pred = vctp8q(n - i);
        vstrbq_p_s8(out + i, vminq_s8(vmaxq_s8(vldrbq_z_s8(in + i, pred), lo), hi), pred);
    }
}

#endif
