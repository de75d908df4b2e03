/*
 * One program through the runtime as an application uses it, every promise of the API checked: what
 * the fuzz target fuzz-pte (fuzz/fuzz_pte.c) and tinyrps-mutate (mutation_sweep.c) do with each
 * program they make. Built with the sanitizers, a read outside the program or the arena aborts with
 * their report; a broken promise of tinyrps_runtime.h aborts too.
 */
#ifndef TINYRPS_CHECKED_RUN_H
#define TINYRPS_CHECKED_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "tinyrps_runtime.h"

/* Load pte (len bytes, 16-byte aligned, as a board's model slot is) into an arena of exactly the size
 * it asks for (a first load without one sizes it, as tinyrps-native does; a need above max_arena is
 * left at that, as a board's fixed arena would refuse it), and if it loads, run it `runs` times: first
 * on a fixed pattern in every input, then on zeros, each time reading every output and raw int8 value
 * back. Returns the load's status. */
trt_status checked_load_and_run(trt_program *prog, const uint8_t *pte, size_t len, size_t max_arena, int runs);

#endif
