/*
 * Where the program (.pte) is and how long it is. The bytes sit at a fixed
 * address, the start of the port's MODEL region (__model_base): QEMU's generic
 * loader puts them there, a flash tool does on a board. The length comes from
 * a boot descriptor the host writes at the start of the port's RAM region
 * (QEMU: two more loader items) or, when there is none, from the program's own
 * extended header.
 */
#ifndef TINYRPS_MODEL_SLOT_H
#define TINYRPS_MODEL_SLOT_H

#include <stddef.h>
#include <stdint.h>

/* Boot descriptor at the start of the port's RAM region, four little-endian words. */
#define BOOT_DESCRIPTOR_MAGIC 0x42505254u /* "TRPB" */
#define BOOT_MODE_SERVE 0u                /* serve requests on the UART forever */
#define BOOT_MODE_BATCH 1u                /* run a semihosting batch, then exit */

typedef struct {
    uint32_t magic;
    uint32_t model_length;
    uint32_t mode;
    uint32_t check; /* magic ^ model_length ^ mode ^ 0xFFFFFFFF */
} boot_descriptor;

typedef struct {
    const uint8_t *bytes;
    size_t length;   /* 0 when no program was found */
    uint32_t source; /* LINK_MODEL_SOURCE_* */
    uint32_t mode;   /* BOOT_MODE_* */
} model_slot;

/* Reads (and clears) the boot descriptor; never fails: no program gives length 0. */
model_slot model_slot_locate(void);

#endif
