/*
 * AN547 board support: CMSDK UART0 (interrupt-driven receive queue, polled
 * transmit), SysTick as clock and instruction counter, fault reporting, reset.
 */
#include "board.h"

#include <stdbool.h>

#include "an547.h"

#define SCB_ICSR REG32(0xE000ED04u)
#define ICSR_PENDSTSET (1u << 26)
#define ICSR_PENDSTCLR (1u << 25)

#define SYSTICK_RELOAD 0x00FFFFFFu
#define SYSTICK_PERIOD (SYSTICK_RELOAD + 1u)
#define TICKS_PER_MS (AN547_SYSCLK_HZ / 1000u)

/* Large enough for a whole request frame (an image is 784 bytes) plus the
 * start of the next one; a power of two for cheap wrap-around. */
#define RX_QUEUE_BYTES 2048u

#define STACK_PAINT 0xC0FFEE55u

extern uint32_t __stack_limit[], __stack_top[];

static volatile uint8_t rx_queue[RX_QUEUE_BYTES];
static volatile uint32_t rx_head; /* written by the interrupt */
static volatile uint32_t rx_tail; /* written by the reader */
static volatile uint32_t rx_overruns;

static volatile uint32_t systick_wraps; /* full SysTick periods since the last restart */
static uint64_t ticks_at_restart;       /* board_ticks() value when SysTick was restarted */
static uint64_t counter_origin;

static inline void irq_disable(void) { __asm volatile("cpsid i" ::: "memory"); }
static inline void irq_enable(void) { __asm volatile("cpsie i" ::: "memory"); }
static inline void wait_for_interrupt(void) { __asm volatile("dsb\n wfi" ::: "memory"); }

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

static void systick_init(void)
{
    SYST_RVR = SYSTICK_RELOAD;
    SYST_CVR = 0;
    SYST_CSR = SYST_CSR_CPU_CLOCK | SYST_CSR_TICKINT | SYST_CSR_ENABLE;
}

uint64_t board_ticks(void) { return ticks_at_restart + ticks_since_restart(); }

void board_counter_start(void)
{
    systick_restart();
    counter_origin = board_ticks();
}

uint64_t board_counter_instructions(void)
{
    uint64_t ticks = board_ticks() - counter_origin;
    /* 1 instruction = 1 ns under -icount shift=0; round to nearest. */
    return (ticks * 1000000000ull + AN547_SYSCLK_HZ / 2) / AN547_SYSCLK_HZ;
}

/* ---- serial ---- */

void uart0_rx_handler(void)
{
    UART_INTSTATUS(UART0_BASE) = UART_INT_RX;
    while (UART_STATE(UART0_BASE) & UART_STATE_RX_FULL) {
        uint8_t byte = (uint8_t)UART_DATA(UART0_BASE);
        uint32_t head = rx_head;
        if (head - rx_tail >= RX_QUEUE_BYTES) {
            rx_overruns++;
            continue;
        }
        rx_queue[head % RX_QUEUE_BYTES] = byte;
        rx_head = head + 1;
    }
}

static void uart_init(void)
{
    UART_BAUDDIV(UART0_BASE) = 16;
    UART_CTRL(UART0_BASE) = UART_CTRL_TX_EN | UART_CTRL_RX_EN | UART_CTRL_RX_IRQ_EN;
    NVIC_ICPR(UART0_RX_IRQn / 32) = 1u << (UART0_RX_IRQn % 32);
    NVIC_ISER(UART0_RX_IRQn / 32) = 1u << (UART0_RX_IRQn % 32);
}

void board_serial_write(const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        while (UART_STATE(UART0_BASE) & UART_STATE_TX_FULL) {
        }
        UART_DATA(UART0_BASE) = data[i];
    }
}

static bool rx_empty(void) { return rx_head == rx_tail; }

int board_serial_read(uint32_t timeout_ms)
{
    uint64_t deadline = board_ticks() + (uint64_t)timeout_ms * TICKS_PER_MS;
    for (;;) {
        /* Sleep until an interrupt (a byte or a SysTick wrap); masking first
         * so a byte arriving between the check and the WFI still wakes it. */
        irq_disable();
        if (rx_empty())
            wait_for_interrupt();
        irq_enable();
        if (!rx_empty()) {
            uint32_t tail = rx_tail;
            uint8_t byte = rx_queue[tail % RX_QUEUE_BYTES];
            rx_tail = tail + 1;
            return byte;
        }
        if (board_ticks() >= deadline)
            return -1;
    }
}

uint32_t board_serial_overruns(void) { return rx_overruns; }

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

/* Implemented by the application: say what went wrong on its channel. */
__attribute__((weak)) void app_report_fault(const char *what) { (void)what; }

void board_fault(const char *what)
{
    irq_disable();
    app_report_fault(what);
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
    out = append_text(out, end, " cfsr=0x");
    out = append_hex(out, end, SCB_CFSR);
    out = append_text(out, end, " hfsr=0x");
    out = append_hex(out, end, SCB_HFSR);
    out = append_text(out, end, " bfar=0x");
    out = append_hex(out, end, SCB_BFAR);
    *out = '\0';
    board_fault(text);
}

__attribute__((naked)) void hard_fault_handler(void)
{
    /* Pass the stacked frame of whichever stack was in use, then report from
     * a fresh stack: the fault may be a stack overflow (MSPLIM). Nothing
     * returns from here, so the old frames can be overwritten. */
    __asm volatile("tst lr, #4\n"
                   "ite eq\n"
                   "mrseq r0, msp\n"
                   "mrsne r0, psp\n"
                   "ldr r1, =__stack_top\n"
                   "mov sp, r1\n"
                   "b fault_with_frame\n");
}

void board_init(void)
{
    paint_stack();
    systick_init();
    uart_init();
    irq_enable();
}
