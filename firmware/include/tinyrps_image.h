/*
 * tinyrps image classifiers: one call from a 28x28 picture to its class scores, over the runtime's
 * public API (tinyrps_runtime.h). The rock-paper-scissors firmware, the native tools and a deploy
 * library of a classifier use it; the runtime itself knows nothing of images (src/image.c).
 */
#ifndef TINYRPS_IMAGE_H
#define TINYRPS_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "tinyrps_runtime.h"

#define TRT_IMAGE_SIDE 28
#define TRT_IMAGE_BYTES (TRT_IMAGE_SIDE * TRT_IMAGE_SIDE)

/* One inference of an image classifier: the 28x28 uint8 image becomes input 0 (float32
 * [1, 1, 28, 28]) as pixel / 255.0f, then trt_run; logits receives output 0 (float32, at most
 * `capacity` values, *n_out of them). Its raw int8 values, when it has them, are then
 * trt_output_int8(prog, 0, ...). TRT_ERR_BAD_TENSOR when the program's input 0 or output 0 is
 * not of that kind; TRT_ERR_LIMIT when output 0 has more than capacity. */
trt_status trt_infer(trt_program *prog, const uint8_t image[TRT_IMAGE_BYTES], float *logits, size_t capacity,
                     size_t *n_out);

#endif
