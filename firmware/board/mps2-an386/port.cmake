# Port mps2-an386: Arm MPS2+ AN386 (Cortex-M4 with DSP and FPU), QEMU -M mps2-an386.
set(PORT_CORE cortex-m4)
set(PORT_LINKER_SCRIPT mps2-an386.ld)
set(PORT_DRIVERS cmsdk_uart.c)
