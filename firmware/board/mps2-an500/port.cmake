# Port mps2-an500: Arm MPS2 AN500 (Cortex-M7 with DSP and FPU), QEMU -M mps2-an500.
set(PORT_CORE cortex-m7)
set(PORT_LINKER_SCRIPT mps2-an500.ld)
set(PORT_DRIVERS cmsdk_uart.c)
