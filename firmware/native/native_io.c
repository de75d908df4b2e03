#include "native_io.h"

#include <stdio.h>
#include <stdlib.h>

uint8_t *read_file_aligned(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *data = NULL;
    long size;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        /* aligned_alloc wants a multiple of the alignment; keep one spare byte for empty files */
        size_t rounded = ((size_t)size + 16) & ~(size_t)15;
        data = aligned_alloc(16, rounded);
        if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
            free(data);
            data = NULL;
        }
        *len = (size_t)size;
    }
    fclose(f);
    return data;
}
