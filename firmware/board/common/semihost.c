#include "semihost.h"

#include <string.h>

enum {
    SYS_OPEN = 0x01,
    SYS_CLOSE = 0x02,
    SYS_WRITE0 = 0x04,
    SYS_WRITE = 0x05,
    SYS_READ = 0x06,
    SYS_FLEN = 0x0C,
    SYS_GET_CMDLINE = 0x15,
    SYS_EXIT = 0x18,
    SYS_EXIT_EXTENDED = 0x20,
};

#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

static uintptr_t semihost_call(uint32_t operation, const void *argument)
{
    register uintptr_t r0 __asm("r0") = operation;
    register uintptr_t r1 __asm("r1") = (uintptr_t)argument;
    __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

int semihost_open(const char *path, int mode)
{
    uintptr_t args[3] = {(uintptr_t)path, (uintptr_t)mode, strlen(path)};
    return (int)semihost_call(SYS_OPEN, args);
}

int semihost_close(int handle)
{
    uintptr_t args[1] = {(uintptr_t)handle};
    return (int)semihost_call(SYS_CLOSE, args);
}

/* SYS_READ and SYS_WRITE return the bytes NOT transferred. On a pipe (the NPU link) a call may move
 * fewer bytes than asked, as read(2) does: a big region takes several calls. A call that moves none is
 * the end of the file, or an error. */
static int move_all(uintptr_t operation, int handle, uintptr_t at, size_t len)
{
    while (len > 0) {
        uintptr_t args[3] = {(uintptr_t)handle, at, len};
        uintptr_t left = semihost_call(operation, args);
        if (left >= len)
            return -1;
        at += len - left;
        len = left;
    }
    return 0;
}

int semihost_read_all(int handle, void *buffer, size_t len)
{
    return move_all(SYS_READ, handle, (uintptr_t)buffer, len);
}

int semihost_write_all(int handle, const void *data, size_t len)
{
    return move_all(SYS_WRITE, handle, (uintptr_t)data, len);
}

long semihost_file_length(int handle)
{
    uintptr_t args[1] = {(uintptr_t)handle};
    return (long)(intptr_t)semihost_call(SYS_FLEN, args);
}

int semihost_command_line(char *buffer, size_t len)
{
    uintptr_t args[2] = {(uintptr_t)buffer, len};
    return (int)semihost_call(SYS_GET_CMDLINE, args);
}

void semihost_print(const char *text) { semihost_call(SYS_WRITE0, text); }

void semihost_exit(int code)
{
    uintptr_t args[2] = {ADP_STOPPED_APPLICATION_EXIT, (uintptr_t)code};
    semihost_call(SYS_EXIT_EXTENDED, args);
    /* Debuggers without the extended call: plain exit (status 0 or 1). */
    semihost_call(SYS_EXIT, (const void *)(uintptr_t)(code == 0 ? ADP_STOPPED_APPLICATION_EXIT : 0x20023u));
    for (;;) {
    }
}
