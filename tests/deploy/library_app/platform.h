/*
 * What the test applications need from where they run: files and a clock. The boards implement it
 * with semihosting and SysTick (board_platform.c), a PC with stdio (host_platform.c). None of this
 * is the library's: an application brings its own I/O and clock.
 */
#ifndef APP_PLATFORM_H
#define APP_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* The application's arguments (argv[0] is its name). */
int platform_args(int *argc, char ***argv);

/* Files: a handle >= 0, or -1. platform_read and platform_write move exactly len bytes or fail (-1). */
int platform_open(const char *path, int for_writing);
int platform_read(int file, void *data, size_t len);
int platform_write(int file, const void *data, size_t len);
void platform_close(int file);

/* The clock: restart, then ticks since the restart (on the boards: SysTick at the core clock, which
 * under QEMU -icount shift=0 counts instructions). platform_clock_wrapped: the count overflowed since
 * the restart, so the figure is wrong. */
void platform_clock_restart(void);
uint64_t platform_clock_ticks(void);
int platform_clock_wrapped(void);

/* One line for whoever runs the test. */
void platform_print(const char *line);

#endif
