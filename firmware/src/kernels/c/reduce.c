/*
 * The portable float32 reductions: aten::sum.IntList_out, aten::mean.out, aten::_softmax.out and
 * aten::_log_softmax.out, over any dims of a tensor of any dim order.
 *
 * Arithmetic (ExecuTorch's portable kernels), in float32:
 *   sum    s = 0; s += x for the reduced elements in logical row-major order (the last dim fastest)
 *   mean   that sum / (float)count
 *   softmax      m = the largest x; s = sum of expf(x - m) in order; out = expf(x - m) / s
 *   log_softmax  m as above; s likewise; out = (x - m) - logf(s)
 * The sums follow the reference's order, so sum and mean give its bits; softmax and log_softmax
 * use the C library's expf and logf.
 */
#include <math.h>

#include "kernels_c.h"

/* The offsets of the next index over the dims listed in dims[0..n) (the last fastest); 0 at the end. */
static int next_index(const trt_reduce_params *p, const int32_t *dims, int32_t n, int32_t *index, size_t *in_at,
                      size_t *out_at) {
    for (int32_t k = n - 1; k >= 0; k--) {
        const int32_t d = dims[k];
        *in_at += (size_t)p->in_strides[d];
        *out_at += (size_t)p->out_strides[d];
        if (++index[k] < p->sizes[d]) return 1;
        *in_at -= (size_t)p->in_strides[d] * (size_t)index[k];
        *out_at -= (size_t)p->out_strides[d] * (size_t)index[k];
        index[k] = 0;
    }
    return 0;
}

static void softmax_line(const trt_reduce_params *p, const float *in, float *out, int32_t d) {
    const int32_t n = p->sizes[d];
    const size_t is = (size_t)p->in_strides[d], os = (size_t)p->out_strides[d];
    float m = in[0];
    for (int32_t i = 1; i < n; i++)
        if (!(in[i * is] < m)) m = in[i * is];   /* std::max(x, m) keeps m unless m < x */
    float s = 0.0f;
    for (int32_t i = 0; i < n; i++) s += expf(in[i * is] - m);
    if (p->op == TRT_REDUCE_SOFTMAX) {
        for (int32_t i = 0; i < n; i++) out[i * os] = expf(in[i * is] - m) / s;
    } else {
        const float log_s = logf(s);
        for (int32_t i = 0; i < n; i++) out[i * os] = (in[i * is] - m) - log_s;
    }
}

void trt_reduce_c(const trt_reduce_params *p) {
    int32_t kept[TRT_PORTABLE_MAX_RANK], summed[TRT_PORTABLE_MAX_RANK], n_kept = 0, n_summed = 0;
    for (int32_t d = 0; d < p->rank; d++) {
        if (p->reduced >> d & 1u) summed[n_summed++] = d;
        else kept[n_kept++] = d;
    }
    int32_t outer[TRT_PORTABLE_MAX_RANK] = {0};
    size_t in_base = 0, out_base = 0;
    do {
        if (p->op == TRT_REDUCE_SOFTMAX || p->op == TRT_REDUCE_LOG_SOFTMAX) {
            softmax_line(p, p->input + in_base, p->output + out_base, summed[0]);
            continue;
        }
        int32_t inner[TRT_PORTABLE_MAX_RANK] = {0};
        size_t in_at = in_base, unused = 0;
        float s = 0.0f;
        do s += p->input[in_at];
        while (next_index(p, summed, n_summed, inner, &in_at, &unused));
        p->output[out_base] = p->op == TRT_REDUCE_MEAN ? s / (float)p->count : s;
    } while (next_index(p, kept, n_kept, outer, &in_base, &out_base));
}
