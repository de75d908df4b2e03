/*
 * The operator table: one row per operator this runtime runs, CMSIS-NN / TFLite Micro
 * style. A row is the operator's name, its bind step and its kernel variants.
 *
 *   bind     validates one kernel call's arguments against the operator's schema
 *            (dtypes, shapes, layouts, ranges: ops/<operator>.c) and fills the call's
 *            kernel parameters; kernels then run without checks of their own.
 *   variants fastest first: the first one the build's ISA provides and whose `accepts`
 *            takes the bound parameters is chosen, once, at load. Each has its own files
 *            under kernels/<isa>/. It may ask for workspace of its own in the arena
 *            (scratch_bytes), filled once after the load (prepare: weight sums, folded
 *            offsets; the load's cost, not the inference's), and for working memory while
 *            it runs (temp_bytes: placed by the loader where the memory plan holds no
 *            value during the call, else where the arena grows least);
 *            invoke runs it.
 *
 * A kernel writes nothing of the memory plan but its call's `out` tensor and its working
 * memory (beside its own workspace): the loader's lifetime checks of the program's inputs and
 * outputs, and its placing of the working memory, rely on it (runtime.c, check_io_lifetimes,
 * place_by_lifetime).
 *
 * The rows are operators.def: adding an operator is a row there and its own ops/ and kernels/
 * files. Adding a variant: a line in the operator's variant list (TRT_<ISA>_VARIANT below), the
 * adapters of its kernel's entry points (TRT_ACCEPTS ... TRT_RUN_ALONE), and its kernel file. A
 * build for one program keeps what it needs of them by operator_selection.h alone.
 */
#ifndef TINYRPS_OPERATOR_TABLE_H
#define TINYRPS_OPERATOR_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "../kernels/isa.h"
#include "../kernels/kernels.h"
#include "bind_args.h"
#include "operator_selection.h"
#if TRT_ETHOS_U
#include "../ethos_u_params.h"
#endif

/* What a build compiles of operators.def and of the variant lists: everything in the firmware; in
 * a build for one program (TRT_SELECTION, operator_selection.h), the operators it names
 * (TRT_WITH_<symbol>) and the variants it names (TRT_USES_<variant>, a variant's name being the
 * first argument of its row). TRT_KEEPS(flag) is 1 or 0, in #if and in macros alike;
 * TRT_WHEN(bit)(text) is the text, or nothing. */
#ifdef TRT_SELECTION
#define TRT_KEEPS(flag) TRT_IS_ONE(flag)
#else
#define TRT_KEEPS(flag) 1
#endif
/* A flag defined as 1 makes the probe two arguments, which moves the 1 into second place. */
#define TRT_IS_ONE(x) TRT_SECOND_OF(TRT_ONE_PROBE_##x, 0, ~)
#define TRT_ONE_PROBE_1 ~, 1
#define TRT_SECOND_OF(...) TRT_SECOND_OF_(__VA_ARGS__)
#define TRT_SECOND_OF_(first, second, ...) second
#define TRT_WHEN(bit) TRT_WHEN_(bit)
#define TRT_WHEN_(bit) TRT_WHEN_##bit
#define TRT_WHEN_1(...) __VA_ARGS__
#define TRT_WHEN_0(...)
/* The text of operator `symbol`: there if the build keeps the operator. */
#define TRT_IF_OPERATOR(symbol) TRT_WHEN(TRT_KEEPS(TRT_WITH_##symbol))

/* The parameters of one bound kernel call, whichever operator it is: trt_params.<symbol> is
 * the row's parameter struct. */
typedef union {
#define TRT_OPERATOR(symbol, name, overload, parameters) TRT_IF_OPERATOR(symbol)(parameters symbol;)
#include "operators.def"
#undef TRT_OPERATOR
#if TRT_ETHOS_U
    ethos_u_params ethos_u;     /* an Ethos-U delegate's call (ethos_u_delegate.c) */
#endif
} trt_params;

/* The names a variant's `isa` may have, fastest first (the host tools read this list). */
#define TRT_KERNEL_VARIANT_NAMES "mve dsp c"

