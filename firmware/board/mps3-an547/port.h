/*
 * Port: Arm MPS3 with the AN547 FPGA image, an SSE-300 subsystem with a
 * Cortex-M55 (Helium/MVE, FPU). QEMU: -M mps3-an547. The core boots Secure with
 * the SAU off, so the plain (non-secure-alias) addresses work.
 *
 * Memory (mps3-an547.ld): ITCM 0x00000000 (512 KiB, boot), DTCM 0x20000000
 * (512 KiB), DDR 0x60000000 (the model slot).
 */
#ifndef TINYRPS_PORT_H
#define TINYRPS_PORT_H

#define PORT_BOARD_NAME "mps3-an547"

/* SysTick counts the processor clock: 32 MHz (QEMU's sysclk for this board). */
#define PORT_SYSTICK_HZ 32000000u

/* Interrupt lines after the 16 system exceptions (vector table size). */
#define PORT_IRQ_LINES 96

/* CMSDK APB UART0 and the NVIC line of its receive interrupt. */
#define PORT_UART_BASE 0x49303000u
#define PORT_SERIAL_RX_IRQ 33

#endif
