/* The operator table (operator_table.h): the rows of operators.def the build keeps and the variant choice. */
#include "operator_table.h"

#define TRT_OPERATOR(symbol, name, overload, parameters)                                      \
    TRT_IF_OPERATOR(symbol)(const char trt_op_name_##symbol[] = name, trt_op_overload_##symbol[] = overload;)
#include "operators.def"
#undef TRT_OPERATOR

static const trt_operator *const OPERATORS[] = {
#define TRT_OPERATOR(symbol, name, overload, parameters) TRT_IF_OPERATOR(symbol)(&trt_op_##symbol,)
#include "operators.def"
#undef TRT_OPERATOR
};

#define N_OPERATORS ((int)(sizeof OPERATORS / sizeof OPERATORS[0]))

const trt_operator *trt_find_operator(const char *name, uint32_t name_len, const char *overload,
                                      uint32_t overload_len) {
    for (int i = 0; i < N_OPERATORS; i++)
        if (pte_text_is(name, name_len, OPERATORS[i]->name) && pte_text_is(overload, overload_len, OPERATORS[i]->overload))
            return OPERATORS[i];
    return NULL;
}

int trt_operator_count(void) { return N_OPERATORS; }

const trt_operator *trt_operator_at(int i) { return i >= 0 && i < N_OPERATORS ? OPERATORS[i] : NULL; }

const trt_kernel_variant *trt_choose_variant(const trt_operator *op, const trt_params *p) {
    /* plain C, last, has no `accepts`: it takes every call its bind admits */
    for (uint8_t i = 0; i < op->n_variants; i++)
        if (!op->variants[i].accepts || op->variants[i].accepts(p)) return &op->variants[i];
    return NULL;   /* a build without plain C (a deploy library's) and no variant that takes the call */
}
