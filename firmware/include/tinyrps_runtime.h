/*
 * tinyrps runtime: executes an ExecuTorch Cortex-M (CMSIS-NN operator) .pte
 * program with no operating system and no heap.
 *
 * The program bytes are used in place (flash, or memory filled by a loader) and
 * never modified. Every activation lives in one caller-provided arena laid out
 * by the program's own memory plan; the program's inputs and outputs are tensors
 * in that arena, written and read in place. Every function returns TRT_OK or a
 * negative trt_status; nothing reads or writes outside the program buffer or the arena.
 *
 * Typical use (all storage static):
 *
 *     static trt_program_storage storage;
 *     static uint8_t arena[64 * 1024] __attribute__((aligned(16)));
 *     trt_program *prog = trt_program_init(&storage);
 *     char why[64];
 *     if (trt_load(prog, pte, pte_len, arena, sizeof arena, why, sizeof why) != TRT_OK) ...
 *     trt_tensor_info in, out;
 *     trt_input(prog, 0, &in);             write in.nbytes bytes to in.data (in in.dim_order)
 *     trt_run(prog);
 *     trt_output(prog, 0, &out);           read out.nbytes bytes from out.data
 *
 * Facts the host tools share with this header are read from it (src/tinyrps/firmware/c_facts.py):
 * the status list, the dtype list and the limits below. Keep their one-line forms.
 */
#ifndef TINYRPS_RUNTIME_H
#define TINYRPS_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

/* ---- limits --------------------------------------------------------------------------------
 * The static tables of a trt_program (trt_program_storage is sized from them). A program over
 * one is refused with TRT_ERR_LIMIT and a reason naming it. Each may be changed at build time
 * (-DTRT_MAX_KERNEL_CALLS=256 to CMake or the compiler; a program's own firmware image and
 * library are built with its own counts). The defaults hold the MLPerf Tiny networks and
 * MobileNetV2 and V3-small: MobileNetV3-small at 96x96x3 exported for the Cortex-M backend has
 * 1,734 values, 10 operators, 120 kernel calls, one input and one output; MobileNetV2 67 calls.
 * Values and tensors are not copied into tables: each kernel call's arguments are read from the
 * program when the call is bound. */
#ifndef TRT_MAX_VALUES
#define TRT_MAX_VALUES 65535       /* values of the execution plan (value indices are 16-bit) */
#endif
#ifndef TRT_MAX_OPERATORS
#define TRT_MAX_OPERATORS 32       /* entries of the plan's operator table */
#endif
#ifndef TRT_MAX_KERNEL_CALLS
#define TRT_MAX_KERNEL_CALLS 128   /* kernel calls of the chain */
#endif
#ifndef TRT_MAX_KERNEL_ARGS
#define TRT_MAX_KERNEL_ARGS 32     /* arguments of one kernel call (its tensors among them) */
#endif
#ifndef TRT_MAX_CALL_LIST_ITEMS
#define TRT_MAX_CALL_LIST_ITEMS 64 /* int-list items over all arguments of one kernel call */
#endif
#ifndef TRT_MAX_MEMORY_IDS
#define TRT_MAX_MEMORY_IDS 4       /* planned buffers (memory ids) of the memory plan */
#endif
#ifndef TRT_MAX_INPUTS
#define TRT_MAX_INPUTS 8           /* input tensors of the program */
#endif
#ifndef TRT_MAX_OUTPUTS
#define TRT_MAX_OUTPUTS 16         /* output tensors of the program (each of any size) */
#endif

/* Every limit, in the order trt_limit() numbers them (and the link and the batch report them). */
#define TRT_LIMIT_LIST(X) \
    X(TRT_MAX_VALUES) X(TRT_MAX_OPERATORS) X(TRT_MAX_KERNEL_CALLS) X(TRT_MAX_KERNEL_ARGS) \
    X(TRT_MAX_CALL_LIST_ITEMS) X(TRT_MAX_MEMORY_IDS) X(TRT_MAX_INPUTS) X(TRT_MAX_OUTPUTS)
#define TRT_LIMIT_COUNT_ONE(name) +1
#define TRT_LIMIT_COUNT (0 TRT_LIMIT_LIST(TRT_LIMIT_COUNT_ONE))

