/*
 * tinyrps-elementwise-checks: the elementwise kernels below the operator table, on the host.
 *
 *   tinyrps-elementwise-checks SEED ROUNDS
 *       Differential, on random shapes, broadcasts and parameters (extreme shifts, INT32_MIN
 *       and negative multipliers, far zero points, narrow activation ranges): the DSP add and
 *       mul (here on the portable model of the DSP instructions) against the plain-C kernels,
 *       wherever the DSP variant accepts the parameters; the model of SMMULR and SSAT against
 *       their definitions; minimum and maximum of int8 and int32 against a plain loop; the
 *       permuting copies against an element-by-element walk. Prints one line per failed check and a JSON summary; exit 0 only if all hold.
 *   tinyrps-elementwise-checks softmax ROWS LENGTH ZERO_POINT MULTIPLIER SHIFT IN OUT
 *       The plain-C softmax kernel on ROWS x LENGTH int8 values (file IN), its int8 outputs to
 *       OUT: what tests compare with the Python reference on many rows.
 */
#define _POSIX_C_SOURCE 200112L  /* posix_memalign */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/arith.h"
#include "check_harness.h"
#include "kernels/c/kernels_c.h"
#include "kernels/dsp/dsp_intrinsics.h"
#include "kernels/dsp/kernels_dsp.h"

/* A multiplier like an exporter's, or an edge: INT32_MIN, negative, small. */
static int32_t multiplier(void) {
    switch (pick(0, 7)) {
    case 0: return INT32_MIN;
    case 1: return -pick(1 << 30, INT32_MAX);
    case 2: return pick(1, 1 << 20);
    default: return pick(1 << 30, INT32_MAX);
    }
}
static int32_t shift(void) { return pick(0, 5) == 0 ? pick(-31, 31) : pick(-20, 0); }
static int32_t zero_point(void) { return pick(0, 5) == 0 ? pick(-5000, 5000) : pick(-128, 127); }

/* Random operand shapes seen from the output: the same shape, a broadcast operand (steps 0
 * along some extents), or an operand read with other strides. Returns the element counts. */
static void random_shape(trt_broadcast *s, size_t *a_count, size_t *b_count, size_t *out_count) {
    int32_t a_stride = 1, b_stride = 1;
    const int form = pick(0, 2);
    for (int k = TRT_BROADCAST_DIMS - 1; k >= 0; k--) {
        s->sizes[k] = pick(0, 2) ? pick(1, 9) : 1;
        const int a_broadcast = form == 1 && pick(0, 1), b_broadcast = form == 2 && pick(0, 1);
        s->a_steps[k] = a_broadcast ? 0 : a_stride;
        s->b_steps[k] = b_broadcast ? 0 : b_stride;
        if (!a_broadcast) a_stride *= s->sizes[k];
        if (!b_broadcast) b_stride *= s->sizes[k];
    }
    *a_count = (size_t)a_stride;
    *b_count = (size_t)b_stride;
    *out_count = (size_t)s->sizes[0] * s->sizes[1] * s->sizes[2] * s->sizes[3];
}

static long add_round(long round) {
    trt_add_params p;
    size_t na, nb, nout;
    memset(&p, 0, sizeof p);
    random_shape(&p.shape, &na, &nb, &nout);
    p.a_zero_point = zero_point();
    p.b_zero_point = zero_point();
    p.output_zero_point = zero_point();
    p.a_multiplier = multiplier();
    p.b_multiplier = multiplier();
    p.output_multiplier = multiplier();
    p.a_shift = shift();
    p.b_shift = shift();
    p.output_shift = shift();
    p.activation_min = pick(-128, 0);
    p.activation_max = pick(p.activation_min, 127);
    if (!trt_quantized_add_dsp_accepts(&p)) return 0;
    int8_t *a = aligned(na), *b = aligned(nb), *out_c = aligned(nout), *out_d = aligned(nout);
    void *temp = aligned(trt_quantized_add_dsp_temp_bytes(&p));
    fill_s8(a, na);
    fill_s8(b, nb);
    p.a = a;
    p.b = b;
    p.output = out_c;
    trt_quantized_add_c(&p);
    p.output = out_d;
    trt_quantized_add_dsp(&p, temp);
    check(memcmp(out_c, out_d, nout) == 0, "DSP add equals plain C", round);
    free(a);
    free(b);
    free(out_c);
    free(out_d);
    free(temp);
    return 1;
}

