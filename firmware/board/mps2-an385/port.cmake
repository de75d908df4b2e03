# Port mps2-an385: Arm MPS2 AN385 (Cortex-M3, no DSP, no FPU), QEMU -M mps2-an385.
set(PORT_CORE cortex-m3)
set(PORT_LINKER_SCRIPT mps2-an385.ld)
set(PORT_DRIVERS cmsdk_uart.c)
