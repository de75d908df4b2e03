/*
 * The parameters of an Ethos-U delegate's call (ethos_u_delegate.c), in builds with TRT_ETHOS_U=1:
 * a member of trt_params (ops/operator_table.h), so that the union holds them whichever operators
 * a build keeps (a deploy library of an Ethos-U program keeps only quantize and dequantize).
 */
#ifndef TINYRPS_ETHOS_U_PARAMS_H
#define TINYRPS_ETHOS_U_PARAMS_H

#include <stdint.h>

#define ETHOS_U_MAX_IO 4            /* delegate inputs and outputs together */

typedef struct {
    uint8_t *arena_data;            /* the delegate argument's bytes in the arena */
    uint32_t offset, bytes;         /* its place in the scratch */
} ethos_u_io;

typedef struct {
    const uint8_t *cmd, *weights;
    uint32_t cmd_bytes, weight_bytes, scratch_bytes, fast_bytes;
    int32_t *status;                /* the last invoke's trt_status, in the call's workspace */
    uint8_t n_inputs, n_outputs;
    ethos_u_io io[ETHOS_U_MAX_IO];  /* inputs, then outputs */
} ethos_u_params;

#endif
