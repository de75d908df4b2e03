/*
 * tinyrps-native: the firmware's C runtime on the host.
 *
 *   tinyrps-native info   MODEL.pte
 *       one JSON line: arena bytes, MACs, kernel calls and the kernel variant each runs
 *       with, the program's inputs and outputs (dtype, shape, dim_order, bytes, raw int8),
 *       this build's limits; or an error.
 *   tinyrps-native run    MODEL.pte INPUTS RESULTS [PROFILE]
 *       INPUTS: a samples file, RESULTS: a results file (the tensor files of
 *       docs/firmware.md: per sample, every input's bytes in order; per sample, every
 *       output's bytes, each followed by its raw int8 values when it has them). Prints
 *       {"samples": N, "sample_bytes": ..., "result_bytes": ...}. With PROFILE, also the
 *       nanoseconds of this host's monotonic clock across each inference and each kernel
 *       call of it (the profile file of protocol/native_profile.h).
 *   tinyrps-native infer  MODEL.pte IMAGES OUT
 *       the image-classifier convenience (trt_infer): IMAGES N x 784 uint8 (28x28,
 *       row-major); OUT: N x n int8 outputs, then N x n float32 logits (little-endian).
 *       Prints {"images": N, "outputs": n}.
 *   tinyrps-native dump   MODEL.pte
 *       the flatbuffer as the reader parses it, as JSON (for cross-checks).
 *   tinyrps-native layers MODEL.pte INPUTS OUT
 *       for each sample of INPUTS (a samples file), the output bytes of every kernel call
 *       in chain order, each read right after the call ran (for per-layer comparison with
 *       the reference). Prints the calls and their sizes.
 *   tinyrps-native ops
 *       the operator table (src/ops/operators.def) as one JSON line: each operator's name,
 *       overload and the kernel variants this build has for it, fastest first.
 *
 * Exit status: 0 ok, 2 usage or I/O error, 3 the program was rejected (the
 * reason on stderr as "error: <status>: <detail>").
 */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "native_io.h"
#include "native_profile.h"
#include "ops/operator_table.h"
#include "pte_dump.h"
#include "tinyrps_image.h"
#include "tinyrps_runtime.h"
#if TRT_NATIVE_NPU_LINK
#include "npu_link_posix.h"
#endif

#define EXIT_USAGE 2
#define EXIT_REJECTED 3

static trt_program_storage storage;

typedef struct {
    uint8_t *pte;
    uint8_t *arena;
    trt_program *prog;
} loaded_program;

static int load(const char *path, loaded_program *lp) {
    size_t len = 0;
    char detail[160];
    lp->pte = read_file_aligned(path, &len);
    if (!lp->pte) {
        fprintf(stderr, "error: cannot read %s\n", path);
        return EXIT_USAGE;
    }
#if TRT_NATIVE_NPU_LINK
    npu_link_posix_program(lp->pte, len);   /* the hash each NPU job names its program by */
#endif
    lp->prog = trt_program_init(&storage);
    /* first pass sizes the arena, second pass loads into it */
    trt_status s = trt_load(lp->prog, lp->pte, len, NULL, 0, detail, sizeof detail);
    size_t need = trt_arena_needed(lp->prog);
    if (s == TRT_ERR_ARENA_TOO_SMALL && need > 0) {
        lp->arena = aligned_alloc(16, (need + 15) & ~(size_t)15);
        s = trt_load(lp->prog, lp->pte, len, lp->arena, need, detail, sizeof detail);
    }
    if (s != TRT_OK) {
        fprintf(stderr, "error: %s: %s\n", trt_status_name(s), detail);
        return EXIT_REJECTED;
    }
    return 0;
}

static void unload(loaded_program *lp) {
    free(lp->pte);
    free(lp->arena);
}

/* ---- the tensor files --------------------------------------------------------------------------- */

/* Bytes of one sample (every input) and of one sample's results (every output and raw int8). */
static size_t sample_bytes(const trt_program *prog) {
    size_t total = 0;
    trt_tensor_info t;
    for (int i = 0; i < trt_input_count(prog); i++)
        if (trt_input(prog, i, &t) == TRT_OK) total += t.nbytes;
    return total;
}

static size_t result_bytes(const trt_program *prog) {
    size_t total = 0;
    trt_tensor_info t;
    for (int i = 0; i < trt_output_count(prog); i++)
        if (trt_output(prog, i, &t) == TRT_OK) total += t.nbytes + (t.has_int8 ? t.numel : 0);
    return total;
}

