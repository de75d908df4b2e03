#include "model_slot.h"

#include "link_protocol.h"
#include "tinyrps_runtime.h"

extern const uint8_t __model_base[];
extern const uint8_t __model_max_size[]; /* linker symbol: its address is the size */

/* Read by the offsets of BOOT_DESCRIPTOR_FIELDS, the layout the host writes. */
__attribute__((section(".boot_args"), used)) volatile uint32_t boot_args[BOOT_DESCRIPTOR_BYTES / 4];

static uint32_t field(const uint32_t *words, int offset) { return words[offset / 4]; }

static size_t model_max_size(void) { return (size_t)(uintptr_t)__model_max_size; }

static int descriptor_is_valid(const uint32_t *d)
{
    uint32_t check = 0xFFFFFFFFu;
    for (int at = 0; at < BOOT_DESCRIPTOR_AT_CHECK; at += 4)
        check ^= field(d, at);
    return field(d, BOOT_DESCRIPTOR_AT_MAGIC) == BOOT_DESCRIPTOR_MAGIC &&
           field(d, BOOT_DESCRIPTOR_AT_VERSION) == BOOT_DESCRIPTOR_VERSION &&
           field(d, BOOT_DESCRIPTOR_AT_CHECK) == check && field(d, BOOT_DESCRIPTOR_AT_MODEL_LENGTH) <= model_max_size() &&
           field(d, BOOT_DESCRIPTOR_AT_MODE) <= BOOT_MODE_BATCH &&
           (field(d, BOOT_DESCRIPTOR_AT_FLAGS) & ~BOOT_FLAGS_KNOWN) == 0;
}

/* Program length from its extended header (the runtime's parser), or 0 if it gives none. */
static size_t length_from_header(const uint8_t *pte)
{
    size_t length = 0;
    return trt_program_extent(pte, model_max_size(), &length) == TRT_OK ? length : 0;
}

model_slot model_slot_locate(void)
{
    model_slot slot = {.bytes = __model_base, .mode = BOOT_MODE_LINK};
    uint32_t d[BOOT_DESCRIPTOR_BYTES / 4];
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++)
        d[i] = boot_args[i];
    boot_args[BOOT_DESCRIPTOR_AT_MAGIC / 4] = 0; /* consumed: a warm reset must not trust stale memory */
    if (descriptor_is_valid(d)) {
        slot.length = field(d, BOOT_DESCRIPTOR_AT_MODEL_LENGTH);
        slot.source = LINK_MODEL_SOURCE_DESCRIPTOR;
        slot.mode = field(d, BOOT_DESCRIPTOR_AT_MODE);
        slot.flags = field(d, BOOT_DESCRIPTOR_AT_FLAGS);
    } else {
        slot.length = length_from_header(slot.bytes);
        slot.source = LINK_MODEL_SOURCE_HEADER;
    }
    return slot;
}