typedef struct {
    const char *isa;                                        /* one of TRT_KERNEL_VARIANT_NAMES */
    int (*accepts)(const trt_params *p);                    /* NULL: every call the bind step admits */
    size_t (*scratch_bytes)(const trt_params *p);           /* NULL: no workspace of its own */
    void (*prepare)(trt_params *p, void *scratch);          /* NULL: nothing to precompute */
    size_t (*temp_bytes)(const trt_params *p);              /* NULL: no working memory while it runs */
    void (*invoke)(const trt_params *p, void *temp);        /* temp: its working memory, 16-byte aligned */
} trt_kernel_variant;

typedef struct trt_operator trt_operator;
struct trt_operator {
    const char *name;                                       /* "cortex_m::quantized_conv2d" */
    const char *overload;                                   /* "out" */
    /* Validate the call and fill p; add the call's multiply-accumulates to *macs. */
    trt_status (*bind)(const trt_call *c, trt_params *p, uint64_t *macs);
    const trt_kernel_variant *variants;                     /* fastest first; the last one is plain C */
    uint8_t n_variants;
    /* NULL, or: take on the work of the next call (next, bound to next_p) in this call's kernel
     * (*kernel, the variant it bound, which the operator may change to another of its variants with
     * the same scratch and prepare), bit for bit, changing both calls' parameters (1), or leave both
     * as they are (0). Fused, the kernel writes no more of its out than the first bytes, as many as
     * the next call's out has, from which the next call then makes its own out. The loader asks
     * only when the next call is the last reader of this call's output, which no caller reads
     * (runtime.c, fuse_calls); the operator checks the rest. */
    int (*fuse_next)(trt_params *p, const trt_kernel_variant **kernel, const trt_operator *next, trt_params *next_p);
};

/* The max pool's parameters of a call trt_is_max_pool (below) admits: named through the union's start (where every
 * member lies), since a table without a max pool (a program's own image or library) has no member of theirs. */
static inline trt_max_pool_params *trt_max_pool_params_of(trt_params *p) { return (trt_max_pool_params *)(void *)p; }

/* The row of `name`.`overload`, or NULL. */
const trt_operator *trt_find_operator(const char *name, uint32_t name_len, const char *overload,
                                      uint32_t overload_len);

/* The table in operators.def order: its length, and row i (NULL past the end). */
int trt_operator_count(void);
const trt_operator *trt_operator_at(int i);

/* The variant a bound call runs with: the fastest one that accepts it; never NULL while the
 * operator has its plain-C variant (a deploy library may leave it out on the core: NULL then). */
const trt_kernel_variant *trt_choose_variant(const trt_operator *op, const trt_params *p);

