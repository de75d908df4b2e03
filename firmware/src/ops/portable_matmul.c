/* The portable float32 matrix products ExecuTorch's Cortex-M lowering leaves to the CPU: bind steps and
 * variants of aten::mm.out, bmm.out, linear.out and addmm.out (beta and alpha 1). Operands of any
 * strides (a transposed view, a broadcast bias); linear's input and output row-major. */
#include "../kernels/c/kernels_c.h"
#include "operator_table.h"

static trt_status operand(const trt_call *c, uint32_t i, int rank, const trt_tensor **t) {
    trt_status s = trt_arg_tensor(c, i, t);
    if (s != TRT_OK || (s = trt_need_input(c, *t, TRT_FLOAT32)) != TRT_OK) return s;
    if (rank && (*t)->rank != rank) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an operand of another rank in");
    return TRT_OK;
}

static trt_status output(const trt_call *c, uint32_t out_arg, const trt_tensor *const *ins, int n_ins,
                         const trt_tensor **out) {
    trt_status s = trt_need_output(c, out_arg, out, TRT_FLOAT32);
    for (int k = 0; s == TRT_OK && k < n_ins; k++) s = trt_need_disjoint(c, *out, ins[k]);
    return s;
}

/* [batches,] rows x inner times [batches,] inner x cols: the last two dims of a, b and out. */
static trt_status bind_product(const trt_call *c, trt_matmul_params *p, uint64_t *macs, int batched) {
    const int rank = batched ? 3 : 2;
    const trt_tensor *a = NULL, *b = NULL, *out = NULL;
    trt_status s;
    if ((s = operand(c, 0, rank, &a)) != TRT_OK || (s = operand(c, 1, rank, &b)) != TRT_OK) return s;
    const trt_tensor *ins[2] = {a, b};
    if ((s = output(c, 2, ins, 2, &out)) != TRT_OK) return s;
    const int d = rank - 2;
    if (out->rank != rank || a->sizes[d + 1] != b->sizes[d] || out->sizes[d] != a->sizes[d] ||
        out->sizes[d + 1] != b->sizes[d + 1] || (batched && (a->sizes[0] != b->sizes[0] || out->sizes[0] != a->sizes[0])))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shapes that do not multiply in");
    p->a = (const float *)(const void *)a->data;
    p->b = (const float *)(const void *)b->data;
    p->output = (float *)(void *)out->mutable_data;
    p->batches = batched ? a->sizes[0] : 1;
    p->rows = a->sizes[d];
    p->inner = a->sizes[d + 1];
    p->cols = b->sizes[d + 1];
    p->a_batch = batched ? a->strides[0] : 0;
    p->b_batch = batched ? b->strides[0] : 0;
    p->out_batch = batched ? out->strides[0] : 0;
    p->a_row = a->strides[d];
    p->a_inner = a->strides[d + 1];
    p->b_inner = b->strides[d];
    p->b_col = b->strides[d + 1];
    p->out_row = out->strides[d];
    p->out_col = out->strides[d + 1];
    *macs += (uint64_t)p->batches * (uint64_t)p->rows * (uint64_t)p->inner * (uint64_t)p->cols;
    return TRT_OK;
}

static trt_status bind_mm(const trt_call *c, trt_params *p, uint64_t *macs) {
    return bind_product(c, &p->aten_mm, macs, 0);
}
static trt_status bind_bmm(const trt_call *c, trt_params *p, uint64_t *macs) {
    return bind_product(c, &p->aten_bmm, macs, 1);
}

/* linear.out(input, weight, bias?, *, out): out[..., n] = input[..., :] . weight[n, :] + bias[n]; the
 * input's and output's leading dims are rows, both row-major. */
static trt_status bind_linear(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_matmul_params *p = &params->aten_linear;
    const trt_tensor *in = NULL, *w = NULL, *bias = NULL, *out = NULL;
    trt_status s;
    if ((s = operand(c, 0, 0, &in)) != TRT_OK || (s = operand(c, 1, 2, &w)) != TRT_OK ||
        (s = trt_arg_optional_tensor(c, 2, &bias)) != TRT_OK || (bias && (s = operand(c, 2, 1, &bias)) != TRT_OK))
        return s;
    const trt_tensor *ins[3] = {in, w, bias};
    if ((s = output(c, 3, ins, bias ? 3 : 2, &out)) != TRT_OK) return s;
    if (in->rank < 1 || out->rank != in->rank || in->sizes[in->rank - 1] != w->sizes[1] ||
        out->sizes[out->rank - 1] != w->sizes[0] || (bias && bias->sizes[0] != w->sizes[0]))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shapes that do not multiply in");
    for (int d = 0; d + 1 < in->rank; d++)
        if (out->sizes[d] != in->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shapes that do not multiply in");
    if (!trt_is_row_major(in) || !trt_is_row_major(out))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "an input or output not row-major in");
    p->a = (const float *)(const void *)in->data;
    p->b = (const float *)(const void *)w->data;
    p->bias = bias ? (const float *)(const void *)bias->data : NULL;
    p->output = (float *)(void *)out->mutable_data;
    p->batches = 1;
    p->inner = w->sizes[1];
    p->cols = w->sizes[0];
    p->rows = (int32_t)(in->numel / (uint32_t)p->inner);
    p->a_row = p->inner;
    p->a_inner = 1;
    p->b_inner = w->strides[1];
    p->b_col = w->strides[0];
    p->out_row = p->cols;
    p->out_col = 1;
    p->bias_col = bias ? bias->strides[0] : 0;
    *macs += (uint64_t)p->rows * (uint64_t)p->inner * (uint64_t)p->cols;
    return TRT_OK;
}

