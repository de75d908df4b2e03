/*
 * Arm semihosting calls (a BKPT 0xAB trap serviced by the debugger, here by
 * QEMU with -semihosting-config enable=on,target=native). Only used by the
 * batch mode: a board without a debugger attached must never execute them.
 */
#ifndef TINYRPS_SEMIHOST_H
#define TINYRPS_SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

#define SEMIHOST_OPEN_READ 1  /* fopen mode "rb" */
#define SEMIHOST_OPEN_WRITE 5 /* fopen mode "wb" */

/* Returns a handle >= 0, or -1. */
int semihost_open(const char *path, int mode);
int semihost_close(int handle);
/* Return 0 when every byte was transferred. */
int semihost_read_all(int handle, void *buffer, size_t len);
int semihost_write_all(int handle, const void *data, size_t len);
/* File length in bytes, or -1. */
long semihost_file_length(int handle);
/* The command line given with -semihosting-config arg=...; 0 on success. */
int semihost_command_line(char *buffer, size_t len);
void semihost_print(const char *text);
__attribute__((noreturn)) void semihost_exit(int code);

#endif
