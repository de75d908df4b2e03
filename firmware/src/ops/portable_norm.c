/* The portable float32 normalizations ExecuTorch's Cortex-M lowering leaves to the CPU: bind steps and
 * variants of aten::_native_batch_norm_legit_no_training.out and aten::native_layer_norm.out, on an
 * input of any dim order. Each call has three outputs (out, then the statistics) and returns them; the
 * loader takes the last, its next-to-last argument, as the call's `out`, and holds the values' bytes
 * live for the calls that read them (as a max pool's values: runtime.c). */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

static int same_place(const trt_tensor *a, const trt_tensor *b) {
    return a->in_arena && b->in_arena && a->arena_offset == b->arena_offset && a->nbytes == b->nbytes &&
           a->dtype == b->dtype;
}

/* The outputs at out_arg .. out_arg + 2 (float32, planned, disjoint from the input) are the last
 * arguments but the return, which lists them in order; `out` has the input's shape. */
static trt_status outputs(const trt_call *c, uint32_t out_arg, const trt_tensor *in, const trt_tensor *outs[3]) {
    const trt_value *ret = NULL;
    trt_status s;
    if (c->n_args != out_arg + 4) return trt_bad_arg(c, TRT_ERR_MALFORMED, "wrong argument count in");
    for (uint32_t k = 0; k < 3; k++) {
        if ((s = trt_arg_tensor(c, out_arg + k, &outs[k])) != TRT_OK) return s;
        if (outs[k]->dtype != TRT_FLOAT32 || !outs[k]->in_arena)
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an output not a planned float32 tensor in");
        if ((s = trt_need_disjoint(c, outs[k], in)) != TRT_OK) return s;
    }
    if ((s = trt_arg_value(c, out_arg + 3, &ret)) != TRT_OK) return s;
    if (ret->kind != PTE_VALUE_TENSOR_LIST || ret->count != 3) return trt_bad_arg(c, TRT_ERR_MALFORMED, "return value is not the outputs in");
    for (uint32_t k = 0; k < 3; k++)
        if (!same_place(&c->tables->tensors[c->tables->list_items[ret->index + k]], outs[k]))
            return trt_bad_arg(c, TRT_ERR_MALFORMED, "return value is not the outputs in");
    if (trt_need_disjoint(c, outs[0], outs[1]) != TRT_OK || trt_need_disjoint(c, outs[0], outs[2]) != TRT_OK ||
        trt_need_disjoint(c, outs[1], outs[2]) != TRT_OK)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "outputs overlap in");
    if (outs[0]->rank != in->rank || outs[0]->numel == 0) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the input in");
    for (int d = 0; d < in->rank; d++)
        if (outs[0]->sizes[d] != in->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "output shape does not match the input in");
    return TRT_OK;
}

/* A float32 tensor of `count` elements in row-major order (NULL for None when optional). */
static trt_status operand(const trt_call *c, uint32_t i, int optional, uint32_t count, const float **data) {
    const trt_tensor *t = NULL;
    trt_status s = optional ? trt_arg_optional_tensor(c, i, &t) : trt_arg_tensor(c, i, &t);
    if (s != TRT_OK) return s;
    *data = NULL;
    if (!t) return TRT_OK;
    if ((s = trt_need_input(c, t, TRT_FLOAT32)) != TRT_OK) return s;
    if (t->numel != count || !trt_is_row_major(t))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a weight or statistics tensor of the wrong shape in");
    *data = (const float *)(const void *)t->data;
    return TRT_OK;
}

/* The input (argument 0): float32, of 1 .. TRT_PORTABLE_MAX_RANK dims; its shape and out's strides. */
static trt_status input(const trt_call *c, trt_norm_params *p, const trt_tensor **in) {
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, in)) != TRT_OK || (s = trt_need_input(c, *in, TRT_FLOAT32)) != TRT_OK) return s;
    if ((*in)->rank < 1 || (*in)->rank > TRT_PORTABLE_MAX_RANK)
        return trt_bad_arg(c, TRT_ERR_LIMIT, "an input rank the runtime does not take in");
    p->rank = (*in)->rank;
    for (int d = 0; d < p->rank; d++) {
        p->sizes[d] = (*in)->sizes[d];
        p->in_strides[d] = (*in)->strides[d];
    }
    p->input = (const float *)(const void *)(*in)->data;
    return TRT_OK;
}

