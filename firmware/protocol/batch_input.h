/*
 * The inputs of the firmware's semihosting batch (board batch.c): the command
 * line naming the host files, and the size of the images file. Portable C with
 * no board calls, so the same parsing is linked into the firmware and into the
 * host's fuzz target (firmware/fuzz/).
 */
#ifndef TINYRPS_BATCH_INPUT_H
#define TINYRPS_BATCH_INPUT_H

#include <stdint.h>

/* The last two words of a semihosting command line "<name> ... <images file> <outputs
 * file>" (words are separated by spaces or tabs). Splits `line` in place: the words
 * become NUL-terminated strings inside it. Returns 0, or -1 when there are fewer than
 * two words. */
int batch_file_names(char *line, char **images, char **outputs);

/* How many images an images file of `bytes` bytes holds. Returns 0, or -1 when it is
 * not a whole number of images or holds more than a uint32_t counts. */
int batch_image_count(long long bytes, uint32_t *count);

#endif
