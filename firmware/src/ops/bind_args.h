/*
 * Checking one kernel call's arguments against its operator's schema
 * (executorch/backends/cortex_m/ops/operators.py, dim_order_ops), for the bind steps
 * of ops/<operator>.c.
 *
 * A kernel call's args are value indices: the schema's arguments in order (the `out`
 * tensor last) followed by the returned tensor, which must be `out` again. Every
 * helper returns TRT_OK or a status with a reason naming the operator.
 */
#ifndef TINYRPS_BIND_ARGS_H
#define TINYRPS_BIND_ARGS_H

#include <stdint.h>

#include "../load_detail.h"
#include "../pte_reader.h"   /* PTE_VALUE_* kinds */
#include "../values.h"
#include "operator_selection.h"

/* Whether the build keeps an operator whose `out` is a Tensor[] (aten::split_with_sizes_copy): the
 * loader then binds such a call once per item, each binding writing that item (runtime.c, load_call). A
 * build without one compiles none of it. */
#if !defined(TRT_SELECTION) || TRT_WITH_aten_split_with_sizes_copy
#define TRT_LIST_OUTS 1
#else
#define TRT_LIST_OUTS 0
#endif
/* Whether the build keeps an operator taking a Tensor?[] (aten::index.Tensor): the loader then resolves
 * one (a None item's entry in list_items is -1). */
#if !defined(TRT_SELECTION) || TRT_WITH_aten_index
#define TRT_OPTIONAL_LISTS 1
#else
#define TRT_OPTIONAL_LISTS 0
#endif

/* Ranges that keep every kernel's index and integer arithmetic far from overflow. */
#define TRT_MAX_SPATIAL_STEP 1024      /* stride, padding, dilation */
#define TRT_MAX_OFFSET 255             /* zero-point offsets: int8/uint8 zero points fit easily */
#define TRT_MAX_SHIFT 31
#define TRT_MAX_FLOAT_EXACT_INT 16777216  /* 2^24: integers a float holds exactly */

typedef struct {
    const trt_value_tables *tables;
    trt_detail *detail;
    const int32_t *args;
    uint32_t n_args;
    const char *op;            /* for error messages */
    uint32_t *unread;          /* bit i: the kernels never read argument i (trt_arg_scratch); NULL: none */
#if TRT_LIST_OUTS
    uint16_t out_item;         /* a Tensor[] out: the item this binding writes (its tensor is the call's out) */
#endif
} trt_call;

#if TRT_LOAD_DETAIL
trt_status trt_bad_arg(const trt_call *c, trt_status status, const char *what);
#else
static inline trt_status trt_bad_arg(const trt_call *c, trt_status status, const char *what) {
    (void)c, (void)what;
    return status;
}
#endif

/* Scalars and lists. */
trt_status trt_arg_value(const trt_call *c, uint32_t i, const trt_value **v);
trt_status trt_arg_tensor(const trt_call *c, uint32_t i, const trt_tensor **t);
/* A scratch tensor planned for another runtime's kernels: a tensor, which no kernel here reads (the
 * loader's liveness of the memory plan leaves it out: runtime.c). */
trt_status trt_arg_scratch(const trt_call *c, uint32_t i, const trt_tensor **t);
trt_status trt_arg_optional_tensor(const trt_call *c, uint32_t i, const trt_tensor **t);   /* NULL for None */
trt_status trt_arg_int(const trt_call *c, uint32_t i, int64_t lo, int64_t hi, int32_t *out);
trt_status trt_arg_double(const trt_call *c, uint32_t i, double *out);
trt_status trt_arg_bool(const trt_call *c, uint32_t i, int *out);
/* An int[] of one or two items in [lo, hi]; one item stands for both (torch's convention). */
trt_status trt_arg_pair(const trt_call *c, uint32_t i, int64_t lo, int64_t hi, int32_t out[2]);
/* Element 0 of a non-empty int[] (per-tensor parameters passed as lists). */
trt_status trt_arg_list_first(const trt_call *c, uint32_t i, int64_t lo, int64_t hi, int32_t *out);

/* Tensors. */
trt_status trt_need_input(const trt_call *c, const trt_tensor *t, uint8_t dtype);
/* Weights, biases and requantization parameters are constants, checked once here. */
trt_status trt_need_constant(const trt_call *c, const trt_tensor *t, uint8_t dtype);
/* Argument out_arg is the planned, non-empty `out` tensor, and the call returns it. */
trt_status trt_need_output(const trt_call *c, uint32_t out_arg, const trt_tensor **out, uint8_t dtype);
trt_status trt_need_disjoint(const trt_call *c, const trt_tensor *out, const trt_tensor *in);
trt_status trt_need_act_range(const trt_call *c, uint32_t min_arg, uint32_t max_arg, int32_t *lo, int32_t *hi);
/* Per-channel int32 multipliers and shifts (shifts in [-31, 31]), one per output channel. */
trt_status trt_need_requant(const trt_call *c, uint32_t mult_arg, uint32_t shift_arg, int32_t channels,
                            const int32_t **mult, const int32_t **shift);
trt_status trt_need_bias(const trt_call *c, uint32_t arg, int32_t channels, const int32_t **bias);
/* quantize_per_tensor's and dequantize_per_tensor's arguments: the input (in_dtype) at 0, its
 * (scale, zero_point, quant_min, quant_max, dtype int8) at 1..5, the output (out_dtype) at 6,
 * disjoint from the input and in its layout. */
typedef struct {
    double scale;
    int32_t zero_point, quant_min, quant_max;
} trt_qparams;
trt_status trt_bind_quantization(const trt_call *c, uint8_t in_dtype, uint8_t out_dtype, const trt_tensor **in,
                                 const trt_tensor **out, trt_qparams *q);

/* Layouts. */
/* Dense in `order`, a physical order of logical dims: its strides are the ones that order gives its
 * sizes (size-1 dims may sit anywhere). */
int trt_dense_in_order(const trt_tensor *t, const uint8_t *order);
int trt_is_row_major(const trt_tensor *t);   /* dense in logical order; size-1 dims may sit anywhere */
int trt_is_nhwc(const trt_tensor *t);
int trt_same_layout(const trt_tensor *a, const trt_tensor *b);
/* A 4-D activation whose bytes are [batches][height][width][channels]: a legacy operator's
 * tensor is NCHW in logical order with the channels-last dim order; an _nhwc operator's is
 * NHWC in logical order and row-major. Gives the sizes in NHWC order. */
trt_status trt_need_activation(const trt_call *c, const trt_tensor *t, int nhwc_op, int32_t nhwc[4]);

/* out = (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1, or 0 when the window does not fit;
 * stride and dilation 1 .. TRT_MAX_SPATIAL_STEP, pad 0 .. TRT_MAX_SPATIAL_STEP (trt_arg_pair checks them). */
int32_t trt_pooled_extent(int32_t in, int32_t kernel, int32_t stride, int32_t pad, int32_t dilation);

#endif
