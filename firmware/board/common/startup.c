/*
 * Cortex-M startup, the same on every port: the vector table (placed by the
 * port's linker script at the core's boot address) and the reset handler that
 * prepares C: the clock started (the boot is counted from here), FPU (and MVE)
 * on, .data copied, .bss zeroed, static constructors run, then main(). The
 * port's port.h gives the number of interrupt lines and the serial port's
 * receive interrupt.
 */
#include <stdint.h>
#include <string.h>

#include "board.h"
#include "cortex_m.h"
#include "port.h"

extern uint32_t __data_start[], __data_end[], __data_load[];
extern uint32_t __bss_start[], __bss_end[];
extern uint32_t __stack_limit[], __stack_top[];

extern int main(void);
extern void __libc_init_array(void);

void reset_handler(void);
void hard_fault_handler(void);
void systick_handler(void);

/* newlib's __libc_init_array calls these; there is no crti/crtn here. */
void _init(void) {}
void _fini(void) {}

static void default_handler(void)
{
    board_fault("unexpected interrupt");
}

#define VECTOR_COUNT (16 + PORT_IRQ_LINES)

typedef void (*vector)(void);

/* Every exception the firmware does not expect lands in default_handler,
 * which reports it instead of hanging. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
__attribute__((section(".vectors"), used)) static const vector vector_table[VECTOR_COUNT] = {
    [2 ... VECTOR_COUNT - 1] = default_handler,
    [0] = (vector)(uintptr_t)__stack_top,
    [1] = reset_handler,
    [3] = hard_fault_handler, /* HardFault */
    [4] = hard_fault_handler, /* MemManage */
    [5] = hard_fault_handler, /* BusFault */
    [6] = hard_fault_handler, /* UsageFault (also stack overflow via MSPLIM) */
    [7] = hard_fault_handler, /* SecureFault */
    [15] = systick_handler,
    [16 + PORT_SERIAL_RX_IRQ] = board_serial_rx_handler,
};
#pragma GCC diagnostic pop

static void enable_fpu_and_mve(void)
{
#if !CORTEX_M_BASELINE
    /* CP10 and CP11 full access: scalar FP and, on Armv8.1-M, the M-profile vector
     * extension. Harmless on a core without them (the bits read as zero). */
    SCB_CPACR |= 0xFu << 20;
    __asm volatile("dsb\n isb" ::: "memory");
#endif
}

static void prepare_c_memory(void)
{
    size_t data_bytes = (size_t)((uintptr_t)__data_end - (uintptr_t)__data_start);
    size_t bss_bytes = (size_t)((uintptr_t)__bss_end - (uintptr_t)__bss_start);
    memcpy(__data_start, __data_load, data_bytes);
    memset(__bss_start, 0, bss_bytes);
}

__attribute__((noreturn)) void reset_handler(void)
{
    /* First, so that the boot's instruction count (reset to ready) includes all of startup. */
    board_clock_start();
#if defined(__ARM_ARCH_8M_MAIN__) || defined(__ARM_ARCH_8_1M_MAIN__)
    /* Armv8-M: a stack overflow becomes a UsageFault instead of silent corruption. */
    __asm volatile("msr msplim, %0" ::"r"(__stack_limit));
#endif
    enable_fpu_and_mve();
#if !CORTEX_M_BASELINE
    SCB_SHCSR |= SHCSR_FAULTS_ENABLE;
#endif
    prepare_c_memory();
    __libc_init_array();
    main();
    board_reset();
}