/* The operators (ops/<operator>.c) and their names (operator_table.c), from operators.def. */
#define TRT_OPERATOR(symbol, name, overload, parameters)                                      \
    TRT_IF_OPERATOR(symbol)(extern const trt_operator trt_op_##symbol;                        \
                            extern const char trt_op_name_##symbol[], trt_op_overload_##symbol[];)
#include "operators.def"
#undef TRT_OPERATOR

/* Whether op is the row of cortex_m::quantized_max_pool2d or of its _nhwc form: its table entry, in
 * a build that keeps it (a build without either has no max pool to fuse). */
static inline int trt_is_max_pool(const trt_operator *op) {
    (void)op;   /* read in no build that keeps neither */
    return TRT_IF_OPERATOR(quantized_max_pool2d)(op == &trt_op_quantized_max_pool2d ||)
           TRT_IF_OPERATOR(quantized_max_pool2d_nhwc)(op == &trt_op_quantized_max_pool2d_nhwc ||) 0;
}

/* In ops/<operator>.c: the adapters from a kernel's entry points, which take its operator's own
 * parameters (`member` of trt_params), to a variant's, which take trt_params. Each defines one,
 * named after the kernel's function with _p appended. Static inline and marked unused: a build
 * without the kernel's ISA, whose variant list leaves the row out, compiles none of it (at -O0
 * too: no reference to a kernel it does not link) and no compiler warns of it. */
#if defined(__GNUC__)
#define TRT_ADAPTER static inline __attribute__((unused))
#else
#define TRT_ADAPTER static inline
#endif
#define TRT_ACCEPTS(fn, member) TRT_ADAPTER int fn##_p(const trt_params *p) { return fn(&p->member); }
#define TRT_BYTES(fn, member) TRT_ADAPTER size_t fn##_p(const trt_params *p) { return fn(&p->member); }
#define TRT_PREPARE(fn, member) TRT_ADAPTER void fn##_p(trt_params *p, void *scratch) { fn(&p->member, scratch); }
#define TRT_RUN(fn, member) TRT_ADAPTER void fn##_p(const trt_params *p, void *temp) { fn(&p->member, temp); }
/* ... of a kernel that needs no working memory. */
#define TRT_RUN_ALONE(fn, member)                                                                \
    TRT_ADAPTER void fn##_p(const trt_params *p, void *temp) { (void)temp; fn(&p->member); }

/* The five adapters of a kernel that has every entry point, named by its prefix: prefix_accepts,
 * prefix_scratch_bytes, prefix_prepare, prefix_temp_bytes, and `run`; TRT_ENTRY_POINTS_OF names the
 * first four in a row's order. `run` is pasted here, not handed on to TRT_RUN: an argument handed on
 * is expanded first, and a deploy library's names are macros (its header renames the runtime's
 * functions). */
#define TRT_ALL_ENTRY_POINTS(prefix, run, member)                                                \
    TRT_ACCEPTS(prefix##_accepts, member) TRT_BYTES(prefix##_scratch_bytes, member)             \
    TRT_PREPARE(prefix##_prepare, member) TRT_BYTES(prefix##_temp_bytes, member)                \
    TRT_ADAPTER void run##_p(const trt_params *p, void *temp) { run(&p->member, temp); }
#define TRT_ENTRY_POINTS_OF(prefix)                                                              \
    prefix##_accepts_p, prefix##_scratch_bytes_p, prefix##_prepare_p, prefix##_temp_bytes_p

/* A row of a variant list: TRT_<ISA>_VARIANT(run, accepts, scratch_bytes, prepare, temp_bytes), NULL
 * where the kernel has none; it invokes the adapter run_p. `run`, its kernel's run function, names
 * the variant (its flag TRT_USES_<run>, tinyrps.firmware.operators). An ISA's row is there on the
 * builds that have the ISA (kernels/isa.h) and keep the variant, else it is nothing. `run` is
 * pasted, never handed on: a deploy library's names are macros. */
#if TRT_HAVE_MVE
#define TRT_MVE_VARIANT(run, ...) TRT_WHEN(TRT_KEEPS(TRT_USES_##run))({"mve", __VA_ARGS__, run##_p},)
#else
#define TRT_MVE_VARIANT(run, ...)
#endif
#if TRT_HAVE_DSP
#define TRT_DSP_VARIANT(run, ...) TRT_WHEN(TRT_KEEPS(TRT_USES_##run))({"dsp", __VA_ARGS__, run##_p},)
#else
#define TRT_DSP_VARIANT(run, ...)
#endif
#define TRT_C_VARIANT(run, ...) TRT_WHEN(TRT_KEEPS(TRT_USES_##run))({"c", __VA_ARGS__, run##_p},)

/* In ops/<operator>.c: row `symbol` of operators.def, its bind step and its variant list. */
#define TRT_DEFINE_OPERATOR(symbol, bind, variants) TRT_DEFINE_FUSING_OPERATOR(symbol, bind, variants, NULL)

/* The same for an operator whose kernels may take on the next call's work (trt_operator.fuse_next). */
#define TRT_DEFINE_FUSING_OPERATOR(symbol, bind, variants, fuse_next)                          \
    const trt_operator trt_op_##symbol = {trt_op_name_##symbol, trt_op_overload_##symbol, bind, variants, \
                                          (uint8_t)(sizeof variants / sizeof variants[0]), fuse_next}

#endif
