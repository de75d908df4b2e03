#ifndef TINYRPS_PTE_DUMP_H
#define TINYRPS_PTE_DUMP_H

#include <stddef.h>
#include <stdint.h>

/* Print the parsed program as JSON on stdout; 0 on success, 3 if it does not parse. */
int dump_program(const uint8_t *data, size_t len);

#endif
