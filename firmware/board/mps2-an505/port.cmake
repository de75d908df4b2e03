# Port mps2-an505: Arm MPS2+ AN505 (Cortex-M33 with DSP), QEMU -M mps2-an505.
set(PORT_CORE cortex-m33)
set(PORT_LINKER_SCRIPT mps2-an505.ld)
set(PORT_DRIVERS cmsdk_uart.c)
