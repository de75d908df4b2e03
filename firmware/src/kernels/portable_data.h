/*
 * The parameters of the portable matrix, creation, selection and gathering kernels (kernels.h
 * includes this): aten::mm, bmm, linear, addmm; full, arange; the comparisons, where, log1p;
 * index.Tensor, repeat, upsample_nearest2d, amax. The bind steps (ops/portable_matmul.c,
 * portable_create.c, portable_select.c, portable_gather.c) checked every size and index; each struct
 * fits the largest kernel parameters (144 bytes on a Cortex-M), so the per-call storage stays as it is.
 */
#ifndef TINYRPS_KERNELS_PORTABLE_DATA_H
#define TINYRPS_KERNELS_PORTABLE_DATA_H

#include <stdint.h>

#include "portable.h"

/*
 * out[batch][row][col] = sum over i of a[batch][row][i] * b[batch][i][col], in float32, i from 0 up
 * (one rounding per product and per addition), then + bias[row][col] when there is a bias. Every
 * operand is read through its own element strides (0 along a broadcast dim).
 */
typedef struct {
    const float *a, *b, *bias;    /* bias: NULL for none */
    float *output;
    int32_t batches, rows, inner, cols;
    int32_t a_batch, a_row, a_inner;
    int32_t b_batch, b_inner, b_col;
    int32_t out_batch, out_row, out_col;
    int32_t bias_row, bias_col;
} trt_matmul_params;

/* What a creation kernel writes into each of `count` elements of the (dense) output. */
enum {
    TRT_CREATE_FULL,     /* value */
    TRT_CREATE_ARANGE    /* start + i * step, in double, then converted */
};

typedef struct {
    uint8_t *output;
    uint8_t out_dtype, op;
    uint32_t count;
    double start, step;           /* full: start is the value (an integer exactly, when integral) */
    int64_t start_int;            /* full of an integer Scalar: the value as an integer */
    int32_t integral;             /* full: the Scalar is an integer */
} trt_create_params;

/* What a selection kernel computes of its operands: a comparison (1 or 0 in the output's dtype),
 * where (cond ? a : b), log1p. A Scalar operand `b` is held in the parameters (b_is_scalar). */
enum {
    TRT_SEL_EQ, TRT_SEL_NE, TRT_SEL_LT, TRT_SEL_LE, TRT_SEL_GT, TRT_SEL_GE,
    TRT_SEL_WHERE,
    TRT_SEL_LOG1P
};

typedef struct {
    const uint8_t *a, *b, *cond;  /* cond: where's condition; b: NULL for a Scalar or a unary op */
    uint8_t *output;
    uint8_t a_dtype, b_dtype, out_dtype, op;
    uint8_t float_compute, b_is_scalar, cond_dtype, rank;   /* float_compute: compare in float32 (else int64) */
    int32_t sizes[TRT_PORTABLE_MAX_RANK];
    int32_t a_strides[TRT_PORTABLE_MAX_RANK], b_strides[TRT_PORTABLE_MAX_RANK];
    int32_t out_strides[TRT_PORTABLE_MAX_RANK];
    union {
        int32_t cond_strides[TRT_PORTABLE_MAX_RANK];   /* where */
        struct {
            float f;                                    /* a Scalar operand, as float32 */
            int32_t pad;
            int64_t i;                                  /* ... and as an integer */
        } scalar;
    } u;
} trt_select_params;

/* What a gathering kernel copies or reduces. */
enum {
    TRT_GATHER_INDEX,     /* out[o][j][i] = in[o][index[j]][i] (dense, row-major) */
    TRT_GATHER_REPEAT,    /* out[..., k, ...] = in[..., k % in_size, ...] per dim */
    TRT_GATHER_NEAREST,   /* out[n][c][y][x] = in[n][c][min(floor(y * scale_h), H - 1)][...x...] */
    TRT_GATHER_AMAX       /* out = the largest element over the reduced dims (NaN wins) */
};

typedef struct {
    const uint8_t *input;
    uint8_t *output;
    const uint8_t *index;         /* index: the constant int32 / int64 indices, checked at bind */
    uint8_t elem_size, op, dtype, index_is_64;
    int32_t rank;
    uint32_t reduced;             /* amax: bit d, dim d is reduced */
    int32_t sizes[TRT_PORTABLE_MAX_RANK];      /* the output's (amax: the input's) logical sizes */
    int32_t in_sizes[TRT_PORTABLE_MAX_RANK];   /* repeat: the input's, aligned to the output's dims; nearest: H, W */
    int32_t in_strides[TRT_PORTABLE_MAX_RANK], out_strides[TRT_PORTABLE_MAX_RANK];
    float scale_h, scale_w;       /* nearest */
    int32_t outer, count, inner_bytes, dim_size;   /* index */
} trt_gather_params;

#endif