#define TRT_MAX_RANK 6

/* Bytes of static storage a trt_program needs (checked at compile time): what its tables take
 * at the limits above. They hold pointers, so 64-bit hosts need more than a Cortex-M. */
#define TRT_PROGRAM_STORAGE_BYTES                                                                 \
    ((size_t)TRT_MAX_KERNEL_CALLS * (sizeof(void *) <= 4 ? 200u : 264u) +                         \
     (size_t)(TRT_MAX_INPUTS + TRT_MAX_OUTPUTS) * (sizeof(void *) <= 4 ? 112u : 136u) +          \
     (size_t)TRT_MAX_KERNEL_ARGS * (sizeof(void *) <= 4 ? 96u : 112u) +                           \
     (size_t)TRT_MAX_CALL_LIST_ITEMS * 8u + (size_t)TRT_MAX_OPERATORS * sizeof(void *) +          \
     (size_t)TRT_MAX_MEMORY_IDS * 2u * sizeof(size_t) + 512u)

/* ---- status ----------------------------------------------------------------------------------
 * X(enum name, value, trt_status_name's text): the one list of statuses. */
#define TRT_STATUS_LIST(X)                                                                             \
    X(TRT_OK, 0, "ok")                                                                                 \
    X(TRT_ERR_TRUNCATED, -1, "truncated")                 /* an offset or length points outside */     \
    X(TRT_ERR_BAD_MAGIC, -2, "bad magic")                 /* not an ExecuTorch program */              \
    X(TRT_ERR_MALFORMED, -3, "malformed")                 /* flatbuffer structure invalid */           \
    X(TRT_ERR_UNSUPPORTED_OP, -4, "unsupported operator") /* an operator not implemented here */      \
    X(TRT_ERR_ARENA_TOO_SMALL, -5, "arena too small")     /* the memory plan does not fit the arena */ \
    X(TRT_ERR_BAD_TENSOR, -6, "bad tensor")               /* tensor inconsistent with its use */       \
    X(TRT_ERR_BAD_INPUT, -7, "bad input")                 /* a wrong argument, or a NULL one */        \
    X(TRT_ERR_LIMIT, -8, "over runtime limit")            /* more than a static table above holds */ \
    X(TRT_ERR_NPU, -9, "NPU invoke failed")               /* the NPU driver reported a failed job */

#define TRT_STATUS_ENUM(name, value, text) name = value,
typedef enum { TRT_STATUS_LIST(TRT_STATUS_ENUM) } trt_status;
#undef TRT_STATUS_ENUM

/* ---- dtypes ----------------------------------------------------------------------------------
 * X(enum name, ExecuTorch ScalarType code, name, bytes per element): the dtypes a tensor may
 * have (executorch/exir/_serialize/scalar_type.fbs). */
#define TRT_DTYPE_LIST(X)          \
    X(TRT_UINT8, 0, "uint8", 1)    \
    X(TRT_INT8, 1, "int8", 1)      \
    X(TRT_INT16, 2, "int16", 2)    \
    X(TRT_INT32, 3, "int32", 4)    \
    X(TRT_INT64, 4, "int64", 8)    \
    X(TRT_FLOAT32, 6, "float32", 4) \
    X(TRT_FLOAT64, 7, "float64", 8) \
    X(TRT_BOOL, 11, "bool", 1)

#define TRT_DTYPE_ENUM(name, code, text, bytes) name = code,
enum { TRT_DTYPE_LIST(TRT_DTYPE_ENUM) };
#undef TRT_DTYPE_ENUM

/* Name of a dtype code ("float32"), or NULL for one not in the list. */
const char *trt_dtype_name(int dtype);

/* ---- the program -------------------------------------------------------------------------- */

typedef struct trt_program trt_program;  /* opaque */

/* Suitably aligned static storage for one trt_program. */
typedef union {
    uint64_t align_u64;
    double align_double;
    void *align_pointer;
    unsigned char bytes[TRT_PROGRAM_STORAGE_BYTES];
} trt_program_storage;

/* The program object living in `storage` (no allocation). */
trt_program *trt_program_init(trt_program_storage *storage);

