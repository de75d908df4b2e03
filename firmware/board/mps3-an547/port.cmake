# Port mps3-an547: Arm MPS3 AN547 (SSE-300, Cortex-M55 with MVE), QEMU -M mps3-an547.
set(PORT_CORE cortex-m55)
set(PORT_LINKER_SCRIPT mps3-an547.ld)
set(PORT_DRIVERS cmsdk_uart.c)
