/*
 * A padded copy of one NHWC int8 image, for kernels that want every window whole (portable C;
 * the Helium kernels have their own, kernels/mve/mve_padding.h). Pad bytes hold
 * -input_offset, whose offset input (pad + input_offset) is zero: exactly the reference's
 * zero padding. Needs input_offset in [-127, 128] (trt_pad_value_fits).
 */
#ifndef TINYRPS_PADDING_H
#define TINYRPS_PADDING_H

#include <stdint.h>
#include <string.h>

static inline int trt_pad_value_fits(int32_t input_offset) { return input_offset >= -127 && input_offset <= 128; }

/* image [h][w][c] -> padded [h + 2 pad_h][w + 2 pad_w][c]. */
static inline void trt_pad_image(const int8_t *image, int8_t *padded, int32_t h, int32_t w, int32_t c, int32_t pad_h,
                                 int32_t pad_w, int32_t input_offset) {
    const int pad = (int)(int8_t)-input_offset;
    const size_t row = (size_t)(w + 2 * pad_w) * c, side = (size_t)pad_w * c, line = (size_t)w * c;
    memset(padded, pad, (size_t)pad_h * row);
    padded += (size_t)pad_h * row;
    for (int32_t y = 0; y < h; y++, padded += row, image += line) {
        memset(padded, pad, side);
        memcpy(padded + side, image, line);
        memset(padded + side + line, pad, side);
    }
    memset(padded, pad, (size_t)pad_h * row);
}

#endif
