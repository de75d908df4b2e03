/*
 * The image-classifier helper (tinyrps_image.h): trt_infer, on the runtime's public API alone.
 */
#include <string.h>

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

/* trt_infer's program: float32 [1, 1, 28, 28] in, float32 out. */
static int is_image_classifier(const trt_tensor_info *in, const trt_tensor_info *out) {
    return in->dtype == TRT_FLOAT32 && in->rank == 4 && in->sizes[0] == 1 && in->sizes[1] == 1 &&
           in->sizes[2] == TRT_IMAGE_SIDE && in->sizes[3] == TRT_IMAGE_SIDE && out->dtype == TRT_FLOAT32 &&
           is_row_major(out);
}

/* The image as the program's float32 input: pixel / 255, placed by the input's strides (one pass
 * when the rows are dense, as in every exported classifier: the same values, fewer instructions). */
static void write_image(const trt_tensor_info *in, const uint8_t image[TRT_IMAGE_BYTES]) {
    float *x = (float *)(void *)in->data;
    if (in->strides[3] == 1 && in->strides[2] == TRT_IMAGE_SIDE) {
        for (int i = 0; i < TRT_IMAGE_BYTES; i++) x[i] = (float)image[i] / 255.0f;
        return;
    }
    for (int h = 0; h < TRT_IMAGE_SIDE; h++)
        for (int w = 0; w < TRT_IMAGE_SIDE; w++)
            x[h * in->strides[2] + w * in->strides[3]] = (float)image[h * TRT_IMAGE_SIDE + w] / 255.0f;
}

trt_status trt_infer(trt_program *prog, const uint8_t image[TRT_IMAGE_BYTES], float *logits, size_t capacity,
                     size_t *n_out) {
    trt_tensor_info in, out;
    /* a loaded program has an output (trt_load): none, and nothing is loaded */
    if (!image || !logits || !n_out || trt_output_count(prog) == 0) return TRT_ERR_BAD_INPUT;
    if (trt_input(prog, 0, &in) != TRT_OK || trt_output(prog, 0, &out) != TRT_OK || !is_image_classifier(&in, &out))
        return TRT_ERR_BAD_TENSOR;
    if (out.numel > capacity) return TRT_ERR_LIMIT;
    write_image(&in, image);
    trt_status s = trt_run(prog);
    if (s != TRT_OK) return s;
    memcpy(logits, out.data, out.nbytes);
    *n_out = out.numel;
    return TRT_OK;
}
