/*
 * The parameters of the elementwise and data-movement kernels (kernels.h includes this):
 * quantized_add, quantized_mul, quantized_div, minimum, maximum, quantized_activation, softmax,
 * pad, clamp, cat and the reshaping copies. Like every kernel's, they were validated by the
 * operator's bind step (ops/) at load: sizes, strides, offsets, shifts and pointers are in range.
 */
#ifndef TINYRPS_KERNELS_ELEMENTWISE_H
#define TINYRPS_KERNELS_ELEMENTWISE_H

#include <stdint.h>

/*
 * Where the operands of a binary operator are, seen from the output, which is walked in memory
 * order: four nested extents (outermost first; leading ones 1) and, per operand, the element
 * step along each (0 where that operand is broadcast). The bind step (ops/broadcast.c) folds any
 * torch broadcast and dim order into this: the same shape and layout is one extent with steps
 * 1 and 1; a [1, C, 1, 1] operand against an NHWC map is [pixels, C] with steps (0, 1).
 */
#define TRT_BROADCAST_DIMS 4
typedef struct {
    int32_t sizes[TRT_BROADCAST_DIMS];
    int32_t a_steps[TRT_BROADCAST_DIMS];
    int32_t b_steps[TRT_BROADCAST_DIMS];
} trt_broadcast;

typedef struct {
    const int8_t *a, *b;
    int8_t *output;
    trt_broadcast shape;
    /* operand k's value is requantize(((x - zero_point) << 20), multiplier, shift) */
    int32_t a_zero_point, a_multiplier, a_shift;
    int32_t b_zero_point, b_multiplier, b_shift;
    int32_t output_zero_point, output_multiplier, output_shift;
    int32_t activation_min, activation_max;
} trt_add_params;

typedef struct {
    const int8_t *a, *b;
    int8_t *output;
    trt_broadcast shape;
    int32_t a_zero_point, b_zero_point;
    int32_t output_zero_point, output_multiplier, output_shift;
} trt_mul_params;

typedef struct {
    const int8_t *a, *b;
    int8_t *output;
    trt_broadcast shape;
    int32_t a_zero_point, b_zero_point;
    float output_zero_point;      /* (float) output_zero_point */
    float scale;                  /* (float) output_scale: torch multiplies a float32 tensor by it */
} trt_div_params;

/* minimum, maximum: int8 or int32 elements (elem_size 1 or 4), the same dtype on every side. */
typedef struct {
    const void *a, *b;
    void *output;
    trt_broadcast shape;
    int32_t elem_size;
} trt_minmax_params;

typedef struct {
    const int8_t *input;
    int8_t *output;
    const int8_t *lut;            /* [256]: out = lut[x + 128] */
    uint32_t count;
} trt_lut_params;

/* aten::clamp on int8: out = min(max(x, lo), hi), each bound optional (then -128 or 127). */
typedef struct {
    const int8_t *input;
    int8_t *output;
    uint32_t count;
    int32_t lo, hi;
} trt_clamp_params;

/*
 * softmax over one dimension of a dense int8 tensor: `outer` groups of `length` values
 * `inner` elements apart (the dimension's place in memory order), every other element of
 * the output in the same place as in the input.
 */
typedef struct {
    const int8_t *input;
    int8_t *output;
    int32_t outer, length, inner;
    int32_t input_zero_point;
    float input_scale;            /* (float) the scale the reference derives from multiplier and shift */
    float output_zero_point;      /* -128 */
} trt_softmax_params;

/*
 * pad of an int8 tensor, in memory order: four extents of the input (outermost first; leading
 * ones 1), the values added before and after along each, and the fill value.
 */
typedef struct {
    const int8_t *input;
    int8_t *output;
    int32_t in_sizes[4];
    int32_t before[4], after[4];
    int8_t value;
} trt_pad_params;

/*
 * cat along one dimension: in memory order, the output is `outer` rows, each the inputs'
 * slabs one after another (input i contributes slab_bytes[i] per row).
 */
#define TRT_CAT_MAX_INPUTS 8
typedef struct {
    uint8_t *output;
    int32_t inputs, outer;
    const uint8_t *input[TRT_CAT_MAX_INPUTS];
    uint32_t slab_bytes[TRT_CAT_MAX_INPUTS];
} trt_cat_params;

/*
 * squeeze_copy, unsqueeze_copy: the same elements in the same logical order, in another
 * shape. Element i of the row-major flattening sits at sum(index * stride) on each side (its
 * multi-index in that side's shape); `dense` when both sides keep them in that order.
 */
#define TRT_RESHAPE_MAX_RANK 6
typedef struct {
    const uint8_t *input;
    uint8_t *output;
    uint32_t count;
    int32_t elem_size, dense;
    int32_t in_rank, out_rank;
    int32_t in_sizes[TRT_RESHAPE_MAX_RANK], in_strides[TRT_RESHAPE_MAX_RANK];
    int32_t out_sizes[TRT_RESHAPE_MAX_RANK], out_strides[TRT_RESHAPE_MAX_RANK];
} trt_reshape_params;

#endif
