/*
 * tinyrps-native: the firmware's C runtime on the host.
 *
 *   tinyrps-native info   MODEL.pte
 *       one JSON line: arena bytes, MACs, kernel calls and the kernel variant each runs
 *       with; or an error.
 *   tinyrps-native run    MODEL.pte IMAGES OUT
 *       IMAGES: N x 784 uint8 (28x28, row-major). OUT: N x n int8 outputs, then N x n
 *       float32 logits (little-endian). Prints {"images": N, "outputs": n}.
 *   tinyrps-native dump   MODEL.pte
 *       the flatbuffer as the reader parses it, as JSON (for cross-checks).
 *   tinyrps-native layers MODEL.pte IMAGES OUT
 *       for each image, the output bytes of every kernel call in chain order (for
 *       per-layer comparison with the reference). Prints the calls and their sizes.
 *   tinyrps-native ops
 *       the operator table (src/ops/operators.def) as one JSON line: each operator's name,
 *       overload and the kernel variants this build has for it, fastest first.
 *
 * Exit status: 0 ok, 2 usage or I/O error, 3 the program was rejected (the
 * reason on stderr as "error: <status>: <detail>").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_io.h"
#include "ops/operator_table.h"
#include "pte_dump.h"
#include "tinyrps_runtime.h"

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

static int cmd_info(const char *model) {
    loaded_program lp = {0};
    int rc = load(model, &lp);
    if (rc == 0) {
        printf("{\"arena_bytes\": %zu, \"program_storage_bytes\": %zu, \"macs\": %llu, \"calls\": [",
               trt_arena_needed(lp.prog), trt_program_size(), (unsigned long long)trt_macs(lp.prog));
        for (int i = 0; i < trt_instruction_count(lp.prog); i++)
            printf("%s\"%s\"", i ? ", " : "", trt_instruction_name(lp.prog, i));
        printf("], \"kernels\": [");
        for (int i = 0; i < trt_instruction_count(lp.prog); i++)
            printf("%s\"%s\"", i ? ", " : "", trt_instruction_variant(lp.prog, i));
        printf("]}\n");
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

static uint8_t *read_images(const char *path, size_t *count) {
    size_t len = 0;
    uint8_t *images = read_file_aligned(path, &len);
    if (!images || len % TRT_IMAGE_BYTES != 0) {
        fprintf(stderr, "error: %s is not a file of 28x28 uint8 images\n", path);
        free(images);
        return NULL;
    }
    *count = len / TRT_IMAGE_BYTES;
    return images;
}

/* The program and a file of images, for the commands that run one on the other. */
static int load_with_images(const char *model, const char *images_path, loaded_program *lp,
                            uint8_t **images, size_t *n) {
    int rc = load(model, lp);
    if (rc != 0) return rc;
    *images = read_images(images_path, n);
    return *images ? 0 : EXIT_USAGE;
}

static int cmd_run(const char *model, const char *images_path, const char *out_path) {
    loaded_program lp = {0};
    size_t n = 0;
    uint8_t *images = NULL;
    int rc = load_with_images(model, images_path, &lp, &images, &n);
    int8_t *q = NULL;
    float *logits = NULL;
    int n_out = 0;
    if (rc == 0) {
        q = calloc(n * TRT_MAX_OUTPUTS + 1, 1);
        logits = calloc(n * TRT_MAX_OUTPUTS + 1, sizeof(float));
        for (size_t i = 0; i < n && rc == 0; i++) {
            int8_t oq[TRT_MAX_OUTPUTS];
            float ol[TRT_MAX_OUTPUTS];
            trt_status s = trt_infer(lp.prog, images + i * TRT_IMAGE_BYTES, oq, ol, &n_out);
            if (s != TRT_OK) {
                fprintf(stderr, "error: inference failed: %s\n", trt_status_name(s));
                rc = EXIT_REJECTED;
                break;
            }
            memcpy(q + i * (size_t)n_out, oq, (size_t)n_out);
            memcpy(logits + i * (size_t)n_out, ol, (size_t)n_out * sizeof(float));
        }
    }
    if (rc == 0) {
        FILE *f = fopen(out_path, "wb");
        int ok = f && fwrite(q, 1, n * (size_t)n_out, f) == n * (size_t)n_out &&
                 fwrite(logits, sizeof(float), n * (size_t)n_out, f) == n * (size_t)n_out;
        if (f && fclose(f) != 0) ok = 0;
        if (!ok) {
            fprintf(stderr, "error: cannot write %s\n", out_path);
            rc = EXIT_USAGE;
        } else {
            printf("{\"images\": %zu, \"outputs\": %d}\n", n, n_out);
        }
    }
    free(q);
    free(logits);
    free(images);
    unload(&lp);
    return rc;
}

static int cmd_layers(const char *model, const char *images_path, const char *out_path) {
    loaded_program lp = {0};
    size_t n = 0;
    uint8_t *images = NULL;
    int rc = load_with_images(model, images_path, &lp, &images, &n);
    FILE *f = rc == 0 ? fopen(out_path, "wb") : NULL;
    if (rc == 0 && !f) rc = EXIT_USAGE;
    int calls = rc == 0 ? trt_instruction_count(lp.prog) : 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        for (int k = 0; k < calls; k++) {
            const uint8_t *data;
            size_t len;
            trt_run_prefix(lp.prog, images + i * TRT_IMAGE_BYTES, k + 1);
            trt_instruction_output(lp.prog, k, &data, &len);
            if (fwrite(data, 1, len, f) != len) rc = EXIT_USAGE;
        }
    }
    if (f && fclose(f) != 0) rc = EXIT_USAGE;
    if (rc == 0) {
        printf("{\"images\": %zu, \"calls\": [", n);
        for (int k = 0; k < calls; k++) {
            const uint8_t *data;
            size_t len;
            trt_instruction_output(lp.prog, k, &data, &len);
            printf("%s{\"name\": \"%s\", \"bytes\": %zu}", k ? ", " : "", trt_instruction_name(lp.prog, k), len);
        }
        printf("]}\n");
    }
    free(images);
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
    if (argc == 5 && strcmp(argv[1], "run") == 0) return cmd_run(argv[2], argv[3], argv[4]);
    if (argc == 5 && strcmp(argv[1], "layers") == 0) return cmd_layers(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: %s info MODEL.pte | dump MODEL.pte | run MODEL.pte IMAGES OUT | layers MODEL.pte IMAGES OUT | ops\n", argv[0]);
    return EXIT_USAGE;
}
