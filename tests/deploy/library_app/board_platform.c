/*
 * platform.h on the emulated Cortex-M boards: files over semihosting (QEMU -semihosting-config
 * enable=on,target=native), SysTick as the clock, and the startup code: a vector table, the reset
 * handler that prepares C (FPU and MVE on, .data copied, .bss zeroed) and the end of the run.
 */
#include <stdint.h>
#include <string.h>

#include "platform.h"

int app_main(void);

/* ---- semihosting: "bkpt 0xAB", the operation in r0 and its argument block in r1 ---- */

static uintptr_t semihosting(uintptr_t operation, const void *block) {
    register uintptr_t r0 __asm("r0") = operation;
    register uintptr_t r1 __asm("r1") = (uintptr_t)block;
    __asm volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

#define SH_OPEN 0x01u
#define SH_CLOSE 0x02u
#define SH_WRITE0 0x04u
#define SH_WRITE 0x05u
#define SH_READ 0x06u
#define SH_CMDLINE 0x15u
#define SH_EXIT 0x18u
#define SH_APPLICATION_EXIT 0x20026u   /* QEMU exits 0 with this reason, 1 with any other */
#define SH_RUNTIME_ERROR 0x20023u

static void finish(int ok) {
    semihosting(SH_EXIT, (const void *)(uintptr_t)(ok ? SH_APPLICATION_EXIT : SH_RUNTIME_ERROR));
    for (;;) {
    }
}

int platform_open(const char *path, int for_writing) {
    uintptr_t block[3] = {(uintptr_t)path, for_writing ? 5u : 1u, strlen(path)};   /* "wb" or "rb" */
    return (int)(intptr_t)semihosting(SH_OPEN, block);
}

int platform_read(int file, void *data, size_t len) {
    uintptr_t block[3] = {(uintptr_t)file, (uintptr_t)data, len};
    return semihosting(SH_READ, block) == 0 ? 0 : -1;       /* the bytes left unread */
}

int platform_write(int file, const void *data, size_t len) {
    uintptr_t block[3] = {(uintptr_t)file, (uintptr_t)data, len};
    return semihosting(SH_WRITE, block) == 0 ? 0 : -1;      /* the bytes left unwritten */
}

void platform_close(int file) {
    uintptr_t block[1] = {(uintptr_t)file};
    semihosting(SH_CLOSE, block);
}

void platform_print(const char *line) {
    semihosting(SH_WRITE0, line);
    semihosting(SH_WRITE0, "\n");
}

int platform_args(int *argc, char ***argv) {
    static char line[256];
    static char *words[8];
    uintptr_t block[2] = {(uintptr_t)line, sizeof line - 1};
    if (semihosting(SH_CMDLINE, block) != 0) return -1;
    int n = 0;
    for (char *p = line; *p && n < 8;) {
        while (*p == ' ') *p++ = '\0';
        if (!*p) break;
        words[n++] = p;
        while (*p && *p != ' ') p++;
    }
    *argc = n;
    *argv = words;
    return 0;
}

/* ---- SysTick at the core clock, counting down from 2^24 - 1, no interrupt ---- */

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
#define SYST_ENABLE_CORE_CLOCK 0x5u
#define SYST_COUNTFLAG (1u << 16)
#define SYST_TOP 0x00FFFFFFu

static int wrapped;

void platform_clock_restart(void) {
    wrapped = 0;
    SYST_CVR = 0;   /* any write: the count restarts from SYST_RVR at the next tick (COUNTFLAG cleared) */
}

uint64_t platform_clock_ticks(void) {
    uint32_t value = SYST_CVR;
    if (SYST_CSR & SYST_COUNTFLAG) wrapped = 1;
    return value == 0 ? 0 : SYST_TOP - value;
}

int platform_clock_wrapped(void) {
    (void)platform_clock_ticks();
    return wrapped;
}

/* ---- startup ---- */

extern uint32_t __data_start[], __data_end[], __data_load[], __bss_start[], __bss_end[], __stack_top[];

#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

void reset_handler(void) {
    SCB_CPACR |= 0xFu << 20;   /* CP10 and CP11: the FPU, and Helium on the Cortex-M55 */
    __asm volatile("dsb\n isb" ::: "memory");
    memcpy(__data_start, __data_load, (size_t)((uintptr_t)__data_end - (uintptr_t)__data_start));
    memset(__bss_start, 0, (size_t)((uintptr_t)__bss_end - (uintptr_t)__bss_start));
    SYST_RVR = SYST_TOP;
    SYST_CVR = 0;
    SYST_CSR = SYST_ENABLE_CORE_CLOCK;
    finish(app_main() == 0);
}

static void fault_handler(void) {
    semihosting(SH_WRITE0, "test application: CPU fault\n");
    finish(0);
}

typedef void (*vector)(void);

__attribute__((section(".vectors"), used)) static const vector vectors[16] = {
    (vector)(uintptr_t)__stack_top, reset_handler, fault_handler, fault_handler, fault_handler,
    fault_handler, fault_handler, fault_handler, fault_handler, fault_handler, fault_handler,
    fault_handler, fault_handler, fault_handler, fault_handler, fault_handler,
};
