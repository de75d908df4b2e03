/*
 * libFuzzer target: the batch transport's input parsing (firmware/protocol/batch_input.c),
 * under AddressSanitizer and UBSan, against a plain reference of what it must do.
 *
 * Input: 8 bytes, the samples file's size (little-endian, signed), then the semihosting
 * command line as the debugger hands it over (at most 511 bytes, NUL-terminated). The size
 * is checked against samples of several sizes: none, one byte, a 28x28 image, its float32
 * form, a 96x96x3 float32 input, the largest a header field holds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "batch_input.h"

#define LINE_BYTES 512 /* the firmware's command-line buffer */

static int is_separator(char c) { return c == ' ' || c == '\t'; }

typedef struct {
    size_t at, len;
} word;

/* The reference: split the whole line front to back and keep the last two words. */
static int reference_last_two(const char *line, word *samples, word *results)
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
    *samples = last[0];
    *results = last[1];
    return words >= 2 ? 0 : -1;
}

static void check_file_names(const uint8_t *data, size_t size)
{
    static char line[LINE_BYTES], original[LINE_BYTES];
    size_t len = size < LINE_BYTES - 1 ? size : LINE_BYTES - 1;
    memcpy(line, data, len);
    line[len] = '\0';
    memcpy(original, line, strlen(line) + 1); /* the line ends at its first NUL, as a C string */

    word want_samples, want_results;
    int expect_ok = reference_last_two(original, &want_samples, &want_results) == 0;
    char *samples = NULL, *results = NULL;
    int ok = batch_file_names(line, &samples, &results) == 0;
    if (ok != expect_ok)
        abort();
    if (!ok)
        return;
    /* the names are the last two words, NUL-terminated in place inside the line */
    if (samples != line + want_samples.at || results != line + want_results.at)
        abort();
    if (strlen(samples) != want_samples.len || strlen(results) != want_results.len)
        abort();
    if (memcmp(samples, original + want_samples.at, want_samples.len) != 0 ||
        memcmp(results, original + want_results.at, want_results.len) != 0)
        abort();
}

static const uint32_t SAMPLE_SIZES[] = {0, 1, 784, 3136, 110592, UINT32_MAX};

static void check_sample_count(long long bytes)
{
    for (size_t k = 0; k < sizeof SAMPLE_SIZES / sizeof SAMPLE_SIZES[0]; k++) {
        uint32_t sample = SAMPLE_SIZES[k], count = 0;
        int ok = batch_sample_count(bytes, sample, &count) == 0;
        int expect_ok = bytes >= 0 && sample > 0 && bytes % sample == 0 && bytes / sample <= UINT32_MAX;
        if (ok != expect_ok || (ok && (long long)count * sample != bytes))
            abort();
    }
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
    check_sample_count(bytes);
    check_file_names(data + 8, size - 8);
    return 0;
}
