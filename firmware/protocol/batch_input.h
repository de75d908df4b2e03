/*
 * The inputs of the firmware's semihosting batch (board batch.c): the command
 * line naming the host files, and the size of the samples file. Portable C with
 * no board calls, so the same parsing is linked into the firmware and into the
 * host's fuzz target (firmware/fuzz/).
 */
#ifndef TINYRPS_BATCH_INPUT_H
#define TINYRPS_BATCH_INPUT_H

#include <stdint.h>

/* The last two words of a semihosting command line "<name> ... <samples file> <results
 * file>" (words are separated by spaces or tabs). Splits `line` in place: the words
 * become NUL-terminated strings inside it. Returns 0, or -1 when there are fewer than
 * two words. */
int batch_file_names(char *line, char **samples, char **results);

/* How many samples of `sample_bytes` bytes a samples file of `bytes` bytes holds. Returns 0,
 * or -1 when sample_bytes is 0, or the file is not a whole number of samples, or holds more
 * than a uint32_t counts. */
int batch_sample_count(long long bytes, uint32_t sample_bytes, uint32_t *count);

#endif
