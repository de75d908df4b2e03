/*
 * cortex_m::quantized_add.out with Helium for two operands of one layout (a residual
 * connection: both read along the row), long enough to repay a table -- int8 addition, four
 * lanes of int32 per step, the tail predicated.
 *
 * Arithmetic: as kernels/c/quantized_add.c. An operand's term, requantize((x - zp) << 20, m, s),
 * depends on its byte alone, so each operand's 256 terms are computed at the start of the call
 * (with mve/quantized_add.c's vector steps, exact under the same conditions, which accepts
 * requires) into a table in the working memory, indexed by the byte read as unsigned; each step
 * then gathers its four terms (VLDRW with offsets) instead of seven vector instructions an
 * operand. The sum wraps and is requantized as there. A gather is one instruction to count, but
 * on the core it moves one element per beat: instruction counts are not cycles.
 */
#include "../isa.h"
#if TRT_HAVE_MVE

#include <arm_mve.h>

#include "../broadcast_walk.h"
#include "kernels_mve.h"
#include "mve_requantize.h"

#define VALUES 256
/* Below this many elements the two tables (about 1,300 instructions) cost more than they save. */
#define MIN_ELEMENTS 512

int trt_quantized_add_table_mve_accepts(const trt_add_params *p) {
    const trt_broadcast *s = &p->shape;
    const int64_t n = (int64_t)s->sizes[0] * s->sizes[1] * s->sizes[2] * s->sizes[3];
    return trt_quantized_add_mve_accepts(p) && s->a_steps[3] == 1 && s->b_steps[3] == 1 && n >= MIN_ELEMENTS;
}

/* temp: the two operands' tables, int32 [256] each */
size_t trt_quantized_add_table_mve_temp_bytes(const trt_add_params *p) {
    (void)p;
    return 2 * VALUES * sizeof(int32_t);
}

/* table[x & 255] = the term of x, for every int8 x (four at a time: no group crosses 0). */
static void fill_table(int32_t *table, int32_t zero_point, int32_t multiplier, int32_t shift) {
    for (int32_t x = INT8_MIN; x <= INT8_MAX; x += 4) {
        const int32x4_t v = vreinterpretq_s32_u32(vidupq_n_u32((uint32_t)x, 1));
        vstrwq_s32(table + (uint8_t)x,
                   trt_mve_requantize_s32(vshlq_n_s32(vsubq_n_s32(v, zero_point), TRT_ADD_LEFT_SHIFT), multiplier, shift));
    }
}

typedef struct {
    const trt_add_params *p;
    const int32_t *a_terms, *b_terms;
} tables;

/* The parameters are locals: the stores may alias anything, so they would be read again for every step. */
static void add_row(const void *params, const trt_run *r) {
    const tables *t = params;
    const trt_add_params *p = t->p;
    const uint8_t *a = (const uint8_t *)p->a + r->a, *b = (const uint8_t *)p->b + r->b;
    int8_t *out = p->output + r->out;
    const int32_t *a_terms = t->a_terms, *b_terms = t->b_terms;
    const int32_t out_zp = p->output_zero_point, out_m = p->output_multiplier, out_s = p->output_shift;
    const int32_t lo = p->activation_min, hi = p->activation_max;
    int32_t left = r->n;
    /* whole steps unpredicated (a predicated instruction costs a VPST beside it), then the tail */
    for (; left >= 4; left -= 4, a += 4, b += 4, out += 4) {
        const int32x4_t ta = vldrwq_gather_shifted_offset_s32(a_terms, vldrbq_u32(a));
        const int32x4_t tb = vldrwq_gather_shifted_offset_s32(b_terms, vldrbq_u32(b));
        vstrbq_s32(out, trt_mve_output_vector_s32(vaddq_s32(ta, tb), out_m, out_s, out_zp, lo, hi));
    }
    if (left > 0) {
        const mve_pred16_t pred = vctp32q((uint32_t)left);
        const int32x4_t ta = vldrwq_gather_shifted_offset_z_s32(a_terms, vldrbq_z_u32(a, pred), pred);
        const int32x4_t tb = vldrwq_gather_shifted_offset_z_s32(b_terms, vldrbq_z_u32(b, pred), pred);
        vstrbq_p_s32(out, trt_mve_output_vector_s32(vaddq_s32(ta, tb), out_m, out_s, out_zp, lo, hi), pred);
    }
}

void trt_quantized_add_table_mve(const trt_add_params *p, void *temp) {
    int32_t *a_terms = temp, *b_terms = a_terms + VALUES;
    fill_table(a_terms, p->a_zero_point, p->a_multiplier, p->a_shift);
    fill_table(b_terms, p->b_zero_point, p->b_multiplier, p->b_shift);
    const tables t = {p, a_terms, b_terms};
    trt_broadcast_walk(&p->shape, &t, add_row);
}

#endif
