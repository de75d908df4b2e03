/* The rows of a broadcast binary kernel's output (broadcast_walk.h). */
#include "broadcast_walk.h"

void trt_broadcast_walk(const trt_broadcast *s, const void *params, void (*row)(const void *params, const trt_run *r)) {
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
