/*
 * The portable float32 normalizations: aten::_native_batch_norm_legit_no_training.out and
 * aten::native_layer_norm.out, on tensors of any dim order.
 *
 * Arithmetic (ExecuTorch's portable kernels), in float32 unless said:
 *   batch norm  invstd = (float)(1.0 / sqrt((double)var[c] + eps)), in double;
 *               out = (x - mean[c]) * invstd * weight[c] + bias[c], left to right
 *   layer norm  s = 0; s += x, q = 0; q += x * x over the row in order (the last dim fastest);
 *               mean = s / n; var = q / n - mean * mean; std = sqrtf(var + (float)eps);
 *               out = (x - mean) / std * weight[j] + bias[j]; save_mean = mean,
 *               save_rstd = (float)(1.0 / std), in double
 * A missing weight is 1 and a missing bias 0, multiplied and added as the reference does (a -0.0 plus
 * 0 is +0.0). Every step is one IEEE operation (sqrt and sqrtf are correctly rounded), so the results
 * are the reference's bits.
 */
#include <math.h>

#include "kernels_c.h"

/* The next logical index of dims [first, last) (the last fastest), moving *in_at and *out_at; 0 at the end. */
static int next_index(const trt_norm_params *p, int32_t first, int32_t last, int32_t *index, size_t *in_at,
                      size_t *out_at) {
    for (int32_t d = last - 1; d >= first; d--) {
        *in_at += (size_t)p->in_strides[d];
        *out_at += (size_t)p->out_strides[d];
        if (++index[d] < p->sizes[d]) return 1;
        *in_at -= (size_t)p->in_strides[d] * (size_t)index[d];
        *out_at -= (size_t)p->out_strides[d] * (size_t)index[d];
        index[d] = 0;
    }
    return 0;
}

/* One row of batch norm: every element of channel c at the row's offsets. */
static void batch_row(const trt_norm_params *p, int32_t c, size_t in_row, size_t out_row) {
    const float mean = p->running_mean[c];
    const float invstd = (float)(1.0 / sqrt((double)p->running_var[c] + p->eps));
    const float weight = p->weight ? p->weight[c] : 1.0f;
    const float bias = p->bias ? p->bias[c] : 0.0f;
    int32_t index[TRT_PORTABLE_MAX_RANK] = {0};
    size_t in_at = in_row, out_at = out_row;
    do p->output[out_at] = (p->input[in_at] - mean) * invstd * weight + bias;
    while (next_index(p, p->split, p->rank, index, &in_at, &out_at));
}

/* One row of layer norm, the row-th: two passes over it, the sums, then the output. */
static void layer_row(const trt_norm_params *p, uint32_t row, size_t in_row, size_t out_row) {
    int32_t index[TRT_PORTABLE_MAX_RANK] = {0};
    size_t in_at = in_row, out_at = out_row;
    uint32_t n = 0;
    float s = 0.0f, q = 0.0f;
    do {
        const float x = p->input[in_at];
        s += x;
        q += x * x;
        n++;
    } while (next_index(p, p->split, p->rank, index, &in_at, &out_at));
    const float mean = s / (float)n;
    const float var = q / (float)n - mean * mean;
    const float std = sqrtf(var + (float)p->eps);
    in_at = in_row, out_at = out_row;
    for (uint32_t j = 0;; j++) {
        const float weight = p->weight ? p->weight[j] : 1.0f;
        const float bias = p->bias ? p->bias[j] : 0.0f;
        p->output[out_at] = (p->input[in_at] - mean) / std * weight + bias;
        if (!next_index(p, p->split, p->rank, index, &in_at, &out_at)) break;
    }
    p->save_mean[row] = mean;
    p->save_rstd[row] = (float)(1.0 / (double)std);
}

void trt_norm_c(const trt_norm_params *p) {
    int32_t index[TRT_PORTABLE_MAX_RANK] = {0};
    size_t in_row = 0, out_row = 0;
    uint32_t row = 0;
    do {
        if (p->op == TRT_NORM_BATCH) batch_row(p, index[1], in_row, out_row);
        else layer_row(p, row, in_row, out_row);
        row++;
    } while (next_index(p, 0, p->split, index, &in_row, &out_row));
}
