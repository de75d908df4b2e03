/*
 * Walking the output of a binary elementwise kernel row by row (trt_broadcast, elementwise.h):
 * `row` gets each innermost run of the output, with the element index where each operand's
 * run starts and its step along the run (0: broadcast). The kernels' variants share it; it
 * is inlined, so a kernel's row function is too.
 */
#ifndef TINYRPS_BROADCAST_WALK_H
#define TINYRPS_BROADCAST_WALK_H

#include <stddef.h>

#include "elementwise.h"

typedef struct {
    size_t a, b, out;             /* element indices where the run starts */
    int32_t n;                    /* its length */
    int32_t a_step, b_step;       /* 0 or more */
} trt_run;

static inline __attribute__((always_inline)) void trt_broadcast_walk(const trt_broadcast *s, const void *params,
                                                                     void (*row)(const void *params, const trt_run *r)) {
    trt_run r = {0, 0, 0, s->sizes[3], s->a_steps[3], s->b_steps[3]};
    for (int32_t i0 = 0; i0 < s->sizes[0]; i0++)
        for (int32_t i1 = 0; i1 < s->sizes[1]; i1++)
            for (int32_t i2 = 0; i2 < s->sizes[2]; i2++) {
                r.a = (size_t)i0 * (size_t)s->a_steps[0] + (size_t)i1 * (size_t)s->a_steps[1] +
                      (size_t)i2 * (size_t)s->a_steps[2];
                r.b = (size_t)i0 * (size_t)s->b_steps[0] + (size_t)i1 * (size_t)s->b_steps[1] +
                      (size_t)i2 * (size_t)s->b_steps[2];
                row(params, &r);
                r.out += (size_t)r.n;
            }
}

#endif
