/*
 * Which minimum and maximum calls the Helium kernels take (mve/minimum.c, mve/maximum.c): rows
 * along which each operand steps by one element or stays (broadcast).
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include "kernels_mve.h"

int trt_minmax_mve_accepts(const trt_minmax_params *p) {
    const int32_t sa = p->shape.a_steps[3], sb = p->shape.b_steps[3];
    return (sa == 0 || sa == 1) && (sb == 0 || sb == 1);
}

#endif
