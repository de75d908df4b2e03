/*
 * Registers of the MPS3 AN547 board (SSE-300 subsystem, Cortex-M55) that the
 * firmware touches. Only plain addresses: the core boots Secure with the SAU
 * off, so the Secure aliases are not needed.
 */
#ifndef TINYRPS_AN547_H
#define TINYRPS_AN547_H

#include <stdint.h>

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* Memory map (see an547.ld). */
#define AN547_ITCM_BASE 0x00000000u
#define AN547_SRAM_BASE 0x01000000u
#define AN547_DTCM_BASE 0x20000000u
#define AN547_DDR_BASE 0x60000000u

/* CMSDK APB UART0. */
#define UART0_BASE 0x49303000u
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
/* NVIC line of UART0's receive interrupt on AN547. */
#define UART0_RX_IRQn 33

/* System control space. */
#define SCB_CPACR REG32(0xE000ED88u)
#define SCB_AIRCR REG32(0xE000ED0Cu)
#define SCB_VTOR REG32(0xE000ED08u)
#define SCB_SHCSR REG32(0xE000ED24u)
#define SCB_CFSR REG32(0xE000ED28u)
#define SCB_HFSR REG32(0xE000ED2Cu)
#define SCB_MMFAR REG32(0xE000ED34u)
#define SCB_BFAR REG32(0xE000ED38u)
#define AIRCR_SYSRESETREQ (0x05FAu << 16 | 1u << 2)
#define SHCSR_FAULTS_ENABLE (1u << 16 | 1u << 17 | 1u << 18) /* MemManage, BusFault, UsageFault */

#define SYST_CSR REG32(0xE000E010u)
#define SYST_RVR REG32(0xE000E014u)
#define SYST_CVR REG32(0xE000E018u)
#define SYST_CSR_ENABLE (1u << 0)
#define SYST_CSR_TICKINT (1u << 1)
#define SYST_CSR_CPU_CLOCK (1u << 2)
#define SYST_CSR_COUNTFLAG (1u << 16)

#define NVIC_ISER(n) REG32(0xE000E100u + 4u * (n))
#define NVIC_ICER(n) REG32(0xE000E180u + 4u * (n))
#define NVIC_ISPR(n) REG32(0xE000E200u + 4u * (n))
#define NVIC_ICPR(n) REG32(0xE000E280u + 4u * (n))

/* SysTick counts the processor clock: 32 MHz on AN547 (QEMU's sysclk). */
#define AN547_SYSCLK_HZ 32000000u

#endif