static void set_outputs(trt_norm_params *p, const trt_tensor *outs[3]) {
    for (int d = 0; d < p->rank; d++) p->out_strides[d] = outs[0]->strides[d];
    p->output = (float *)(void *)outs[0]->mutable_data;
}

/* (input, weight?, bias?, running_mean, running_var, momentum, eps, *, out, save_mean, save_invstd): the
 * statistics outputs are left as ExecuTorch leaves them, empty. */
static trt_status bind_batch_norm(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_norm_params *p = &params->aten_batch_norm_no_training;
    const trt_tensor *in = NULL, *outs[3] = {NULL, NULL, NULL};
    double momentum = 0.0;
    trt_status s;
    (void)macs;
    if ((s = input(c, p, &in)) != TRT_OK) return s;
    if (in->rank < 2) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an input without a channel dim in");
    const uint32_t channels = (uint32_t)in->sizes[1];
    if ((s = operand(c, 1, 1, channels, &p->weight)) != TRT_OK || (s = operand(c, 2, 1, channels, &p->bias)) != TRT_OK ||
        (s = operand(c, 3, 0, channels, &p->running_mean)) != TRT_OK ||
        (s = operand(c, 4, 0, channels, &p->running_var)) != TRT_OK ||
        (s = trt_arg_double(c, 5, &momentum)) != TRT_OK || (s = trt_arg_double(c, 6, &p->eps)) != TRT_OK ||
        (s = outputs(c, 7, in, outs)) != TRT_OK)
        return s;
    if (outs[1]->numel != 0 || outs[2]->numel != 0)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "non-empty save_mean or save_invstd in");
    p->op = TRT_NORM_BATCH;
    p->split = 2;
    set_outputs(p, outs);
    return TRT_OK;
}

/* (input, normalized_shape, weight?, bias?, eps, *, out, mean, rstd): normalized_shape is the input's
 * last dims; mean and rstd hold one value per row, dense. */
static trt_status bind_layer_norm(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_norm_params *p = &params->aten_layer_norm;
    const trt_tensor *in = NULL, *outs[3] = {NULL, NULL, NULL};
    const trt_value *shape = NULL;
    trt_status s;
    (void)macs;
    if ((s = input(c, p, &in)) != TRT_OK || (s = trt_arg_value(c, 1, &shape)) != TRT_OK) return s;
    if (shape->kind != PTE_VALUE_INT_LIST || shape->count < 1 || shape->count > in->rank)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a normalized_shape that is not the input's last dims in");
    p->split = in->rank - (int32_t)shape->count;
    uint32_t normalized = 1;
    for (int d = p->split; d < in->rank; d++) {
        if (c->tables->list_items[shape->index + (uint32_t)(d - p->split)] != in->sizes[d])
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a normalized_shape that is not the input's last dims in");
        normalized *= (uint32_t)in->sizes[d];
    }
    const uint32_t rows = in->numel / (normalized ? normalized : 1);
    if ((s = operand(c, 2, 1, normalized, &p->weight)) != TRT_OK || (s = operand(c, 3, 1, normalized, &p->bias)) != TRT_OK ||
        (s = trt_arg_double(c, 4, &p->eps)) != TRT_OK || (s = outputs(c, 5, in, outs)) != TRT_OK)
        return s;
    for (int k = 1; k < 3; k++)
        if (outs[k]->numel != rows || !trt_is_row_major(outs[k]))
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a mean or rstd output not of one value per row in");
    p->op = TRT_NORM_LAYER;
    p->save_mean = (float *)(void *)outs[1]->mutable_data;
    p->save_rstd = (float *)(void *)outs[2]->mutable_data;
    set_outputs(p, outs);
    return TRT_OK;
}

/* Both rows share one kernel and one parameter struct: the union's members of them lie at its start. */
TRT_RUN_ALONE(trt_norm_c, aten_batch_norm_no_training)

static const trt_kernel_variant BATCH_NORM_VARIANTS[] = {
    TRT_C_VARIANT(trt_norm_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_batch_norm_no_training, bind_batch_norm, BATCH_NORM_VARIANTS);

static const trt_kernel_variant LAYER_NORM_VARIANTS[] = {
    TRT_C_VARIANT(trt_norm_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_layer_norm, bind_layer_norm, LAYER_NORM_VARIANTS);
