/*
 * platform.h on a PC: stdio files, and a clock that counts its own calls (the profile's sums are
 * what the host run checks, not times).
 */
#include <stdio.h>

#include "platform.h"

#define MAX_FILES 4

static FILE *files[MAX_FILES];
static int saved_argc;
static char **saved_argv;
static uint64_t calls;

int platform_args(int *argc, char ***argv) {
    *argc = saved_argc;
    *argv = saved_argv;
    return 0;
}

int platform_open(const char *path, int for_writing) {
    for (int i = 0; i < MAX_FILES; i++)
        if (!files[i]) {
            files[i] = fopen(path, for_writing ? "wb" : "rb");
            return files[i] ? i : -1;
        }
    return -1;
}

int platform_read(int file, void *data, size_t len) { return fread(data, 1, len, files[file]) == len ? 0 : -1; }

int platform_write(int file, const void *data, size_t len) {
    return fwrite(data, 1, len, files[file]) == len ? 0 : -1;
}

void platform_close(int file) {
    fclose(files[file]);
    files[file] = NULL;
}

void platform_clock_restart(void) { calls = 0; }
uint64_t platform_clock_ticks(void) { return ++calls; }
int platform_clock_wrapped(void) { return 0; }

void platform_print(const char *line) { puts(line); }

int app_main(void);

int main(int argc, char **argv) {
    saved_argc = argc;
    saved_argv = argv;
    return app_main();
}
