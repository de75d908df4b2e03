/*
 * Arm CMSDK APB UART: the serial port of the MPS2 and MPS3 FPGA images (and of
 * QEMU's models of them). A port that uses it names the base address and the
 * receive interrupt in its port.h (PORT_UART_BASE, PORT_SERIAL_RX_IRQ) and lists
 * cmsdk_uart.c among its sources.
 */
#ifndef TINYRPS_CMSDK_UART_H
#define TINYRPS_CMSDK_UART_H

#include "cortex_m.h"

#define UART_DATA(b) REG32((b) + 0x00)
#define UART_STATE(b) REG32((b) + 0x04)
#define UART_CTRL(b) REG32((b) + 0x08)
#define UART_INTSTATUS(b) REG32((b) + 0x0C) /* read: pending, write 1: clear */
#define UART_BAUDDIV(b) REG32((b) + 0x10)
#define UART_STATE_TX_FULL (1u << 0)
#define UART_STATE_RX_FULL (1u << 1)
#define UART_CTRL_TX_EN (1u << 0)
#define UART_CTRL_RX_EN (1u << 1)
#define UART_CTRL_RX_IRQ_EN (1u << 3)
#define UART_INT_RX (1u << 1)

#endif
