/*
 * What the firmware needs from a board: a serial port, a clock that also
 * counts instructions, a reset, and a way to report a fault. The application
 * (main.c, firmware.c, link_loop.c, batch.c) only uses this interface.
 *
 * board_cortex_m.c implements the clock, stack, reset and fault parts for any
 * Cortex-M from the constants of the port's port.h; the serial part comes from
 * the port's UART driver (cmsdk_uart.c on the MPS2/MPS3 boards).
 */
#ifndef TINYRPS_BOARD_H
#define TINYRPS_BOARD_H

#include <stddef.h>
#include <stdint.h>

/* SysTick on, counting from now: the reset handler's first call, so that board_ticks() and
 * board_instructions_since_reset() count from reset (the boot's measured span). */
void board_clock_start(void);
/* Stack paint, serial port, interrupts on (the clock already runs). */
void board_init(void);

/* ---- serial port (the port's UART driver) ---- */

void board_serial_init(void);
/* Its receive interrupt handler: startup.c puts it on the line PORT_SERIAL_RX_IRQ. */
void board_serial_rx_handler(void);
/* Received bytes are queued by the receive interrupt, so a burst is not lost
 * while an inference runs. */
void board_serial_write(const uint8_t *data, size_t len);
/* Next received byte (0..255), or -1 if none arrives within timeout_ms. */
int board_serial_read(uint32_t timeout_ms);
/* Bytes dropped because the receive queue was full (host ignored flow). */
uint32_t board_serial_overruns(void);

/* ---- clock and instruction counter ---- */

/* Monotonic time in SysTick ticks (PORT_SYSTICK_HZ per second). */
uint64_t board_ticks(void);
uint32_t board_ticks_per_ms(void);

/* Instruction counter for one measured region. On QEMU run with
 * -icount shift=0 every instruction takes exactly 1 ns of virtual time, so the
 * SysTick time between start and stop is the instruction count (to within one
 * tick: 1e9 / PORT_SYSTICK_HZ instructions). Restarting the SysTick phase at
 * start makes the count identical from run to run. On a real board the same
 * value is cycles at 1 GHz-equivalent; see docs/firmware.md. */
void board_counter_start(void);
uint64_t board_counter_instructions(void);
/* A span of board_ticks() in instructions (nanoseconds of -icount time), rounded. */
uint64_t board_ticks_to_instructions(uint64_t ticks);
/* Instructions since reset (board_clock_start): the boot's figure, read when the firmware is
 * ready, before any board_counter_start (each restart of the SysTick phase drops the part of a
 * tick that had passed). */
uint64_t board_instructions_since_reset(void);

/* ---- stack ---- */

/* Bytes of stack used so far (high-water mark of the painted stack). */
size_t board_stack_used(void);
size_t board_stack_size(void);

/* ---- reset and faults ---- */

/* Ends the run: under QEMU with -no-reboot this exits QEMU with code 0. */
__attribute__((noreturn)) void board_reset(void);
/* Who says what went wrong, on the channel the host listens on (set by the application). */
typedef void (*board_fault_reporter)(const char *what);
void board_set_fault_reporter(board_fault_reporter report);
/* Reports an unrecoverable fault through the reporter, then resets. */
__attribute__((noreturn)) void board_fault(const char *what);

#endif
