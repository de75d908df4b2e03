/*
 * Registers of the Cortex-M architecture itself (system control block, SysTick,
 * NVIC): at the same addresses on every Armv7-M and Armv8-M core, so every port
 * shares them. What differs between boards is in the port's port.h.
 */
#ifndef TINYRPS_CORTEX_M_H
#define TINYRPS_CORTEX_M_H

#include <stdint.h>

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))

/* Armv6-M and Armv8-M Baseline (Cortex-M0, M0+, M23): Thumb-1 and a few 32-bit instructions,
 * no configurable faults (HardFault only, so no SHCSR enables, CFSR, HFSR or BFAR) and no CPACR. */
#if defined(__ARM_ARCH_ISA_THUMB) && __ARM_ARCH_ISA_THUMB == 1
#define CORTEX_M_BASELINE 1
#else
#define CORTEX_M_BASELINE 0
#endif

/* System control space. */
#define SCB_ICSR REG32(0xE000ED04u)
#define SCB_VTOR REG32(0xE000ED08u)
#define SCB_AIRCR REG32(0xE000ED0Cu)
#define SCB_SHCSR REG32(0xE000ED24u)
#define SCB_CFSR REG32(0xE000ED28u)
#define SCB_HFSR REG32(0xE000ED2Cu)
#define SCB_MMFAR REG32(0xE000ED34u)
#define SCB_BFAR REG32(0xE000ED38u)
#define SCB_CPACR REG32(0xE000ED88u)
#define ICSR_PENDSTSET (1u << 26)
#define ICSR_PENDSTCLR (1u << 25)
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

static inline void irq_disable(void) { __asm volatile("cpsid i" ::: "memory"); }
static inline void irq_enable(void) { __asm volatile("cpsie i" ::: "memory"); }
static inline void wait_for_interrupt(void) { __asm volatile("dsb\n wfi" ::: "memory"); }

static inline void nvic_enable(unsigned irq)
{
    NVIC_ICPR(irq / 32u) = 1u << (irq % 32u);
    NVIC_ISER(irq / 32u) = 1u << (irq % 32u);
}

#endif
