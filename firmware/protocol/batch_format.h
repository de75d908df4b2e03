/*
 * The files of the firmware's semihosting batch (board/common/batch.c): the host's samples
 * file in, the results file out. docs/firmware.md describes them; the host
 * (src/tinyrps/firmware/qemu.py) reads these constants, lists and layouts from this file
 * (src/tinyrps/firmware/c_facts.py). All integers are little-endian.
 *
 * Samples file: N samples, each every input's bytes in order, each input in its own
 * memory order (its dim_order) and dtype: the tensor files of docs/firmware.md.
 *
 * Results file:
 *   header     the fields below, then one tensor description (tensor_desc.h) per input and
 *              per output, in order (HEADER_BYTES in all);
 *   records    one per sample: the record fields, then every output's bytes, each followed
 *              by its raw int8 values when it has them (RECORD_BYTES in all);
 *   profile    the profile fields, then one layer entry per kernel call;
 *   trailer    written last, so a complete file ends with it.
 */
#ifndef TINYRPS_BATCH_FORMAT_H
#define TINYRPS_BATCH_FORMAT_H

#define BATCH_VERSION 6
/* The magic words at the start of each part (its MAGIC field). */
#define BATCH_HEADER_ID "TRPO"
#define BATCH_PROFILE_ID "TRPL"
#define BATCH_TRAILER_ID "TRPE"

#define BATCH_HEADER_FIELDS(X)                                                                  \
    X(MAGIC, 0, text4)                                                                          \
    X(VERSION, 4, u32)                                                                          \
    X(HEADER_BYTES, 8, u32)       /* this header with its tensor descriptions */               \
    X(RECORD_BYTES, 12, u32)                                                                    \
    X(COUNT, 16, u32)             /* samples run (0 when the program did not load) */         \
    X(LOAD_STATUS, 20, i32)                                                                     \
    X(ARENA_NEEDED, 24, u32)                                                                    \
    X(ARENA_CAPACITY, 28, u32)                                                                  \
    X(PROGRAM_BYTES, 32, u32)                                                                   \
    X(BOOT_INSTRUCTIONS, 36, u32) /* reset to ready (the program found and loaded) */         \
    X(SHA256, 40, bytes32)        /* the program's SHA-256 when SHA256_KNOWN, else zeros */    \
    X(LOAD_DETAIL, 72, text48)                                                                  \
    X(BOARD, 120, text16)                                                                       \
    X(INPUTS, 136, u16)                                                                         \
    X(OUTPUTS, 138, u16)                                                                        \
    X(SAMPLE_BYTES, 140, u32)     /* bytes of one sample in the samples file */                \
    X(LIMIT_COUNT, 144, u32)                                                                    \
    X(LIMITS, 148, u32x16)        /* this build's limits, in TRT_LIMIT_LIST order */          \
    X(ARENA_PLANNED, 212, u32)    /* ARENA_NEEDED's parts (trt_arena_layout) */              \
    X(ARENA_WORKSPACE, 216, u32)                                                                \
    X(ARENA_WORKING, 220, u32)                                                                  \
    X(LOAD_INSTRUCTIONS, 224, u32) /* trt_load's share of BOOT_INSTRUCTIONS */                 \
    X(SHA256_INSTRUCTIONS, 228, u32) /* what the hash took, after the boot (0: not asked) */  \
    X(SHA256_KNOWN, 232, u32)     /* 1: the boot descriptor asked for the hash (BOOT_FLAG_SHA256) */
#define BATCH_HEADER_FIXED_BYTES 236

#define BATCH_RECORD_FIELDS(X) X(STATUS, 0, i32) X(PAD, 4, u32) X(INSTRUCTIONS, 8, u64)
#define BATCH_RECORD_HEADER_BYTES 16

#define BATCH_PROFILE_FIELDS(X) X(MAGIC, 0, text4) X(LAYERS, 4, u32) X(LAYER_BYTES, 8, u32) X(SAMPLES, 12, u32)
#define BATCH_PROFILE_HEADER_BYTES 16

/* per kernel call: the kernel variant the runtime bound (TRT_KERNEL_VARIANT_NAMES), the
 * multiply-accumulates per inference, the instructions summed over the samples, and the bound
 * variant's place in its operator's variant list as the firmware compiles it
 * (trt_call_variant_index) */
#define BATCH_LAYER_FIELDS(X)                                                                          \
    X(OPERATOR, 0, text40) X(VARIANT, 40, text8) X(MACS, 48, u64) X(INSTRUCTIONS, 56, u64)             \
    X(VARIANT_INDEX, 64, u32) X(LAYER_PAD, 68, u32)
#define BATCH_LAYER_BYTES 72

#define BATCH_TRAILER_FIELDS(X) X(MAGIC, 0, text4) X(STACK_USED, 4, u32) X(STACK_SIZE, 8, u32) X(RECORDS, 12, u32)
#define BATCH_TRAILER_BYTES 16

#define BATCH_MAX_LIMITS 16

/* The firmware's exit status in batch mode (QEMU exits with it). */
#define BATCH_EXIT_LIST(X)                                 \
    X(BATCH_EXIT_OK, 0, "done")                            \
    X(BATCH_EXIT_IO, 1, "bad arguments or file I/O")       \
    X(BATCH_EXIT_NOT_LOADED, 2, "the program did not load") \
    X(BATCH_EXIT_FAULT, 3, "a CPU fault")

#define BATCH_ENUM_ENTRY(name, value, text) name = value,
enum { BATCH_EXIT_LIST(BATCH_ENUM_ENTRY) };
#undef BATCH_ENUM_ENTRY

#define BATCH_FIELD_HEADER(f, o, t) BATCH_HEADER_##f = o,
#define BATCH_FIELD_RECORD(f, o, t) BATCH_RECORD_##f = o,
#define BATCH_FIELD_PROFILE(f, o, t) BATCH_PROFILE_##f = o,
#define BATCH_FIELD_LAYER(f, o, t) BATCH_LAYER_##f = o,
#define BATCH_FIELD_TRAILER(f, o, t) BATCH_TRAILER_##f = o,
enum {
    BATCH_HEADER_FIELDS(BATCH_FIELD_HEADER) BATCH_RECORD_FIELDS(BATCH_FIELD_RECORD)
    BATCH_PROFILE_FIELDS(BATCH_FIELD_PROFILE) BATCH_LAYER_FIELDS(BATCH_FIELD_LAYER)
    BATCH_TRAILER_FIELDS(BATCH_FIELD_TRAILER)
};

#endif