/* Static storage the runtime needs for its tables (bytes), independent of the model. */
size_t trt_program_size(void);

/* Limit `i` (0 .. TRT_LIMIT_COUNT - 1, in TRT_LIMIT_LIST order) as this build has it, and its
 * name ("TRT_MAX_KERNEL_CALLS"); NULL name and 0 out of range. */
uint32_t trt_limit(int i, const char **name);

/* Parse and validate the whole program (every offset, index, tensor size against
 * the buffer and the arena) before anything runs. On error, detail (if non-NULL)
 * receives a short NUL-terminated reason, e.g. the unsupported operator's name.
 * pte must stay valid and unchanged while the program is in use. */
trt_status trt_load(trt_program *prog, const uint8_t *pte, size_t pte_len,
                    uint8_t *arena, size_t arena_len, char *detail, size_t detail_len);

/* Bytes of arena the loaded program needs (0 if nothing is loaded): its memory plan, and the
 * kernels' workspace and working memory where they find no room in it while they are live.
 * trt_load with arena == NULL and arena_len == 0 fails with TRT_ERR_ARENA_TOO_SMALL but still
 * reports the need here, so a caller can size its arena. */
size_t trt_arena_needed(const trt_program *prog);

/* The arena in three parts (docs/runtime.md, "Memory plan"): the planned buffers; what the kernel
 * calls' own workspace (what their variants precompute at load, and the kept raw int8 values) adds
 * above the plan and the working memory; what the calls' working memory adds above the plan where
 * no gap of it is big enough. Both are placed by lifetime in the plan's free bytes first, so each
 * is 0 when all of it fits there. They add up to trt_arena_needed (all 0 if nothing is loaded). */
typedef struct {
    size_t planned, workspace, working;
} trt_arena_parts;
void trt_arena_layout(const trt_program *prog, trt_arena_parts *parts);

/* ---- inputs and outputs -------------------------------------------------------------------- */

/* One input or output tensor of the loaded program. Its bytes are `data`, `nbytes` long, in the
 * arena: the elements in dim_order (the outermost dimension first), each `elem_size` bytes,
 * little-endian; element [i0, i1, ...] is at sum(i_d * strides[d]) elements from `data`. */
typedef struct {
    int dtype;                          /* TRT_FLOAT32, TRT_INT8, ... (ScalarType codes) */
    int rank;
    int32_t sizes[TRT_MAX_RANK];        /* the logical shape */
    uint8_t dim_order[TRT_MAX_RANK];    /* logical dims from outermost to innermost in memory */
    int32_t strides[TRT_MAX_RANK];      /* in elements, per logical dim */
    size_t numel, nbytes, elem_size;
    uint8_t *data;                      /* inputs: write here; outputs: read here (never write) */
    int has_int8;                       /* outputs: 1 when trt_output_int8 has the raw int8 values */
} trt_tensor_info;

int trt_input_count(const trt_program *prog);
int trt_output_count(const trt_program *prog);
trt_status trt_input(const trt_program *prog, int i, trt_tensor_info *info);
trt_status trt_output(const trt_program *prog, int i, trt_tensor_info *info);

/* The raw int8 values of output i: when the kernel call that writes it is a
 * dequantize_per_tensor, the int8 tensor it read (same shape and layout as the output, one
 * byte per element), as that call read it. TRT_ERR_BAD_INPUT when the output has none (an
 * int8 output is its own raw values: trt_output's data). */
trt_status trt_output_int8(const trt_program *prog, int i, const int8_t **data, size_t *count);

/* The quantization of an int8 input (output 0) or output (output 1) of a program exported with integer
 * inputs and outputs (`tinyrps export --io int8`): the float it stands for is scale * (q - zero_point).
 * ExecuTorch's QuantizeInputs / QuantizeOutputs passes record it in the program as constant methods
 * ("input0_scale", "input0_zp", ...). TRT_ERR_BAD_TENSOR for a tensor that is not int8 or has none. */
trt_status trt_io_quantization(const trt_program *prog, int output, int i, double *scale, int32_t *zero_point);

/* Run one inference on the inputs as written. Write every input in full before each run: the
 * memory plan reuses an input's bytes once no kernel call reads it any more. After the run,
 * every output holds what its kernel call wrote (see the load-time guarantees in runtime.md). */