/* Copy one sample's bytes into the program's inputs. */
static void write_inputs(trt_program *prog, const uint8_t *sample) {
    trt_tensor_info t;
    for (int i = 0; i < trt_input_count(prog); i++) {
        trt_input(prog, i, &t);
        memcpy(t.data, sample, t.nbytes);
        sample += t.nbytes;
    }
}

/* Append the outputs (and raw int8 values) of the last run to `out`. */
static void read_outputs(const trt_program *prog, uint8_t *out) {
    trt_tensor_info t;
    for (int i = 0; i < trt_output_count(prog); i++) {
        trt_output(prog, i, &t);
        memcpy(out, t.data, t.nbytes);
        out += t.nbytes;
        const int8_t *q;
        size_t count;
        if (trt_output_int8(prog, i, &q, &count) == TRT_OK) {
            memcpy(out, q, count);
            out += count;
        }
    }
}

static uint8_t *read_samples(const char *path, size_t sample, size_t *count) {
    size_t len = 0;
    uint8_t *data = read_file_aligned(path, &len);
    if (!data || len % sample != 0) {
        fprintf(stderr, "error: %s is not a whole number of %zu-byte samples (the program's inputs)\n", path, sample);
        free(data);
        return NULL;
    }
    *count = len / sample;
    return data;
}

static int write_file(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "error: cannot write %s\n", path);
    return ok ? 0 : EXIT_USAGE;
}

/* ---- commands -------------------------------------------------------------------------------------- */

static void print_ints(const char *key, const int32_t *v, int n) {
    printf("\"%s\": [", key);
    for (int d = 0; d < n; d++) printf("%s%ld", d ? ", " : "", (long)v[d]);
    printf("]");
}

static void print_tensor(const trt_tensor_info *t, int output) {
    int32_t order[TRT_MAX_RANK];
    for (int d = 0; d < t->rank; d++) order[d] = t->dim_order[d];
    printf("{\"dtype\": \"%s\", ", trt_dtype_name(t->dtype));
    print_ints("shape", t->sizes, t->rank);
    printf(", ");
    print_ints("dim_order", order, t->rank);
    printf(", \"nbytes\": %zu", t->nbytes);
    if (output) printf(", \"int8\": %s", t->has_int8 ? "true" : "false");
    printf("}");
}

static int cmd_info(const char *model) {
    loaded_program lp = {0};
    int rc = load(model, &lp);
    if (rc == 0) {
        trt_tensor_info t;
        printf("{\"arena_bytes\": %zu, \"program_storage_bytes\": %zu, \"macs\": %llu, \"calls\": [",
               trt_arena_needed(lp.prog), trt_program_size(), (unsigned long long)trt_macs(lp.prog));
        for (int i = 0; i < trt_call_count(lp.prog); i++)
            printf("%s\"%s\"", i ? ", " : "", trt_call_name(lp.prog, i));
        printf("], \"kernels\": [");
        for (int i = 0; i < trt_call_count(lp.prog); i++)
            printf("%s\"%s\"", i ? ", " : "", trt_call_variant(lp.prog, i));
        printf("], \"inputs\": [");
        for (int i = 0; i < trt_input_count(lp.prog); i++) {
            trt_input(lp.prog, i, &t);
            printf("%s", i ? ", " : "");
            print_tensor(&t, 0);
        }
        printf("], \"outputs\": [");
        for (int i = 0; i < trt_output_count(lp.prog); i++) {
            trt_output(lp.prog, i, &t);
            printf("%s", i ? ", " : "");
            print_tensor(&t, 1);
        }
        printf("], \"limits\": {");
        const char *name;
        for (int i = 0; i < TRT_LIMIT_COUNT; i++) {
            uint32_t value = trt_limit(i, &name);
            printf("%s\"%s\": %lu", i ? ", " : "", name, (unsigned long)value);
        }
        printf("}}\n");
    }
    unload(&lp);
    return rc;
}

static int cmd_dump(const char *model) {
    size_t len = 0;
    uint8_t *pte = read_file_aligned(model, &len);
    if (!pte) {
        fprintf(stderr, "error: cannot read %s\n", model);
        return EXIT_USAGE;
    }
    int rc = dump_program(pte, len);
    free(pte);
    return rc;
}

/* ---- the profile ---------------------------------------------------------------------------------- */

/* The runtime's counter on the host: CLOCK_MONOTONIC in nanoseconds (NATIVE_PROFILE_COUNTER). */
static uint64_t host_nanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

