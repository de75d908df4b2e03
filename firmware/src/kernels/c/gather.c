/*
 * The portable gathering operators: aten::index.Tensor_out, repeat.out, upsample_nearest2d.vec_out and
 * amax.out, on any dtype and dim order. They copy elements (or pick the largest), so every result is the
 * reference's bits.
 *
 * index    out[o][j][i] = in[o][index[j]][i], a negative index counting from the end; an index out of
 *          range (which ExecuTorch's runtime refuses when it runs; a kernel here has no run-time error)
 *          gives zeros
 * repeat   out[..., k, ...] = in[..., k % in_size, ...] along each dim (the input's dims aligned right)
 * nearest  out[n][c][y][x] = in[n][c][min(floor(y * scale_h), H - 1)][min(floor(x * scale_w), W - 1)], the
 *          product in float32 as ExecuTorch's kernel takes it; y itself when the sizes are equal, y / 2
 *          when the output is twice the input
 * amax     the largest element over the reduced dims; the first NaN met stays (as ExecuTorch's max with
 *          its NaN check)
 */
#include <math.h>
#include <string.h>

#include "kernels_c.h"
#include "../../values.h"      /* the dtype codes (tinyrps_runtime.h, which a library keeps beside values.h) */

/* The next index of the dims listed in dims[0..n) (the last fastest), moving *in_at and *out_at; 0 at the end. */
static int next_index(const trt_gather_params *p, const int32_t *dims, int32_t n, int32_t *index, size_t *in_at,
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

static void repeat(const trt_gather_params *p) {
    int32_t index[TRT_PORTABLE_MAX_RANK] = {0}, src[TRT_PORTABLE_MAX_RANK] = {0};
    size_t in_at = 0, out_at = 0;
    for (;;) {
        memcpy(p->output + out_at * p->elem_size, p->input + in_at * p->elem_size, p->elem_size);
        int32_t d = p->rank - 1;
        for (; d >= 0; d--) {
            out_at += (size_t)p->out_strides[d];
            in_at += (size_t)p->in_strides[d];
            if (++src[d] == p->in_sizes[d]) {   /* the input's dim starts again */
                in_at -= (size_t)p->in_strides[d] * (size_t)src[d];
                src[d] = 0;
            }
            if (++index[d] < p->sizes[d]) break;
            out_at -= (size_t)p->out_strides[d] * (size_t)index[d];
            index[d] = 0;
            src[d] = 0;   /* a whole number of repeats: back at its start */
        }
        if (d < 0) return;
    }
}

static int32_t nearest(int32_t at, int32_t in_size, int32_t out_size, float scale) {
    if (out_size == in_size) return at;
    if (out_size == 2 * in_size) return at >> 1;
    const int32_t src = (int32_t)floorf((float)at * scale);
    return src < in_size - 1 ? src : in_size - 1;
}

static void nearest2d(const trt_gather_params *p) {
    const size_t e = p->elem_size;
    for (int32_t n = 0; n < p->sizes[0]; n++)
        for (int32_t c = 0; c < p->sizes[1]; c++)
            for (int32_t y = 0; y < p->sizes[2]; y++) {
                const int32_t sy = nearest(y, p->in_sizes[2], p->sizes[2], p->scale_h);
                for (int32_t x = 0; x < p->sizes[3]; x++) {
                    const int32_t sx = nearest(x, p->in_sizes[3], p->sizes[3], p->scale_w);
                    const size_t in_at = (size_t)n * (size_t)p->in_strides[0] + (size_t)c * (size_t)p->in_strides[1] +
                                         (size_t)sy * (size_t)p->in_strides[2] + (size_t)sx * (size_t)p->in_strides[3];
                    const size_t out_at = (size_t)n * (size_t)p->out_strides[0] + (size_t)c * (size_t)p->out_strides[1] +
                                          (size_t)y * (size_t)p->out_strides[2] + (size_t)x * (size_t)p->out_strides[3];
                    memcpy(p->output + out_at * e, p->input + in_at * e, e);
                }
            }
}

/* Whether element b takes the place of the largest so far, a: larger, or a NaN met first. */
static int replaces(uint8_t dtype, const uint8_t *a, const uint8_t *b) {
    switch (dtype) {
    case TRT_UINT8: case TRT_BOOL: return *b > *a;
    case TRT_INT8: return *(const int8_t *)(const void *)b > *(const int8_t *)(const void *)a;
    case TRT_INT16: return *(const int16_t *)(const void *)b > *(const int16_t *)(const void *)a;
    case TRT_INT32: return *(const int32_t *)(const void *)b > *(const int32_t *)(const void *)a;
    case TRT_INT64: return *(const int64_t *)(const void *)b > *(const int64_t *)(const void *)a;
    default: {
        const float fa = *(const float *)(const void *)a, fb = *(const float *)(const void *)b;
        return fa == fa && (fb != fb || fb > fa);
    }
    }
}

static void amax(const trt_gather_params *p) {
    int32_t kept[TRT_PORTABLE_MAX_RANK], summed[TRT_PORTABLE_MAX_RANK], n_kept = 0, n_summed = 0;
    for (int32_t d = 0; d < p->rank; d++) {
        if (p->reduced >> d & 1u) summed[n_summed++] = d;
        else kept[n_kept++] = d;
    }
    const size_t e = p->elem_size;
    int32_t outer[TRT_PORTABLE_MAX_RANK] = {0};
    size_t in_base = 0, out_base = 0;
    do {
        int32_t inner[TRT_PORTABLE_MAX_RANK] = {0};
        size_t in_at = in_base, unused = 0;
        const uint8_t *best = p->input + in_at * e;
        while (next_index(p, summed, n_summed, inner, &in_at, &unused))
            if (replaces(p->dtype, best, p->input + in_at * e)) best = p->input + in_at * e;
        memcpy(p->output + out_base * e, best, e);
    } while (next_index(p, kept, n_kept, outer, &in_base, &out_base));
}

static void index_rows(const trt_gather_params *p) {
    const size_t row = (size_t)p->inner_bytes;
    uint8_t *out = p->output;
    for (int32_t o = 0; o < p->outer; o++)
        for (int32_t j = 0; j < p->count; j++, out += row) {
            int64_t at = p->index_is_64 ? ((const int64_t *)(const void *)p->index)[j]
                                        : ((const int32_t *)(const void *)p->index)[j];
            if (at < 0) at += p->dim_size;
            if (at < 0 || at >= p->dim_size) memset(out, 0, row);
            else memcpy(out, p->input + ((size_t)o * (size_t)p->dim_size + (size_t)at) * row, row);
        }
}

void trt_gather_c(const trt_gather_params *p) {
    switch (p->op) {
    case TRT_GATHER_INDEX: index_rows(p); break;
    case TRT_GATHER_REPEAT: repeat(p); break;
    case TRT_GATHER_NEAREST: nearest2d(p); break;
    case TRT_GATHER_AMAX: amax(p); break;
    default: break;
    }
}
