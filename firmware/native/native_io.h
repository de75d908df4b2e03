/* File helpers shared by the host tools (native build only). */
#ifndef TINYRPS_NATIVE_IO_H
#define TINYRPS_NATIVE_IO_H

#include <stddef.h>
#include <stdint.h>

/* Read a whole file into a 16-byte aligned buffer (free with free()); NULL on failure. */
uint8_t *read_file_aligned(const char *path, size_t *len);

#endif