static void put_u32(uint8_t *at, uint32_t v) {
    for (int b = 0; b < 4; b++) at[b] = (uint8_t)(v >> (8 * b));
}

static void put_u64(uint8_t *at, uint64_t v) {
    for (int b = 0; b < 8; b++) at[b] = (uint8_t)(v >> (8 * b));
}

/* The profile file's header, for `samples` records of `calls` kernel calls each. */
static void profile_header(uint8_t *out, size_t samples, int calls) {
    memset(out, 0, NATIVE_PROFILE_HEADER_BYTES);
    memcpy(out + NATIVE_PROFILE_HEADER_MAGIC, NATIVE_PROFILE_ID, 4);
    put_u32(out + NATIVE_PROFILE_HEADER_VERSION, NATIVE_PROFILE_VERSION);
    put_u32(out + NATIVE_PROFILE_HEADER_SAMPLES, (uint32_t)samples);
    put_u32(out + NATIVE_PROFILE_HEADER_CALLS, (uint32_t)calls);
    memcpy(out + NATIVE_PROFILE_HEADER_COUNTER, NATIVE_PROFILE_COUNTER, strlen(NATIVE_PROFILE_COUNTER));
}

/* One sample's record: the inference's count, then each kernel call's (trt_call_profile). */
static void profile_record(const trt_program *prog, uint64_t inference, uint8_t *out) {
    put_u64(out, inference);
    for (int k = 0; k < trt_call_count(prog); k++) {
        uint64_t count = 0, macs = 0;
        trt_call_profile(prog, k, &count, &macs);
        put_u64(out + (size_t)(k + 1) * NATIVE_PROFILE_COUNT_BYTES, count);
    }
}

static int cmd_run(const char *model, const char *inputs_path, const char *out_path, const char *profile_path) {
    loaded_program lp = {0};
    size_t n = 0, record = 0;
    uint8_t *samples = NULL, *results = NULL, *profile = NULL;
    int rc = load(model, &lp);
    size_t in_bytes = rc == 0 ? sample_bytes(lp.prog) : 0, out_bytes = rc == 0 ? result_bytes(lp.prog) : 0;
    if (rc == 0 && !(samples = read_samples(inputs_path, in_bytes, &n))) rc = EXIT_USAGE;
    if (rc == 0) {
        results = malloc(n * out_bytes + 1);
        if (profile_path) {
            trt_set_counter(lp.prog, host_nanoseconds);
            record = (size_t)(trt_call_count(lp.prog) + 1) * NATIVE_PROFILE_COUNT_BYTES;
            profile = malloc(NATIVE_PROFILE_HEADER_BYTES + n * record);
            profile_header(profile, n, trt_call_count(lp.prog));
        }
        for (size_t i = 0; i < n && rc == 0; i++) {
            write_inputs(lp.prog, samples + i * in_bytes);
            uint64_t start = profile ? host_nanoseconds() : 0;
            trt_status s = trt_run(lp.prog);
            uint64_t inference = profile ? host_nanoseconds() - start : 0;
            if (s != TRT_OK) {
                fprintf(stderr, "error: inference failed: %s\n", trt_status_name(s));
                rc = EXIT_REJECTED;
            }
            read_outputs(lp.prog, results + i * out_bytes);
            if (profile) profile_record(lp.prog, inference, profile + NATIVE_PROFILE_HEADER_BYTES + i * record);
        }
    }
    if (rc == 0 && profile) rc = write_file(profile_path, profile, NATIVE_PROFILE_HEADER_BYTES + n * record);
    if (rc == 0 && (rc = write_file(out_path, results, n * out_bytes)) == 0)
        printf("{\"samples\": %zu, \"sample_bytes\": %zu, \"result_bytes\": %zu}\n", n, in_bytes, out_bytes);
    free(profile);
    free(results);
    free(samples);
    unload(&lp);
    return rc;
}

