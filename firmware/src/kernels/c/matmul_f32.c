/*
 * The portable float32 matrix products: aten::mm.out, bmm.out, linear.out and addmm.out.
 *
 * Arithmetic (ExecuTorch's portable kernels): each output element is s = 0; s += a * b over the
 * inner dim from its first index up, one float32 rounding per product and per addition; a bias is
 * added to the finished sum (linear: out = sum + bias[col], addmm: out = sum + self), as ExecuTorch's
 * linear does. Its optimized mm and bmm sum in another order, which the tests bound instead.
 */
#include "kernels_c.h"

void trt_matmul_f32_c(const trt_matmul_params *p) {
    for (int32_t n = 0; n < p->batches; n++) {
        const float *a = p->a + (size_t)n * (size_t)p->a_batch, *b = p->b + (size_t)n * (size_t)p->b_batch;
        float *out = p->output + (size_t)n * (size_t)p->out_batch;
        for (int32_t r = 0; r < p->rows; r++) {
            const float *a_row = a + (size_t)r * (size_t)p->a_row;
            for (int32_t col = 0; col < p->cols; col++) {
                const float *b_col = b + (size_t)col * (size_t)p->b_col;
                float s = 0.0f;
                for (int32_t i = 0; i < p->inner; i++)
                    s += a_row[(size_t)i * (size_t)p->a_inner] * b_col[(size_t)i * (size_t)p->b_inner];
                if (p->bias) s += p->bias[(size_t)r * (size_t)p->bias_row + (size_t)col * (size_t)p->bias_col];
                out[(size_t)r * (size_t)p->out_row + (size_t)col * (size_t)p->out_col] = s;
            }
        }
    }
}
