/*
 * Two libraries in one application: the default network as rps_default and the `fast` network as
 * rps_fast, each with its own arena, both classifying every picture.
 *
 *   app IMAGES RESULTS COUNT
 *
 * RESULTS: "TWO2", u32 images, i32 the two init statuses, then per picture and per library
 * (rps_default first): i32 label, f32 logits[3], i8 int8[4].
 */
#include <string.h>

#include "platform.h"
#include "rps_default.h"
#include "rps_fast.h"

static uint8_t arena_default[RPS_DEFAULT_ARENA_BYTES] RPS_DEFAULT_ALIGN16;
static uint8_t arena_fast[RPS_FAST_ARENA_BYTES] RPS_FAST_ALIGN16;
static uint8_t image[RPS_DEFAULT_IMAGE_BYTES];

static uint8_t *put(uint8_t *at, const void *value, size_t len) {
    memcpy(at, value, len);
    return at + len;
}

static uint8_t *put_result(uint8_t *at, int32_t label, const float *logits, const int8_t *raw, int n_raw) {
    int8_t values[4] = {0};
    if (n_raw > 0) memcpy(values, raw, (size_t)(n_raw < 4 ? n_raw : 4));
    at = put(at, &label, 4);
    at = put(at, logits, 3 * sizeof(float));
    return put(at, values, 4);
}

int app_main(void) {
    int argc;
    char **argv;
    if (platform_args(&argc, &argv) != 0 || argc != 4) {
        platform_print("usage: app IMAGES RESULTS COUNT");
        return 1;
    }
    uint32_t count = 0;
    for (const char *c = argv[3]; *c; c++) count = count * 10u + (uint32_t)(*c - '0');
    int in = platform_open(argv[1], 0), out = platform_open(argv[2], 1);
    if (in < 0 || out < 0) return 1;
    int32_t statuses[2] = {rps_default_init(arena_default, sizeof arena_default),
                           rps_fast_init(arena_fast, sizeof arena_fast)};
    uint8_t header[16], *at = put(header, "TWO2", 4);
    at = put(at, &count, 4);
    put(at, statuses, sizeof statuses);
    if (platform_write(out, header, sizeof header) != 0 || statuses[0] != 0 || statuses[1] != 0) return 1;
    for (uint32_t i = 0; i < count; i++) {
        uint8_t record[2 * 20];
        float logits[3];
        const int8_t *raw = NULL;
        if (platform_read(in, image, sizeof image) != 0) return 1;
        int32_t label = rps_default_classify(image, logits);
        int n_raw = rps_default_output_int8(0, &raw);
        at = put_result(record, label, logits, raw, n_raw);
        label = rps_fast_classify(image, logits);
        n_raw = rps_fast_output_int8(0, &raw);
        put_result(at, label, logits, raw, n_raw);
        if (platform_write(out, record, sizeof record) != 0) return 1;
    }
    platform_close(in);
    platform_close(out);
    return 0;
}