static int cmd_infer(const char *model, const char *images_path, const char *out_path) {
    loaded_program lp = {0};
    size_t n = 0, n_out = 0, n_q = 0;
    const int8_t *raw = NULL;
    uint8_t *images = NULL;
    int rc = load(model, &lp);
    trt_tensor_info out;
    if (rc == 0 && trt_output(lp.prog, 0, &out) == TRT_OK && !(images = read_samples(images_path, TRT_IMAGE_BYTES, &n)))
        rc = EXIT_USAGE;
    int8_t *q = rc == 0 ? calloc(n * out.numel + 1, 1) : NULL;
    float *logits = rc == 0 ? calloc(n * out.numel + 1, sizeof(float)) : NULL;
    for (size_t i = 0; i < n && rc == 0; i++) {
        trt_status s = trt_infer(lp.prog, images + i * TRT_IMAGE_BYTES, logits + i * out.numel, out.numel, &n_out);
        if (s == TRT_OK && out.dtype == TRT_INT8) {          /* an int8 output is its own raw values */
            memcpy(q + i * out.numel, out.data, out.numel);
        } else if (s == TRT_OK && trt_output_int8(lp.prog, 0, &raw, &n_q) == TRT_OK && n_q == n_out) {
            memcpy(q + i * out.numel, raw, n_q);
        } else {
            fprintf(stderr, "error: %s: the program is not an image classifier with raw int8 outputs "
                            "([1, 1, 28, 28] in, a row of scores out, float32 or int8 of known quantization)\n",
                    trt_status_name(s));
            rc = EXIT_REJECTED;
        }
    }
    if (rc == 0) {
        /* all int8 outputs, then all logits */
        uint8_t *both = malloc(n * out.numel * 5 + 1);
        memcpy(both, q, n * out.numel);
        memcpy(both + n * out.numel, logits, n * out.numel * sizeof(float));
        if ((rc = write_file(out_path, both, n * out.numel * 5)) == 0)
            printf("{\"images\": %zu, \"outputs\": %zu}\n", n, out.numel);
        free(both);
    }
    free(q);
    free(logits);
    free(images);
    unload(&lp);
    return rc;
}

static int cmd_layers(const char *model, const char *inputs_path, const char *out_path) {
    loaded_program lp = {0};
    size_t n = 0;
    uint8_t *samples = NULL;
    int rc = load(model, &lp);
    size_t in_bytes = rc == 0 ? sample_bytes(lp.prog) : 0;
    if (rc == 0 && !(samples = read_samples(inputs_path, in_bytes, &n))) rc = EXIT_USAGE;
    FILE *f = rc == 0 ? fopen(out_path, "wb") : NULL;
    if (rc == 0 && !f) rc = EXIT_USAGE;
    int calls = rc == 0 ? trt_call_count(lp.prog) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        write_inputs(lp.prog, samples + i * in_bytes);
        for (int k = 0; k < calls; k++) {
            const uint8_t *data;
            size_t len;
            trt_run_calls(lp.prog, k, k + 1);   /* read each output before a later call reuses its bytes */
            trt_call_output(lp.prog, k, &data, &len);
            if (fwrite(data, 1, len, f) != len) rc = EXIT_USAGE;
        }
    }
    if (f && fclose(f) != 0) rc = EXIT_USAGE;
    if (rc == 0) {
        printf("{\"samples\": %zu, \"calls\": [", n);
        for (int k = 0; k < calls; k++) {
            const uint8_t *data;
            size_t len;
            trt_call_output(lp.prog, k, &data, &len);
            printf("%s{\"name\": \"%s\", \"bytes\": %zu}", k ? ", " : "", trt_call_name(lp.prog, k), len);
        }
        printf("]}\n");
    }
    free(samples);
    unload(&lp);
    return rc;
}

static int cmd_ops(void) {
    printf("{\"operators\": [");
    for (int i = 0; i < trt_operator_count(); i++) {
        const trt_operator *op = trt_operator_at(i);
        printf("%s{\"name\": \"%s\", \"overload\": \"%s\", \"variants\": [", i ? ", " : "", op->name, op->overload);
        for (int k = 0; k < op->n_variants; k++) printf("%s\"%s\"", k ? ", " : "", op->variants[k].isa);
        printf("]}");
    }
    printf("]}\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "ops") == 0) return cmd_ops();
    if (argc == 3 && strcmp(argv[1], "info") == 0) return cmd_info(argv[2]);
    if (argc == 3 && strcmp(argv[1], "dump") == 0) return cmd_dump(argv[2]);
    if ((argc == 5 || argc == 6) && strcmp(argv[1], "run") == 0)
        return cmd_run(argv[2], argv[3], argv[4], argc == 6 ? argv[5] : NULL);
    if (argc == 5 && strcmp(argv[1], "infer") == 0) return cmd_infer(argv[2], argv[3], argv[4]);
    if (argc == 5 && strcmp(argv[1], "layers") == 0) return cmd_layers(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: %s info MODEL.pte | dump MODEL.pte | run MODEL.pte INPUTS RESULTS [PROFILE] | "
                    "infer MODEL.pte IMAGES OUT | layers MODEL.pte INPUTS OUT | ops\n", argv[0]);
    return EXIT_USAGE;
}
