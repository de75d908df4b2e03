/*
 * The board layer's Cortex-M part, the same on every port: SysTick as clock and
 * instruction counter, the painted stack, faults and reset. The port's port.h
 * supplies the SysTick clock rate.
 */
#include "board.h"

#include <stdbool.h>

#include "cortex_m.h"
#include "port.h"

#define SYSTICK_RELOAD 0x00FFFFFFu
#define SYSTICK_PERIOD (SYSTICK_RELOAD + 1u)

#define STACK_PAINT 0xC0FFEE55u

extern uint32_t __stack_limit[], __stack_top[];

static volatile uint32_t systick_wraps; /* full SysTick periods since the last restart */
static uint64_t ticks_at_restart;       /* board_ticks() value when SysTick was restarted */
static uint64_t counter_origin;
static board_fault_reporter fault_reporter;

/* ---- clock ---- */

void systick_handler(void) { systick_wraps++; }

static uint64_t ticks_since_restart(void)
{
    uint32_t wraps, value;
    bool pending;
    do {
        wraps = systick_wraps;
        value = SYST_CVR;
        pending = (SCB_ICSR & ICSR_PENDSTSET) != 0;
    } while (wraps != systick_wraps);
    /* A period ended (the counter hit 0 or already reloaded) but its interrupt
     * has not run yet (interrupts masked for a moment): count it now. */
    if (pending && (value == 0 || value > SYSTICK_RELOAD / 2))
        wraps++;
    /* 0 also shows right after a restart, until the first tick reloads it. */
    uint32_t in_period = value == 0 ? 0 : SYSTICK_RELOAD - value;
    return (uint64_t)wraps * SYSTICK_PERIOD + in_period;
}

static void systick_restart(void)
{
    irq_disable();
    ticks_at_restart += ticks_since_restart();
    SYST_CVR = 0; /* any write clears the count: the period restarts now */
    SCB_ICSR = ICSR_PENDSTCLR;
    systick_wraps = 0;
    irq_enable();
}

/* The reset handler's first call, before C's memory is prepared: it touches only SysTick's
 * registers. Zeroing .bss afterwards clears systick_wraps, which is still 0 then (a period is
 * 2^24 ticks, half a second at 32 MHz, far longer than startup takes). */
void board_clock_start(void)
{
    SYST_RVR = SYSTICK_RELOAD;
    SYST_CVR = 0;
    SYST_CSR = SYST_CSR_CPU_CLOCK | SYST_CSR_TICKINT | SYST_CSR_ENABLE;
}

uint64_t board_ticks(void) { return ticks_at_restart + ticks_since_restart(); }

uint64_t board_instructions_since_reset(void) { return board_ticks_to_instructions(board_ticks()); }

void board_counter_start(void)
{
    systick_restart();
    counter_origin = board_ticks();
}

uint32_t board_ticks_per_ms(void) { return PORT_SYSTICK_HZ / 1000u; }

uint64_t board_ticks_to_instructions(uint64_t ticks)
{
    /* 1 instruction = 1 ns under -icount shift=0; round to nearest. */
    return (ticks * 1000000000ull + PORT_SYSTICK_HZ / 2) / PORT_SYSTICK_HZ;
}

uint64_t board_counter_instructions(void) { return board_ticks_to_instructions(board_ticks() - counter_origin); }

/* ---- stack ---- */

static void paint_stack(void)
{
    uint32_t *sp;
    __asm volatile("mov %0, sp" : "=r"(sp));
    /* Leave the frames in use (this one and its callers) untouched. */
    for (uint32_t *p = __stack_limit; p < sp - 16; p++)
        *p = STACK_PAINT;
}

size_t board_stack_used(void)
{
    const uint32_t *p = __stack_limit;
    while (p < __stack_top && *p == STACK_PAINT)
        p++;
    return (size_t)((uintptr_t)__stack_top - (uintptr_t)p);
}

size_t board_stack_size(void) { return (size_t)((uintptr_t)__stack_top - (uintptr_t)__stack_limit); }

/* ---- reset and faults ---- */

void board_reset(void)
{
    __asm volatile("dsb" ::: "memory");
    SCB_AIRCR = AIRCR_SYSRESETREQ;
    __asm volatile("dsb" ::: "memory");
    for (;;) {
    }
}

void board_set_fault_reporter(board_fault_reporter report) { fault_reporter = report; }

void board_fault(const char *what)
{
    irq_disable();
    if (fault_reporter)
        fault_reporter(what);
    board_reset();
}

static char *append_text(char *out, const char *end, const char *text)
{
    while (*text && out < end)
        *out++ = *text++;
    return out;
}

static char *append_hex(char *out, const char *end, uint32_t value)
{
    static const char digits[] = "0123456789abcdef";
    for (int shift = 28; shift >= 0 && out < end; shift -= 4)
        *out++ = digits[(value >> shift) & 0xFu];
    return out;
}

/* Called with the exception frame the core pushed (r0-r3, r12, lr, pc, xpsr). */
void fault_with_frame(const uint32_t *frame)
{
    char text[96];
    char *out = text, *end = text + sizeof text - 1;
    out = append_text(out, end, "cpu fault: pc=0x");
    out = append_hex(out, end, frame[6]);
#if !CORTEX_M_BASELINE
    out = append_text(out, end, " cfsr=0x");
    out = append_hex(out, end, SCB_CFSR);
    out = append_text(out, end, " hfsr=0x");
    out = append_hex(out, end, SCB_HFSR);
    out = append_text(out, end, " bfar=0x");
    out = append_hex(out, end, SCB_BFAR);
#endif
    *out = '\0';
    board_fault(text);
}

__attribute__((naked)) void hard_fault_handler(void)
{
    /* Pass the stacked frame of whichever stack was in use, then report from
     * a fresh stack: the fault may be a stack overflow (MSPLIM). Nothing
     * returns from here, so the old frames can be overwritten. */
#if CORTEX_M_BASELINE
    /* Thumb-1: no IT blocks, no TST with an immediate, and B reaches only +-2 KiB. */
    __asm volatile("movs r0, #4\n"
                   "mov r1, lr\n"
                   "tst r0, r1\n"
                   "bne 1f\n"
                   "mrs r0, msp\n"
                   "b 2f\n"
                   "1: mrs r0, psp\n"
                   "2: ldr r1, =__stack_top\n"
                   "mov sp, r1\n"
                   "ldr r1, =fault_with_frame\n"
                   "bx r1\n");
#else
    __asm volatile("tst lr, #4\n"
                   "ite eq\n"
                   "mrseq r0, msp\n"
                   "mrsne r0, psp\n"
                   "ldr r1, =__stack_top\n"
                   "mov sp, r1\n"
                   "b fault_with_frame\n");
#endif
}

void board_init(void)
{
    paint_stack();
    board_serial_init();
    irq_enable();
}
