/*
 * Serial port on a CMSDK APB UART: interrupt-driven receive into a queue,
 * polled transmit. The port's port.h gives the UART's base address and its
 * receive interrupt line.
 */
#include "cmsdk_uart.h"

#include <stdbool.h>

#include "board.h"
#include "port.h"

/* Large enough for a whole request frame (an image is 784 bytes) plus the
 * start of the next one; a power of two for cheap wrap-around. */
#define RX_QUEUE_BYTES 2048u

/* The divider only matters on hardware; QEMU's model accepts anything >= 16. */
#define UART_BAUD_DIVIDER 16u

static volatile uint8_t rx_queue[RX_QUEUE_BYTES];
static volatile uint32_t rx_head; /* written by the interrupt */
static volatile uint32_t rx_tail; /* written by the reader */
static volatile uint32_t rx_overruns;

void board_serial_rx_handler(void)
{
    UART_INTSTATUS(PORT_UART_BASE) = UART_INT_RX;
    while (UART_STATE(PORT_UART_BASE) & UART_STATE_RX_FULL) {
        uint8_t byte = (uint8_t)UART_DATA(PORT_UART_BASE);
        uint32_t head = rx_head;
        if (head - rx_tail >= RX_QUEUE_BYTES) {
            rx_overruns++;
            continue;
        }
        rx_queue[head % RX_QUEUE_BYTES] = byte;
        rx_head = head + 1;
    }
}

void board_serial_init(void)
{
    UART_BAUDDIV(PORT_UART_BASE) = UART_BAUD_DIVIDER;
    UART_CTRL(PORT_UART_BASE) = UART_CTRL_TX_EN | UART_CTRL_RX_EN | UART_CTRL_RX_IRQ_EN;
    nvic_enable(PORT_SERIAL_RX_IRQ);
}

void board_serial_write(const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        while (UART_STATE(PORT_UART_BASE) & UART_STATE_TX_FULL) {
        }
        UART_DATA(PORT_UART_BASE) = data[i];
    }
}

static bool rx_empty(void) { return rx_head == rx_tail; }

int board_serial_read(uint32_t timeout_ms)
{
    uint64_t deadline = board_ticks() + (uint64_t)timeout_ms * board_ticks_per_ms();
    for (;;) {
        /* Sleep until an interrupt (a byte or a SysTick wrap); masking first
         * so a byte arriving between the check and the WFI still wakes it. */
        irq_disable();
        if (rx_empty())
            wait_for_interrupt();
        irq_enable();
        if (!rx_empty()) {
            uint32_t tail = rx_tail;
            uint8_t byte = rx_queue[tail % RX_QUEUE_BYTES];
            rx_tail = tail + 1;
            return byte;
        }
        if (board_ticks() >= deadline)
            return -1;
    }
}

uint32_t board_serial_overruns(void) { return rx_overruns; }
