/* Serving the device link on the board's serial port (docs/firmware.md, "The device link"). */
#ifndef TINYRPS_SERVE_H
#define TINYRPS_SERVE_H

#include "firmware.h"

__attribute__((noreturn)) void serve_forever(firmware_state *fw);
/* A CPU fault, as an unsolicited error frame (called from the fault handler). */
void serve_report_fault(const char *what);

#endif
