/*
 * A test application of a library written by `tinyrps deploy library`, as a user of its API would
 * write one: the library has the default name, tinyrps_model.
 *
 *   app IMAGES RESULTS COUNT PROFILE
 *
 * IMAGES: COUNT pictures of 784 bytes. PROFILE 1: the library's per-layer profile runs with the
 * platform's clock. RESULTS (little-endian, packed):
 *   header: "TLIB", u32 labels, u32 layers, u32 records (0 when init failed), i32 status of init with one byte of arena
 *           too few, i32 status of init with a misaligned arena, i32 status of init, u32 arena bytes,
 *           then per layer 4 bytes: the kernel variant it runs with ("mve", "dsp", "c").
 *   per picture: i32 label (or a negative status), i32 clock wrapped, u64 clock ticks of the
 *           classify call, f32 logits[labels], i32 int8 count, i8 int8[16], u64 ticks per layer.
 */
#include <string.h>

#include "platform.h"
#include "tinyrps_model.h"

#define LABELS TINYRPS_MODEL_LABEL_COUNT
#define LAYERS TINYRPS_MODEL_LAYER_COUNT

static uint8_t arena[TINYRPS_MODEL_ARENA_BYTES + 16] TINYRPS_MODEL_ALIGN16;
static uint8_t image[TINYRPS_MODEL_IMAGE_BYTES];
static uint8_t record[4 + 4 + 8 + 4 * LABELS + 4 + 16 + 8 * LAYERS];

static uint8_t *put(uint8_t *at, const void *value, size_t len) {
    memcpy(at, value, len);
    return at + len;
}

static uint8_t *put_u32(uint8_t *at, uint32_t value) { return put(at, &value, 4); }

static int fail(const char *why) {
    platform_print(why);
    return 1;
}

static int parse_count(const char *text, uint32_t *count) {
    uint32_t n = 0;
    if (!*text) return -1;
    for (; *text; text++) {
        if (*text < '0' || *text > '9' || n > 100000000u) return -1;
        n = n * 10u + (uint32_t)(*text - '0');
    }
    *count = n;
    return 0;
}

static int write_header(int out, uint32_t count) {
    uint8_t header[32 + 4 * LAYERS], *at = header;
    int32_t too_small = tinyrps_model_init(arena, TINYRPS_MODEL_ARENA_BYTES - 1);
    int32_t misaligned = tinyrps_model_init(arena + 1, TINYRPS_MODEL_ARENA_BYTES);
    int32_t status = tinyrps_model_init(arena, TINYRPS_MODEL_ARENA_BYTES);
    at = put(at, "TLIB", 4);
    at = put_u32(at, LABELS);
    at = put_u32(at, LAYERS);
    at = put_u32(at, status == TINYRPS_MODEL_OK ? count : 0);   /* the records that follow */
    at = put(at, &too_small, 4);
    at = put(at, &misaligned, 4);
    at = put(at, &status, 4);
    at = put_u32(at, TINYRPS_MODEL_ARENA_BYTES);
    for (int i = 0; i < LAYERS; i++) {
        char variant[4] = {0};
        const char *name = tinyrps_model_layer_kernels(i);
        for (int k = 0; name && name[k] && k < 3; k++) variant[k] = name[k];
        at = put(at, variant, 4);
    }
    if (platform_write(out, header, (size_t)(at - header)) != 0) return -1;
    return status;
}

static void classify_one(void) {
    float logits[LABELS] = {0};
    int8_t values[16] = {0};
    uint64_t layers[LAYERS] = {0};
    const int8_t *raw = NULL;
    platform_clock_restart();
    int32_t label = tinyrps_model_classify(image, logits);
    uint64_t ticks = platform_clock_ticks();
    int32_t wrapped = platform_clock_wrapped();
    int32_t n_int8 = tinyrps_model_output_int8(0, &raw);
    if (n_int8 > 0) memcpy(values, raw, (size_t)(n_int8 < 16 ? n_int8 : 16));
    tinyrps_model_profile(layers);
    uint8_t *at = record;
    at = put(at, &label, 4);
    at = put(at, &wrapped, 4);
    at = put(at, &ticks, 8);
    at = put(at, logits, sizeof logits);
    at = put(at, &n_int8, 4);
    at = put(at, values, sizeof values);
    put(at, layers, sizeof layers);
}

int app_main(void) {
    int argc;
    char **argv;
    uint32_t count;
    if (platform_args(&argc, &argv) != 0 || argc != 5 || parse_count(argv[3], &count) != 0)
        return fail("usage: app IMAGES RESULTS COUNT PROFILE");
    int in = platform_open(argv[1], 0), out = platform_open(argv[2], 1);
    if (in < 0 || out < 0) return fail("cannot open the files");
    if (write_header(out, count) != TINYRPS_MODEL_OK) return fail("tinyrps_model_init failed");
    if (argv[4][0] == '1') tinyrps_model_set_counter(platform_clock_ticks);
    for (uint32_t i = 0; i < count; i++) {
        if (platform_read(in, image, sizeof image) != 0) return fail("cannot read a picture");
        classify_one();
        if (platform_write(out, record, sizeof record) != 0) return fail("cannot write a result");
    }
    platform_close(in);
    platform_close(out);
    return 0;
}
