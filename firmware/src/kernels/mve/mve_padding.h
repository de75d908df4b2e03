/*
 * A zero-padded copy of one NHWC image for the Helium convolutions, so that every output
 * pixel has a whole window and the kernels need no border cases. "Zero" is the value whose
 * offset input is zero: pad bytes hold -input_offset, so (pad + input_offset) * w adds
 * nothing, exactly like the reference's zero padding of (x + input_offset). That needs
 * -input_offset to be an int8 (offsets in [-127, 128]: every int8 zero point).
 */
#ifndef TINYRPS_MVE_PADDING_H
#define TINYRPS_MVE_PADDING_H

#include <arm_mve.h>
#include <stdint.h>

#include "mve_load.h"

static inline int trt_mve_pad_value_fits(int32_t input_offset) { return input_offset >= -127 && input_offset <= 128; }

/* Whole vectors as words where the pointers allow (mve_load.h), the rest tail-predicated. */
static inline void trt_mve_fill(int8_t *dst, int32_t n, int8x16_t value) {
    if (trt_mve_word_aligned(dst))
        for (; n >= 16; n -= 16, dst += 16) trt_mve_store_words(dst, value);
    for (; n > 0; n -= 16, dst += 16) vstrbq_p_s8(dst, value, vctp8q((uint32_t)n));
}

static inline void trt_mve_copy(int8_t *dst, const int8_t *src, int32_t n) {
    if (trt_mve_word_aligned(dst) && trt_mve_word_aligned(src))
        for (; n >= 16; n -= 16, dst += 16, src += 16) trt_mve_store_words(dst, trt_mve_load_words(src));
    for (; n > 0; n -= 16, dst += 16, src += 16) {
        mve_pred16_t p = vctp8q((uint32_t)n);
        vstrbq_p_s8(dst, vldrbq_z_s8(src, p), p);
    }
}

/* image [h][w][c] -> padded [h + 2 pad_h][w + 2 pad_w][c]. */
static inline void trt_mve_pad_image(const int8_t *image, int8_t *padded, int32_t h, int32_t w, int32_t c,
                                     int32_t pad_h, int32_t pad_w, int32_t input_offset) {
    const int8x16_t pad = vdupq_n_s8((int8_t)-input_offset);
    const int32_t row = (w + 2 * pad_w) * c, side = pad_w * c, line = w * c;
    trt_mve_fill(padded, pad_h * row, pad);
    padded += pad_h * row;
    for (int32_t y = 0; y < h; y++, padded += row, image += line) {
        trt_mve_fill(padded, side, pad);
        trt_mve_copy(padded + side, image, line);
        trt_mve_fill(padded + side + line, side, pad);
    }
    trt_mve_fill(padded, pad_h * row, pad);
}

#endif
