/*
 * The image-classifier helper (tinyrps_image.h): trt_infer, on the runtime's public API alone.
 *
 * A classifier takes the image as float32 pixel / 255.0f, or, exported with integer inputs and outputs
 * (`tinyrps export --io int8`), as the int8 tensor its float twin's first call (quantize_per_tensor,
 * quant_min -128, quant_max 127) makes of that float: round_half_even(v * (float)(1 / scale)) + zero point,
 * clamped. Its output is float32 logits, or int8 values dequantized as the float twin's last call does:
 * ((float)q - zero point) * (float)scale. Either way trt_infer gives the float twin's logits bit for bit.
 * The integer path is compiled with TRT_IMAGE_INT8 (the firmware and native builds; a deploy library of a
 * program with an int8 input or output), so a float classifier's library carries none of it.
 */
#include <string.h>

#include "kernels/float_round.h"
#include "tinyrps_image.h"

/* Dense in logical order (size-1 dims may sit anywhere): an output of a classifier, [1, n] or [n],
 * is then its logits in order. */
static int is_row_major(const trt_tensor_info *t) {
    int32_t stride = 1;
    for (int d = t->rank - 1; d >= 0; d--) {
        if (t->sizes[d] > 1 && t->strides[d] != stride) return 0;
        stride *= t->sizes[d];
    }
    return 1;
}

/* An int8 input's or output's quantization, as the float twin's quantize and dequantize kernels hold it. */
typedef struct {
    int quantized;
    float scale, inv_scale, zero_point;
} io_scale;

static int read_scale(const trt_program *prog, int output, const trt_tensor_info *t, io_scale *q) {
    q->quantized = 0;
    if (t->dtype == TRT_FLOAT32) return 1;
#if TRT_IMAGE_INT8
    double scale;
    int32_t zero_point;
    if (t->dtype != TRT_INT8 || trt_io_quantization(prog, output, 0, &scale, &zero_point) != TRT_OK) return 0;
    q->quantized = 1;
    q->scale = (float)scale;
    q->inv_scale = (float)(1.0 / scale);
    q->zero_point = (float)zero_point;
    return 1;
#else
    (void)prog;
    (void)output;
    return 0;
#endif
}

/* trt_infer's program: [1, 1, 28, 28] in and a row of scores out, each float32 or int8 of known quantization. */
static int is_image_classifier(const trt_program *prog, const trt_tensor_info *in, const trt_tensor_info *out,
                               io_scale *in_q, io_scale *out_q) {
    return in->rank == 4 && in->sizes[0] == 1 && in->sizes[1] == 1 && in->sizes[2] == TRT_IMAGE_SIDE &&
           in->sizes[3] == TRT_IMAGE_SIDE && is_row_major(out) && read_scale(prog, 0, in, in_q) &&
           read_scale(prog, 1, out, out_q);
}

/* Element i of the image in the input's layout (one pass when the rows are dense, as in every exported
 * classifier: the same values, fewer instructions). */
static int place(const trt_tensor_info *in, int dense, int i) {
    return dense ? i : (i / TRT_IMAGE_SIDE) * in->strides[2] + (i % TRT_IMAGE_SIDE) * in->strides[3];
}

/* The image as the program's float32 input: pixel / 255. */
static void write_image(const trt_tensor_info *in, const uint8_t image[TRT_IMAGE_BYTES]) {
    float *x = (float *)(void *)in->data;
    if (in->strides[3] == 1 && in->strides[2] == TRT_IMAGE_SIDE) {
        for (int i = 0; i < TRT_IMAGE_BYTES; i++) x[i] = (float)image[i] / 255.0f;
        return;
    }
    for (int i = 0; i < TRT_IMAGE_BYTES; i++) x[place(in, 0, i)] = (float)image[i] / 255.0f;
}

#if TRT_IMAGE_INT8
/* The image as the program's int8 input: each of the 256 byte values quantized once, then looked up. */
static void write_quantized_image(const trt_tensor_info *in, const io_scale *q, const uint8_t image[TRT_IMAGE_BYTES]) {
    int8_t table[256];
    for (int p = 0; p < 256; p++) {
        float v = trt_round_half_even(((float)p / 255.0f) * q->inv_scale) + q->zero_point;
        if (!(v >= -128.0f)) v = -128.0f;
        if (v > 127.0f) v = 127.0f;
        table[p] = (int8_t)(int32_t)v;
    }
    int8_t *x = (int8_t *)(void *)in->data;
    const int dense = in->strides[3] == 1 && in->strides[2] == TRT_IMAGE_SIDE;
    for (int i = 0; i < TRT_IMAGE_BYTES; i++) x[place(in, dense, i)] = table[image[i]];
}
#endif

trt_status trt_infer(trt_program *prog, const uint8_t image[TRT_IMAGE_BYTES], float *logits, size_t capacity,
                     size_t *n_out) {
    trt_tensor_info in, out;
    io_scale in_q, out_q;
    /* a loaded program has an output (trt_load): none, and nothing is loaded */
    if (!image || !logits || !n_out || trt_output_count(prog) == 0) return TRT_ERR_BAD_INPUT;
    if (trt_input(prog, 0, &in) != TRT_OK || trt_output(prog, 0, &out) != TRT_OK ||
        !is_image_classifier(prog, &in, &out, &in_q, &out_q))
        return TRT_ERR_BAD_TENSOR;
    if (out.numel > capacity) return TRT_ERR_LIMIT;
#if TRT_IMAGE_INT8
    if (in_q.quantized) write_quantized_image(&in, &in_q, image);
    else
#endif
        write_image(&in, image);
    trt_status s = trt_run(prog);
    if (s != TRT_OK) return s;
#if TRT_IMAGE_INT8
    if (out_q.quantized) {
        const int8_t *q = (const int8_t *)(const void *)out.data;
        for (size_t i = 0; i < out.numel; i++) logits[i] = ((float)q[i] - out_q.zero_point) * out_q.scale;
        *n_out = out.numel;
        return TRT_OK;
    }
#endif
    memcpy(logits, out.data, out.nbytes);
    *n_out = out.numel;
    return TRT_OK;
}
