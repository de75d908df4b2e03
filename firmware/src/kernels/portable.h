/*
 * The parameters of the portable operators' kernels: what ExecuTorch's Cortex-M lowering leaves to
 * the CPU (elementwise arithmetic and activations, reductions, softmax, copies and casts), on any
 * dtype the bind step admits and on tensors of any shape, broadcast and dim order (kernels.h
 * includes this). The bind steps (ops/portable_*.c) folded every operand into strides of the
 * output's logical index: a kernel walks that index and reads and writes through them.
 */
#ifndef TINYRPS_KERNELS_PORTABLE_H
#define TINYRPS_KERNELS_PORTABLE_H

#include <stdint.h>

#define TRT_PORTABLE_MAX_RANK 6

/* What a pointwise kernel computes of its operands a (and b). */
enum {
    TRT_PW_ADD,        /* a + alpha * b */
    TRT_PW_SUB,        /* a - alpha * b */
    TRT_PW_MUL,        /* a * b */
    TRT_PW_DIV,        /* a / b, in float */
    TRT_PW_HARDTANH,   /* min(max(a, lo), hi) */
    TRT_PW_SIGMOID,    /* 1 / (1 + exp(-a)) */
    TRT_PW_TANH,
    TRT_PW_ABS,
    TRT_PW_NEG,
    TRT_PW_EXP,
    TRT_PW_POW,        /* pow(a, exponent) */
    TRT_PW_COPY,       /* a, converted to the output's dtype */
    TRT_PW_LEAKY_RELU, /* a > 0 ? a : a * alpha */
    TRT_PW_HARDSWISH,  /* a * min(max(a + 3, 0), 6) / 6 */
    TRT_PW_HARDSIGMOID,/* min(max(a + 3, 0), 6) / 6 */
    TRT_PW_ELU         /* a > 0 ? a * hi : expm1(a * exponent) * lo (hi: scale, lo: alpha * scale, exponent: input_scale) */
};

/*
 * out[i] = f(a[i], b[i]) over the output's logical index i (rank dims, sizes). Each operand's
 * element is at the dot product of i with its strides (elements; 0 along a broadcast dim), the
 * output's likewise. Integer outputs are computed in int64 and wrap to their width; float32
 * outputs in float.
 */
typedef struct {
    const uint8_t *a, *b;           /* b: NULL for a unary operator */
    uint8_t *output;
    uint8_t a_dtype, b_dtype, out_dtype, op;
    int32_t rank;
    int32_t sizes[TRT_PORTABLE_MAX_RANK];
    int32_t a_strides[TRT_PORTABLE_MAX_RANK], b_strides[TRT_PORTABLE_MAX_RANK];
    int32_t out_strides[TRT_PORTABLE_MAX_RANK];
    float alpha, lo, hi, exponent;  /* float outputs */
    int32_t alpha_int, lo_int, hi_int;   /* integer outputs (the bind step refuses scalars beyond int32) */
} trt_pointwise_params;

/* What a reduction kernel computes along its reduced dims. */
enum {
    TRT_REDUCE_SUM,
    TRT_REDUCE_MEAN,
    TRT_REDUCE_SOFTMAX,       /* one reduced dim; the output has the input's shape */
    TRT_REDUCE_LOG_SOFTMAX
};

/*
 * A float32 reduction over the dims set in `reduced` of the input's logical shape. The output
 * element of an input index is at its dot product with out_strides (0 along a summed dim).
 */
typedef struct {
    const float *input;
    float *output;
    int32_t op, rank;
    uint32_t reduced;               /* bit d: dim d is reduced */
    uint32_t count;                 /* elements reduced into each output (mean's divisor) */
    int32_t sizes[TRT_PORTABLE_MAX_RANK];
    int32_t in_strides[TRT_PORTABLE_MAX_RANK], out_strides[TRT_PORTABLE_MAX_RANK];
} trt_reduce_params;

#endif
