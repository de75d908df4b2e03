/*
 * Where the program (.pte) is and how long it is. The bytes sit at a fixed
 * address, the start of the port's MODEL region (__model_base): QEMU's generic
 * loader puts them there, a flash tool does on a board. The length comes from
 * a boot descriptor the host writes at the start of the port's RAM region
 * (QEMU: three more loader items) or, when there is none, from the program's own
 * extended header.
 */
#ifndef TINYRPS_MODEL_SLOT_H
#define TINYRPS_MODEL_SLOT_H

#include <stddef.h>
#include <stdint.h>

/* Boot descriptor at the start of the port's RAM region: the fields below, little-endian words
 * (the host reads this layout from here: src/tinyrps/firmware/c_facts.py; keep the one-line forms).
 * A descriptor of another version or with a wrong check is not trusted. */
#define BOOT_DESCRIPTOR_MAGIC 0x42505254u /* "TRPB" */
#define BOOT_DESCRIPTOR_VERSION 2
#define BOOT_DESCRIPTOR_FIELDS(X)                                                                   \
    X(MAGIC, 0, u32)                                                                                \
    X(VERSION, 4, u32)            /* BOOT_DESCRIPTOR_VERSION */                                     \
    X(MODEL_LENGTH, 8, u32)       /* program bytes */                                               \
    X(MODE, 12, u32)              /* BOOT_MODE_* */                                                 \
    X(FLAGS, 16, u32)             /* BOOT_FLAG_* */                                                 \
    X(CHECK, 20, u32)             /* the five words before it XORed, then ^ 0xFFFFFFFF */
#define BOOT_DESCRIPTOR_BYTES 24

#define BOOT_MODE_LINK 0u                 /* answer the device link on the UART forever */
#define BOOT_MODE_BATCH 1u                /* run a semihosting batch, then exit */

/* Batch mode: hash the program (SHA-256) once the firmware is ready, before the batch, and put
 * the hash in the results header. Without it the batch does not hash: the hash reads every byte
 * of the program (about 47 instructions a byte), many times what the boot costs. Serve mode hashes
 * on the first `info` request instead. */
#define BOOT_FLAG_SHA256 1u
/* The host serves the NPU link (protocol/npu_link.h) over semihosting, in either mode: the
 * board's NPU driver may use it (npu_link.c). Set for programs with an Ethos-U delegate. */
#define BOOT_FLAG_NPU_LINK 2u
#define BOOT_FLAGS_KNOWN (BOOT_FLAG_SHA256 | BOOT_FLAG_NPU_LINK)

/* The fields' offsets as BOOT_DESCRIPTOR_AT_<FIELD>. */
#define BOOT_DESCRIPTOR_FIELD(f, o, t) BOOT_DESCRIPTOR_AT_##f = o,
enum { BOOT_DESCRIPTOR_FIELDS(BOOT_DESCRIPTOR_FIELD) };
#undef BOOT_DESCRIPTOR_FIELD

typedef struct {
    const uint8_t *bytes;
    size_t length;   /* 0 when no program was found */
    uint32_t source; /* LINK_MODEL_SOURCE_* */
    uint32_t mode;   /* BOOT_MODE_* */
    uint32_t flags;  /* BOOT_FLAG_* (0 without a descriptor) */
} model_slot;

/* Reads (and clears) the boot descriptor; never fails: no program gives length 0. */
model_slot model_slot_locate(void);

#endif
