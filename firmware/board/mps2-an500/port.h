/*
 * Port: Arm MPS2 with the AN500 FPGA image, a Cortex-M7 (DSP extension,
 * double-precision FPU). QEMU: -M mps2-an500.
 *
 * Memory (mps2-an500.ld): SSRAM1 0x00000000 (4 MiB, boot), SSRAM2/3
 * 0x20000000 (4 MiB), PSRAM 0x60000000 (16 MiB, the model slot).
 */
#ifndef TINYRPS_PORT_H
#define TINYRPS_PORT_H

#define PORT_BOARD_NAME "mps2-an500"

/* SysTick counts the processor clock: 25 MHz (QEMU's sysclk for this board). */
#define PORT_SYSTICK_HZ 25000000u

/* Interrupt lines after the 16 system exceptions (vector table size). */
#define PORT_IRQ_LINES 32

/* CMSDK APB UART0 and the NVIC line of its receive interrupt. */
#define PORT_UART_BASE 0x40004000u
#define PORT_SERIAL_RX_IRQ 0

#endif
