/*
 * The portable creation operators: aten::full.out and aten::arange.out / start_out, into a dense
 * output of any dtype.
 *
 * Arithmetic (ExecuTorch's portable kernels): full converts its Scalar to the output's dtype once (a
 * float truncated toward zero into an integer, as C++'s cast does); arange computes start + i * step
 * in double and converts each element likewise.
 */
#include "kernels_c.h"
#include "../../values.h"      /* the dtype codes (tinyrps_runtime.h, which a library keeps beside values.h) */

static void store(uint8_t *base, uint8_t dtype, uint32_t at, double v, int64_t vi, int integral) {
    const int64_t i = integral ? vi : (int64_t)v;   /* the bind step kept v within the dtype's range */
    switch (dtype) {
    case TRT_FLOAT32: ((float *)(void *)base)[at] = integral ? (float)vi : (float)v; break;
    case TRT_UINT8: base[at] = (uint8_t)(uint64_t)i; break;
    case TRT_INT8: ((int8_t *)(void *)base)[at] = (int8_t)(uint8_t)(uint64_t)i; break;
    case TRT_INT16: ((int16_t *)(void *)base)[at] = (int16_t)(uint16_t)(uint64_t)i; break;
    case TRT_INT32: ((int32_t *)(void *)base)[at] = (int32_t)(uint32_t)(uint64_t)i; break;
    case TRT_BOOL: base[at] = integral ? vi != 0 : v != 0.0; break;
    default: ((int64_t *)(void *)base)[at] = i; break;
    }
}

void trt_create_c(const trt_create_params *p) {
    for (uint32_t k = 0; k < p->count; k++) {
        if (p->op == TRT_CREATE_FULL) store(p->output, p->out_dtype, k, p->start, p->start_int, p->integral);
        else store(p->output, p->out_dtype, k, p->start + (double)k * p->step, 0, 0);
    }
}