static long mul_round(long round) {
    trt_mul_params p;
    size_t na, nb, nout;
    memset(&p, 0, sizeof p);
    random_shape(&p.shape, &na, &nb, &nout);
    p.a_zero_point = pick(0, 3) ? zero_point() : pick(-20000, 20000);
    p.b_zero_point = zero_point();
    p.output_zero_point = zero_point();
    p.output_multiplier = multiplier();
    p.output_shift = shift();
    if (!trt_quantized_mul_dsp_accepts(&p)) return 0;
    int8_t *a = aligned(na), *b = aligned(nb), *out_c = aligned(nout), *out_d = aligned(nout);
    fill_s8(a, na);
    fill_s8(b, nb);
    p.a = a;
    p.b = b;
    p.output = out_c;
    trt_quantized_mul_c(&p);
    p.output = out_d;
    trt_quantized_mul_dsp(&p);
    check(memcmp(out_c, out_d, nout) == 0, "DSP mul equals plain C", round);
    free(a);
    free(b);
    free(out_c);
    free(out_d);
    return 1;
}

/* SMMULR and SSAT of the portable model against their definitions. */
static void dsp_model_round(long round) {
    const int32_t a = (int32_t)(uint32_t)next_random(), b = (int32_t)(uint32_t)next_random();
    const int64_t rounded = ((int64_t)a * b + ((int64_t)1 << 31)) >> 32;
    const int32_t v = (int32_t)(uint32_t)next_random() >> pick(0, 31);
    check(trt_smmulr(a, b) == (int32_t)rounded && trt_ssat8(v) == (v < -128 ? -128 : v > 127 ? 127 : v),
          "the DSP model computes SMMULR, SSAT", round);
}

/* minimum and maximum, int8 and int32, on random broadcasts against a plain walk of the shape. */
static void minmax_round(long round) {
    trt_minmax_params p;
    size_t na, nb, nout;
    memset(&p, 0, sizeof p);
    random_shape(&p.shape, &na, &nb, &nout);
    p.elem_size = pick(0, 1) ? 1 : 4;
    const size_t e = (size_t)p.elem_size;
    uint8_t *a = aligned(na * e), *b = aligned(nb * e), *out = aligned(nout * e), *expected = aligned(nout * e);
    for (size_t i = 0; i < na * e; i++) a[i] = (uint8_t)next_random();
    for (size_t i = 0; i < nb * e; i++) b[i] = (uint8_t)next_random();
    p.a = a;
    p.b = b;
    p.output = out;
    for (int larger = 0; larger <= 1; larger++) {
        size_t k = 0;
        for (int32_t i0 = 0; i0 < p.shape.sizes[0]; i0++)
            for (int32_t i1 = 0; i1 < p.shape.sizes[1]; i1++)
                for (int32_t i2 = 0; i2 < p.shape.sizes[2]; i2++)
                    for (int32_t i3 = 0; i3 < p.shape.sizes[3]; i3++, k++) {
                        const int32_t idx[4] = {i0, i1, i2, i3};
                        size_t ia = 0, ib = 0;
                        for (int d = 0; d < 4; d++) {
                            ia += (size_t)idx[d] * (size_t)p.shape.a_steps[d];
                            ib += (size_t)idx[d] * (size_t)p.shape.b_steps[d];
                        }
                        if (e == 1) {
                            const int8_t x = (int8_t)a[ia], y = (int8_t)b[ib];
                            expected[k] = (uint8_t)(larger ? (x > y ? x : y) : (x < y ? x : y));
                        } else {
                            int32_t x, y;
                            memcpy(&x, a + ia * 4, 4);
                            memcpy(&y, b + ib * 4, 4);
                            const int32_t v = larger ? (x > y ? x : y) : (x < y ? x : y);
                            memcpy(expected + k * 4, &v, 4);
                        }
                    }
        if (larger) trt_maximum_c(&p);
        else trt_minimum_c(&p);
        check(memcmp(out, expected, nout * e) == 0, larger ? "maximum of every element" : "minimum of every element", round);
    }
    free(a);
    free(b);
    free(out);
    free(expected);
}

static void shuffle(int32_t *v, int n) {
    for (int d = 0; d < n; d++) v[d] = d;
    for (int d = n - 1; d > 0; d--) {
        int k = pick(0, d), t = v[d];
        v[d] = v[k];
        v[k] = t;
    }
}

/* A random permutation of a tensor of random shape and dim order: the transpose kernel (given
 * what its bind step gives it) against an element walk. */
