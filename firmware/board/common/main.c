/*
 * tinyrps firmware: boots once, finds the program placed in memory, validates and
 * loads it, then either answers the device link on the serial port forever or runs one
 * semihosting batch (boot descriptor mode). It is ready (the boot's count ends)
 * when firmware_boot returns. The same on every board; the port supplies
 * port.h, the linker script and the drivers. See docs/firmware.md.
 */
#include "batch.h"
#include "board.h"
#include "firmware.h"
#include "link_loop.h"

static firmware_state state;

/* Where a CPU fault is reported: the channel the host is listening on. */
static void report_fault(const char *what)
{
    if (state.model.mode == BOOT_MODE_BATCH)
        batch_report_fault(what);
    else
        link_report_fault(what);
}

int main(void)
{
    board_init();
    board_set_fault_reporter(report_fault);
    firmware_boot(&state);
    npu_link_start(&state);
    if (state.model.mode == BOOT_MODE_BATCH)
        run_batch(&state);
    link_loop_forever(&state);
}