trt_status trt_run(trt_program *prog);

/* ---- inspection and profile ----------------------------------------------------------------- */

/* Multiply-accumulates of one inference (convolutions and linear layers). */
uint64_t trt_macs(const trt_program *prog);

/* Number of kernel calls in the loaded program's chain. */
int trt_call_count(const trt_program *prog);

/* Name of kernel call i ("cortex_m::quantized_conv2d"), or NULL if out of range. */
const char *trt_call_name(const trt_program *prog, int i);

/* Kernel variant kernel call i runs with, chosen at load from the build's ISA: "mve" (Helium),
 * "dsp" (the DSP extension's SIMD multiply-accumulates) or "c" (portable); NULL if out of range. */
const char *trt_call_variant(const trt_program *prog, int i);

/* Place of that variant in its operator's variant list as this build compiles it (0: the
 * fastest its ISA has), or -1 if out of range: which of several variants of one ISA a call
 * binds, so that a build for one program can keep only those (tinyrps deploy library). */
int trt_call_variant_index(const trt_program *prog, int i);

/* Run only kernel calls [begin, end) of the chain, on the arena as it is: after writing the
 * inputs, trt_run_calls(prog, 0, k + 1) leaves the output of call k in place, and calls may
 * be run one at a time to inspect each output before a later call reuses its bytes. */
trt_status trt_run_calls(trt_program *prog, int begin, int end);

/* Where the output tensor of kernel call i lives (within the arena) and its length. */
trt_status trt_call_output(const trt_program *prog, int i, const uint8_t **data, size_t *len);

/* Per-layer profile, optional. `counter` is any monotonic count (on the boards: executed
 * instructions); while it is set, trt_run and trt_run_calls record how far it advanced
 * across each kernel call. NULL (the default after trt_load) turns profiling off. */
typedef uint64_t (*trt_counter_fn)(void);
void trt_set_counter(trt_program *prog, trt_counter_fn counter);

/* Counter advance of kernel call i in the last profiled run (0 if none ran), and the
 * multiply-accumulates it does per inference. */
trt_status trt_call_profile(const trt_program *prog, int i, uint64_t *count, uint64_t *macs);

const char *trt_status_name(trt_status s);

/* ---- the NPU driver (programs with an Ethos-U delegate) ---------------------------------------
 * A program's Ethos-U delegate runs on an NPU through these three functions, shaped like Arm's
 * Ethos-U core driver (ethosu_reserve_driver, ethosu_invoke_v3, ethosu_release_driver). The
 * application links them; the runtime declares them weak, and a program with an Ethos-U delegate
 * and no driver linked is refused at load (TRT_ERR_UNSUPPORTED_OP, "no NPU driver linked").
 * For each inference of the delegate the runtime copies its inputs into the scratch, reserves a
 * driver, invokes it once with the delegate's command stream (its COP1 payload, Vela's cmd_data)
 * and the base addresses and sizes of TRT_NPU_REGIONS regions, releases it and copies the outputs
 * back out of the scratch. Region 0 is the delegate's weights (in the program, read only), region
 * 1 the scratch and region 2 the fast scratch (both in the arena, 16-byte aligned).
 * trt_npu_invoke returns 0 when the job ran; anything else makes trt_run return TRT_ERR_NPU. */
#define TRT_NPU_REGIONS 3
struct trt_npu_driver;   /* the driver's own */
struct trt_npu_driver *trt_npu_reserve(void);   /* NULL: no NPU available (the run fails) */
int trt_npu_invoke(struct trt_npu_driver *driver, const void *command_stream, int command_stream_bytes,
                   uint64_t *const base_addresses, const size_t *base_sizes, int regions, void *user);
void trt_npu_release(struct trt_npu_driver *driver);

/* How many bytes a program occupies, from its own extended header ("eh00": the flatbuffer part
 * and the segment data behind it), for a loader that knows only where a program starts (a
 * flash partition). `available` bounds what may be read; the result is <= available.
 * TRT_ERR_MALFORMED when the header is missing or does not give the length. */
trt_status trt_program_extent(const uint8_t *pte, size_t available, size_t *length);

#endif
