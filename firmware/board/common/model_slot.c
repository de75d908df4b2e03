#include "model_slot.h"

#include "link_protocol.h"
#include "tinyrps_runtime.h"

extern const uint8_t __model_base[];
extern const uint8_t __model_max_size[]; /* linker symbol: its address is the size */

__attribute__((section(".boot_args"), used)) volatile boot_descriptor boot_args;

static size_t model_max_size(void) { return (size_t)(uintptr_t)__model_max_size; }

static int descriptor_is_valid(const boot_descriptor *d)
{
    return d->magic == BOOT_DESCRIPTOR_MAGIC && d->check == (d->magic ^ d->model_length ^ d->mode ^ 0xFFFFFFFFu) &&
           d->model_length <= model_max_size() && d->mode <= BOOT_MODE_BATCH;
}

/* Program length from its extended header (the runtime's parser), or 0 if it gives none. */
static size_t length_from_header(const uint8_t *pte)
{
    size_t length = 0;
    return trt_program_extent(pte, model_max_size(), &length) == TRT_OK ? length : 0;
}

model_slot model_slot_locate(void)
{
    model_slot slot = {.bytes = __model_base, .mode = BOOT_MODE_SERVE};
    boot_descriptor d = {boot_args.magic, boot_args.model_length, boot_args.mode, boot_args.check};
    boot_args.magic = 0; /* consumed: a warm reset must not trust stale memory */
    if (descriptor_is_valid(&d)) {
        slot.length = d.model_length;
        slot.source = LINK_MODEL_SOURCE_DESCRIPTOR;
        slot.mode = d.mode;
    } else {
        slot.length = length_from_header(slot.bytes);
        slot.source = LINK_MODEL_SOURCE_HEADER;
    }
    return slot;
}
