/*
 * Walking the output of a binary elementwise kernel row by row (trt_broadcast, elementwise.h):
 * `row` gets each innermost run of the output, with the element index where each operand's
 * run starts and its step along the run (0: broadcast). The variants share it (broadcast_walk.c);
 * one call per row, and a row is the whole output when both operands have its shape.
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

void trt_broadcast_walk(const trt_broadcast *s, const void *params, void (*row)(const void *params, const trt_run *r));

#endif
