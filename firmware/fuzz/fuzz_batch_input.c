/*
 * libFuzzer target: the batch transport's input parsing (firmware/protocol/batch_input.c),
 * under AddressSanitizer and UBSan, against a plain reference of what it must do.
 *
 * Input: 8 bytes, the images file's size (little-endian, signed), then the semihosting
 * command line as the debugger hands it over (at most 511 bytes, NUL-terminated).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch_input.h"
#include "tinyrps_runtime.h"

#define LINE_BYTES 512 /* the firmware's command-line buffer */

static int is_separator(char c) { return c == ' ' || c == '\t'; }

typedef struct {
    size_t at, len;
} word;

/* The reference: split the whole line front to back and keep the last two words. */
static int reference_last_two(const char *line, word *images, word *outputs)
{
    word last[2] = {{0, 0}, {0, 0}};
    int words = 0;
    for (size_t i = 0; line[i];) {
        if (is_separator(line[i])) {
            i++;
            continue;
        }
        word w = {i, 0};
        while (line[i] && !is_separator(line[i]))
            i++;
        w.len = i - w.at;
        last[0] = last[1];
        last[1] = w;
        words++;
    }
    *images = last[0];
    *outputs = last[1];
    return words >= 2 ? 0 : -1;
}

static void check_file_names(const uint8_t *data, size_t size)
{
    static char line[LINE_BYTES], original[LINE_BYTES];
    size_t len = size < LINE_BYTES - 1 ? size : LINE_BYTES - 1;
    memcpy(line, data, len);
    line[len] = '\0';
    memcpy(original, line, strlen(line) + 1); /* the line ends at its first NUL, as a C string */

    word want_images, want_outputs;
    int expect_ok = reference_last_two(original, &want_images, &want_outputs) == 0;
    char *images = NULL, *outputs = NULL;
    int ok = batch_file_names(line, &images, &outputs) == 0;
    if (ok != expect_ok)
        abort();
    if (!ok)
        return;
    /* the names are the last two words, NUL-terminated in place inside the line */
    if (images != line + want_images.at || outputs != line + want_outputs.at)
        abort();
    if (strlen(images) != want_images.len || strlen(outputs) != want_outputs.len)
        abort();
    if (memcmp(images, original + want_images.at, want_images.len) != 0 ||
        memcmp(outputs, original + want_outputs.at, want_outputs.len) != 0)
        abort();
}

static void check_image_count(long long bytes)
{
    uint32_t count = 0;
    int ok = batch_image_count(bytes, &count) == 0;
    int expect_ok = bytes >= 0 && bytes % TRT_IMAGE_BYTES == 0 && bytes / TRT_IMAGE_BYTES <= UINT32_MAX;
    if (ok != expect_ok || (ok && (long long)count * TRT_IMAGE_BYTES != bytes))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8)
        return 0;
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits |= (uint64_t)data[i] << (8 * i);
    long long bytes;
    memcpy(&bytes, &bits, sizeof bytes);
    check_image_count(bytes);
    check_file_names(data + 8, size - 8);
    return 0;
}
