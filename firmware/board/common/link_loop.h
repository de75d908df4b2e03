/* Serving the device link on the board's serial port (docs/firmware.md, "The device link"). */
#ifndef TINYRPS_LINK_LOOP_H
#define TINYRPS_LINK_LOOP_H

#include "firmware.h"

__attribute__((noreturn)) void link_loop_forever(firmware_state *fw);
/* A CPU fault, as an unsolicited error frame (called from the fault handler). */
void link_report_fault(const char *what);

#endif
