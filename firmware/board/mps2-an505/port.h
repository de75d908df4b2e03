/*
 * Port: Arm MPS2+ with the AN505 FPGA image, an IoT Kit (SSE-200 style)
 * subsystem with a Cortex-M33 (DSP extension, FPU, TrustZone). QEMU: -M
 * mps2-an505.
 *
 * The core boots Secure with its vector table at 0x10000000, the Secure alias
 * of the first SSRAM. The SSRAMs sit behind memory protection controllers
 * whose blocks start out Secure, so code runs from the Secure alias 0x10000000
 * and data lives in the Secure alias 0x38000000; the UART is used through its
 * Secure alias too. The PSRAM at 0x80000000 holds the program.
 */
#ifndef TINYRPS_PORT_H
#define TINYRPS_PORT_H

#define PORT_BOARD_NAME "mps2-an505"

/* SysTick counts the processor clock: 20 MHz (QEMU's sysclk for this board). */
#define PORT_SYSTICK_HZ 20000000u

/* Interrupt lines after the 16 system exceptions (vector table size). */
#define PORT_IRQ_LINES 96

/* CMSDK APB UART0 (Secure alias of 0x40200000) and its receive interrupt line. */
#define PORT_UART_BASE 0x50200000u
#define PORT_SERIAL_RX_IRQ 32

#endif
