/*
 * What the firmware needs from the board: a serial port, a clock that also
 * counts instructions, a reset, and a way to report a fault. main.c and the
 * link server only use this interface; porting to another Cortex-M board means
 * reimplementing board.c (and the linker script), nothing else.
 */
#ifndef TINYRPS_BOARD_H
#define TINYRPS_BOARD_H

#include <stddef.h>
#include <stdint.h>

void board_init(void);

/* Serial port. Received bytes are queued by the receive interrupt, so a burst
 * is not lost while an inference runs. */
void board_serial_write(const uint8_t *data, size_t len);
/* Next received byte (0..255), or -1 if none arrives within timeout_ms. */
int board_serial_read(uint32_t timeout_ms);
/* Bytes dropped because the receive queue was full (host ignored flow). */
uint32_t board_serial_overruns(void);

/* Monotonic time in SysTick ticks (AN547_SYSCLK_HZ per second). */
uint64_t board_ticks(void);

/* Instruction counter for one measured region. On QEMU run with
 * -icount shift=0 every instruction takes exactly 1 ns of virtual time, so the
 * SysTick time between start and stop is the instruction count (to within one
 * tick, 31.25 instructions). Restarting the SysTick phase at start makes the
 * count identical from run to run. On a real board the same value is cycles at
 * 1 GHz-equivalent; see docs/firmware.md. */
void board_counter_start(void);
uint64_t board_counter_instructions(void);

/* Bytes of stack used so far (high-water mark of the painted stack). */
size_t board_stack_used(void);
size_t board_stack_size(void);

/* Ends the run: under QEMU with -no-reboot this exits QEMU with code 0. */
__attribute__((noreturn)) void board_reset(void);
/* Reports an unrecoverable fault on the serial port, then resets. */
__attribute__((noreturn)) void board_fault(const char *what);

#endif