static void transpose_round(long round) {
    trt_copy_params p;
    memset(&p, 0, sizeof p);
    p.rank = pick(1, TRT_COPY_MAX_RANK);
    p.elem_size = (int32_t[]){1, 2, 4}[pick(0, 2)];
    int32_t in_sizes[TRT_COPY_MAX_RANK], in_strides[TRT_COPY_MAX_RANK], order[TRT_COPY_MAX_RANK], perm[TRT_COPY_MAX_RANK];
    size_t count = 1;
    for (int d = 0; d < p.rank; d++) {
        in_sizes[d] = pick(1, 5);
        count *= (size_t)in_sizes[d];
    }
    shuffle(order, p.rank);   /* the input's dim order */
    shuffle(perm, p.rank);    /* the permutation */
    int32_t stride = 1;
    for (int k = p.rank - 1; k >= 0; k--) {
        in_strides[order[k]] = stride;
        stride *= in_sizes[order[k]];
    }
    stride = 1;
    for (int k = p.rank - 1; k >= 0; k--) {   /* output dim k walks input dim perm[k]; output contiguous */
        p.sizes[k] = in_sizes[perm[k]];
        p.in_strides[k] = in_strides[perm[k]];
        p.out_strides[k] = stride;
        stride *= p.sizes[k];
    }
    uint8_t *in = aligned(count * (size_t)p.elem_size), *out = aligned(count * (size_t)p.elem_size);
    uint8_t *expected = aligned(count * (size_t)p.elem_size);
    for (size_t i = 0; i < count * (size_t)p.elem_size; i++) in[i] = (uint8_t)next_random();
    int32_t index[TRT_COPY_MAX_RANK] = {0};
    for (size_t n = 0; n < count; n++) {
        size_t from = 0, to = 0;
        for (int k = 0; k < p.rank; k++) {
            from += (size_t)index[k] * (size_t)p.in_strides[k];
            to += (size_t)index[k] * (size_t)p.out_strides[k];
        }
        memcpy(expected + to * (size_t)p.elem_size, in + from * (size_t)p.elem_size, (size_t)p.elem_size);
        for (int k = p.rank - 1; k >= 0 && ++index[k] == p.sizes[k]; k--) index[k] = 0;
    }
    p.input = in;
    p.output = out;
    trt_transpose_c(&p);
    check(memcmp(out, expected, count * (size_t)p.elem_size) == 0, "transpose moves every element", round);
    free(in);
    free(out);
    free(expected);
}

static int run_rounds(long rounds) {
    long add_dsp = 0, mul_dsp = 0;
    for (long r = 0; r < rounds; r++) {
        add_dsp += add_round(r);
        mul_dsp += mul_round(r);
        dsp_model_round(r);
        minmax_round(r);
        transpose_round(r);
    }
    printf("{\"checks\": %ld, \"failures\": %ld, \"rounds\": %ld, \"add_dsp\": %ld, \"mul_dsp\": %ld}\n", checks,
           failures, rounds, add_dsp, mul_dsp);
    return failures ? 1 : 0;
}

static int run_softmax(char **argv) {
    trt_softmax_params p;
    memset(&p, 0, sizeof p);
    const long rows = strtol(argv[2], NULL, 10), length = strtol(argv[3], NULL, 10);
    const long zp = strtol(argv[4], NULL, 10), mult = strtol(argv[5], NULL, 10), sh = strtol(argv[6], NULL, 10);
    if (rows < 1 || length < 1 || rows * length > (1L << 26) || mult < 1 || mult > INT32_MAX || sh < -30 || sh > 30) {
        fprintf(stderr, "error: bad softmax arguments\n");
        return 2;
    }
    const size_t n = (size_t)(rows * length);
    int8_t *in = aligned(n), *out = aligned(n);
    FILE *f = fopen(argv[7], "rb");
    const int read_ok = f && fread(in, 1, n, f) == n;
    if (f) fclose(f);
    if (!read_ok) {
        fprintf(stderr, "error: cannot read %zu bytes from %s\n", n, argv[7]);
        return 2;
    }
    /* the bind step's scale: multiplier * 2^(shift - 57), exact in double */
    double scale = (double)mult;
    for (long e = sh - 57; e < 0; e++) scale *= 0.5;
    for (long e = sh - 57; e > 0; e--) scale *= 2.0;
    p.input = in;
    p.output = out;
    p.outer = (int32_t)rows;
    p.length = (int32_t)length;
    p.inner = 1;
    p.input_zero_point = (int32_t)zp;
    p.input_scale = (float)scale;
    p.output_zero_point = -128.0f;
    trt_softmax_c(&p);
    f = fopen(argv[8], "wb");
    const int write_ok = f && fwrite(out, 1, n, f) == n;
    if (f && fclose(f) != 0) return 2;
    free(in);
    free(out);
    return write_ok ? 0 : 2;
}

int main(int argc, char **argv) {
    if (argc == 9 && strcmp(argv[1], "softmax") == 0) return run_softmax(argv);
    if (argc == 3) {
        seed_random(argv[1]);
        return run_rounds(strtol(argv[2], NULL, 10));
    }
    fprintf(stderr, "usage: %s SEED ROUNDS | softmax ROWS LENGTH ZERO_POINT MULTIPLIER SHIFT IN OUT\n", argv[0]);
    return 2;
}
