/* cortex_m::quantized_batch_matmul.out(Tensor lhs, int lhs_zero_point, Tensor rhs_transposed,
 * int rhs_zero_point, int output_zero_point, int output_multiplier, int output_shift,
 * Tensor scratch, *, Tensor(a!) out): bind step and variants (the zero points are offsets, the
 * negated zero points, as CMSIS-NN passes them). */
#include "../kernels/batch_matmul.h"
#include "../kernels/c/kernels_c.h"
#include "../kernels/dsp/kernels_dsp.h"
#include "../kernels/mve/kernels_mve.h"
#include "operator_table.h"

static int is_rank3_row_major(const trt_tensor *t) { return t->rank == 3 && trt_is_row_major(t); }

static trt_status bind(const trt_call *c, trt_params *params, uint64_t *macs) {
    trt_batch_matmul_params *p = &params->quantized_batch_matmul;
    trt_linear_params *q = &p->product;
    const trt_tensor *lhs = NULL, *rhs = NULL, *out = NULL, *scratch = NULL;
    trt_status s;
    if ((s = trt_arg_tensor(c, 0, &lhs)) != TRT_OK || (s = trt_need_input(c, lhs, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_int(c, 1, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &q->input_offset)) != TRT_OK ||
        (s = trt_arg_tensor(c, 2, &rhs)) != TRT_OK || (s = trt_need_input(c, rhs, TRT_INT8)) != TRT_OK ||
        (s = trt_arg_int(c, 3, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &q->filter_offset)) != TRT_OK ||
        (s = trt_arg_int(c, 4, -TRT_MAX_OFFSET, TRT_MAX_OFFSET, &q->output_offset)) != TRT_OK ||
        (s = trt_arg_int(c, 5, INT32_MIN, INT32_MAX, &q->multiplier)) != TRT_OK ||
        (s = trt_arg_int(c, 6, -TRT_MAX_SHIFT, TRT_MAX_SHIFT, &q->shift)) != TRT_OK ||
        (s = trt_arg_scratch(c, 7, &scratch)) != TRT_OK || (s = trt_need_output(c, 8, &out, TRT_INT8)) != TRT_OK ||
        (s = trt_need_disjoint(c, out, lhs)) != TRT_OK || (s = trt_need_disjoint(c, out, rhs)) != TRT_OK)
        return s;
    p->rhs_constant = !rhs->in_arena;
    if (p->rhs_constant && (s = trt_need_constant(c, rhs, TRT_INT8)) != TRT_OK) return s;
    if (!is_rank3_row_major(lhs) || !is_rank3_row_major(rhs) || !is_rank3_row_major(out))
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "batch_matmul tensors not [batch, rows, cols] row-major in");
    p->batches = lhs->sizes[0];
    q->rows = lhs->sizes[1];
    q->depth = lhs->sizes[2];
    q->out_features = rhs->sizes[1];
    if (p->batches < 1 || q->rows < 1 || q->depth < 1 || q->out_features < 1 || rhs->sizes[0] != p->batches ||
        rhs->sizes[2] != q->depth || out->sizes[0] != p->batches || out->sizes[1] != q->rows ||
        out->sizes[2] != q->out_features)
        return trt_bad_arg(c, TRT_ERR_BAD_TENSOR, "batch_matmul shapes do not match in");
    if (q->depth > TRT_MAX_REDUCTION) return trt_bad_arg(c, TRT_ERR_LIMIT, "reduction too long in");
    q->activation_min = -128;
    q->activation_max = 127;
    q->bias = NULL;
    q->kernel_sum = NULL;
    q->weight_sums = NULL;
    p->lhs = (const int8_t *)(const void *)lhs->data;
    p->rhs = (const int8_t *)(const void *)rhs->data;
    p->output = (int8_t *)(void *)out->mutable_data;
    p->rhs_sums = NULL;
    *macs += (uint64_t)p->batches * q->rows * (uint64_t)q->out_features * (uint64_t)q->depth;
    return TRT_OK;
}

TRT_BYTES(trt_batch_matmul_scratch_bytes, quantized_batch_matmul)
TRT_PREPARE(trt_batch_matmul_prepare, quantized_batch_matmul)
TRT_BYTES(trt_batch_matmul_sums_bytes, quantized_batch_matmul)

/* Each variant runs its ISA's linear kernel per batch (trt_batch_matmul_run). */
TRT_ADAPTER void linear_mve(const trt_linear_params *p, void *temp) { (void)temp; trt_linear_mve(p); }
TRT_ADAPTER void batch_matmul_mve_p(const trt_params *p, void *temp) { trt_batch_matmul_run(&p->quantized_batch_matmul, temp, linear_mve); }
TRT_ADAPTER size_t dsp_temp(const trt_params *p) {
    return trt_batch_matmul_sums_bytes_p(p) + trt_linear_dsp_temp_bytes(&p->quantized_batch_matmul.product);
}
TRT_ADAPTER void batch_matmul_dsp_p(const trt_params *p, void *temp) { trt_batch_matmul_run(&p->quantized_batch_matmul, temp, trt_linear_dsp); }
TRT_ADAPTER void linear_c(const trt_linear_params *p, void *temp) { (void)temp; trt_linear_c(p); }
TRT_ADAPTER void batch_matmul_c_p(const trt_params *p, void *temp) { trt_batch_matmul_run(&p->quantized_batch_matmul, temp, linear_c); }

static const trt_kernel_variant VARIANTS[] = {
    TRT_MVE_VARIANT(batch_matmul_mve, NULL, trt_batch_matmul_scratch_bytes_p, trt_batch_matmul_prepare_p, trt_batch_matmul_sums_bytes_p)
    TRT_DSP_VARIANT(batch_matmul_dsp, NULL, trt_batch_matmul_scratch_bytes_p, trt_batch_matmul_prepare_p, dsp_temp)
    TRT_C_VARIANT(batch_matmul_c, NULL, trt_batch_matmul_scratch_bytes_p, trt_batch_matmul_prepare_p, trt_batch_matmul_sums_bytes_p)
};

TRT_DEFINE_OPERATOR(quantized_batch_matmul, bind, VARIANTS);