/* addmm.out(self, mat1, mat2, *, Scalar beta, Scalar alpha, out): mat1 x mat2 + self (broadcast), beta
 * and alpha 1 (another scale is not the order of ExecuTorch's arithmetic this kernel follows). */
static trt_status bind_addmm(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_matmul_params *p = &params->aten_addmm;
    const trt_tensor *self = NULL, *a = NULL, *b = NULL, *out = NULL;
    const trt_value *scale = NULL;
    trt_status s;
    if ((s = operand(c, 0, 0, &self)) != TRT_OK || (s = operand(c, 1, 2, &a)) != TRT_OK ||
        (s = operand(c, 2, 2, &b)) != TRT_OK)
        return s;
    for (uint32_t i = 3; i <= 4; i++) {
        if ((s = trt_arg_value(c, i, &scale)) != TRT_OK) return s;
        if (!((scale->kind == PTE_VALUE_INT && scale->u.i == 1) || (scale->kind == PTE_VALUE_DOUBLE && scale->u.d == 1.0)))
            return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "a beta or alpha other than 1 in");
    }
    const trt_tensor *ins[3] = {self, a, b};
    if ((s = output(c, 5, ins, 3, &out)) != TRT_OK) return s;
    if (out->rank != 2 || a->sizes[1] != b->sizes[0] || out->sizes[0] != a->sizes[0] || out->sizes[1] != b->sizes[1] ||
        self->rank > 2)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shapes that do not multiply in");
    /* self broadcast to the output: right-aligned, a size-1 dim stretches */
    int32_t bias_strides[2] = {0, 0};
    for (int d = 0; d < 2; d++) {
        const int sd = d - (2 - self->rank);
        if (sd < 0 || self->sizes[sd] == 1) continue;
        if (self->sizes[sd] != out->sizes[d]) return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "shapes that do not broadcast in");
        bias_strides[d] = self->strides[sd];
    }
    p->a = (const float *)(const void *)a->data;
    p->b = (const float *)(const void *)b->data;
    p->bias = (const float *)(const void *)self->data;
    p->output = (float *)(void *)out->mutable_data;
    p->batches = 1;
    p->rows = a->sizes[0];
    p->inner = a->sizes[1];
    p->cols = b->sizes[1];
    p->a_row = a->strides[0];
    p->a_inner = a->strides[1];
    p->b_inner = b->strides[0];
    p->b_col = b->strides[1];
    p->out_row = out->strides[0];
    p->out_col = out->strides[1];
    p->bias_row = bias_strides[0];
    p->bias_col = bias_strides[1];
    *macs += (uint64_t)p->rows * (uint64_t)p->inner * (uint64_t)p->cols;
    return TRT_OK;
}

/* Every row shares one kernel and one parameter struct: the union's members of them lie at its start. */
TRT_RUN_ALONE(trt_matmul_f32_c, aten_mm)

static const trt_kernel_variant MM_VARIANTS[] = {
    TRT_C_VARIANT(trt_matmul_f32_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_mm, bind_mm, MM_VARIANTS);

static const trt_kernel_variant BMM_VARIANTS[] = {
    TRT_C_VARIANT(trt_matmul_f32_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_bmm, bind_bmm, BMM_VARIANTS);

static const trt_kernel_variant LINEAR_VARIANTS[] = {
    TRT_C_VARIANT(trt_matmul_f32_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_linear, bind_linear, LINEAR_VARIANTS);

static const trt_kernel_variant ADDMM_VARIANTS[] = {
    TRT_C_VARIANT(trt_matmul_f32_c, NULL, NULL, NULL, NULL)
};
TRT_DEFINE_OPERATOR(aten_addmm, bind_addmm, ADDMM_VARIANTS);
