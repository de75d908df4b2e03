/* The semihosting batch transport (docs/firmware.md, "Batch transport"). */
#ifndef TINYRPS_BATCH_H
#define TINYRPS_BATCH_H

#include "firmware.h"

__attribute__((noreturn)) void run_batch(firmware_state *fw);
/* A CPU fault, as a line on the semihosting console and exit status 3. */
__attribute__((noreturn)) void batch_report_fault(const char *what);

#endif
