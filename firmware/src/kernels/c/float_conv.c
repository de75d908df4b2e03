/*
 * The portable float32 convolution: aten::convolution.out, 1-D, 2-D and 3-D, transposed or not, with
 * any stride, padding, dilation, groups and output_padding, on any dim order.
 *
 * Arithmetic (ExecuTorch's portable kernel, whose order this follows so that its bits come out):
 *   convolution   per output element: s = 0; for each input channel of its group, each kernel tap
 *                 (depth, row, column) inside the input: s += x * w; then s += bias
 *   transposed    every output element starts at its bias (or 0); then, per output channel, each
 *                 input position (depth, row, column), each input channel of the group and each tap
 *                 adds x * w to the output element the tap lands on (inside the output)
 * Every product and sum is one float32 rounding (the build contracts no multiply-add).
 */
#include "kernels_c.h"

typedef struct {
    int32_t at[3];   /* d, h, w */
} position;

/* The element offset of (n, c, position) through strides s. */
static size_t offset(const int32_t *s, int32_t n, int32_t c, const int32_t *at) {
    return (size_t)n * (size_t)s[0] + (size_t)c * (size_t)s[1] + (size_t)at[0] * (size_t)s[2] +
           (size_t)at[1] * (size_t)s[3] + (size_t)at[2] * (size_t)s[4];
}

/* Whether tap k of the window at `base` (base + k * dilation per dim) lies inside `size`; the tap's position. */
static int tap_inside(const trt_float_conv_params *p, const int32_t *base, const int32_t *k, const int32_t *size,
                      int32_t *at) {
    for (int d = 0; d < 3; d++) {
        at[d] = base[d] + k[d] * p->dilation[d];
        if (at[d] < 0 || at[d] >= size[d]) return 0;
    }
    return 1;
}

/* Steps a 3-D index over extent (the last dim fastest); 0 once it has wrapped. */
static int next3(int32_t *i, const int32_t *extent) {
    for (int d = 2; d >= 0; d--) {
        if (++i[d] < extent[d]) return 1;
        i[d] = 0;
    }
    return 0;
}

static void convolve(const trt_float_conv_params *p, int32_t n, int32_t oc) {
    const int32_t per_group = p->in_channels / p->groups;
    const int32_t first = oc / (p->out_channels / p->groups) * per_group;
    const int32_t kernel[3] = {p->kernel[0], p->kernel[1], p->kernel[2]};
    int32_t o[3] = {0, 0, 0};
    do {
        const int32_t base[3] = {o[0] * p->stride[0] - p->pad[0], o[1] * p->stride[1] - p->pad[1],
                                 o[2] * p->stride[2] - p->pad[2]};
        float s = 0.0f;
        for (int32_t ic = 0; ic < per_group; ic++) {
            int32_t k[3] = {0, 0, 0}, at[3];
            do {
                if (!tap_inside(p, base, k, p->in_size, at)) continue;
                s += p->input[offset(p->in_strides, n, first + ic, at)] * p->weight[offset(p->w_strides, oc, ic, k)];
            } while (next3(k, kernel));
        }
        if (p->bias) s += p->bias[oc];
        p->output[offset(p->out_strides, n, oc, o)] = s;
    } while (next3(o, p->out_size));
}

static void convolve_transposed(const trt_float_conv_params *p, int32_t n, int32_t oc) {
    const int32_t out_per_group = p->out_channels / p->groups, per_group = p->in_channels / p->groups;
    const int32_t first = oc / out_per_group * per_group, w_oc = oc % out_per_group;
    const int32_t kernel[3] = {p->kernel[0], p->kernel[1], p->kernel[2]};
    int32_t o[3] = {0, 0, 0};
    do p->output[offset(p->out_strides, n, oc, o)] = p->bias ? p->bias[oc] : 0.0f;
    while (next3(o, p->out_size));
    int32_t i[3] = {0, 0, 0};
    do {
        const int32_t base[3] = {i[0] * p->stride[0] - p->pad[0], i[1] * p->stride[1] - p->pad[1],
                                 i[2] * p->stride[2] - p->pad[2]};
        for (int32_t ic = first; ic < first + per_group; ic++) {
            const float x = p->input[offset(p->in_strides, n, ic, i)];
            int32_t k[3] = {0, 0, 0}, at[3];
            do {
                if (!tap_inside(p, base, k, p->out_size, at)) continue;
                float *y = &p->output[offset(p->out_strides, n, oc, at)];
                *y += x * p->weight[offset(p->w_strides, ic, w_oc, k)];
            } while (next3(k, kernel));
        }
    } while (next3(i, p->in_size));
}

void trt_float_conv_c(const trt_float_conv_params *p) {
    for (int32_t n = 0; n < p->batches; n++)
        for (int32_t oc = 0; oc < p->out_channels; oc++) {
            if (p->transposed) convolve_transposed(p, n, oc);
            else convolve(p, n, oc);
        }
}
