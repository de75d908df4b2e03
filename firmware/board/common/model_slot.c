#include "model_slot.h"

#include <string.h>

#include "link_protocol.h"

extern const uint8_t __model_base[];
extern const uint8_t __model_max_size[]; /* linker symbol: its address is the size */

__attribute__((section(".boot_args"), used)) volatile boot_descriptor boot_args;

/* Extended header of a .pte: "eh00" at byte 8, then u32 header length, u64
 * program size, u64 segment base offset, u64 segment data size. */
#define PTE_EXTENDED_MAGIC "eh00"
#define PTE_EXTENDED_MIN_BYTES 32u

static size_t model_max_size(void) { return (size_t)(uintptr_t)__model_max_size; }

static uint64_t read_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t read_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int descriptor_is_valid(const boot_descriptor *d)
{
    return d->magic == BOOT_DESCRIPTOR_MAGIC && d->check == (d->magic ^ d->model_length ^ d->mode ^ 0xFFFFFFFFu) &&
           d->model_length <= model_max_size() && d->mode <= BOOT_MODE_BATCH;
}

/* Program length from its extended header, or 0 if it has none. */
static size_t length_from_header(const uint8_t *pte)
{
    if (memcmp(pte + 8, PTE_EXTENDED_MAGIC, 4) != 0)
        return 0;
    uint32_t header_len = read_le32(pte + 12);
    if (header_len < PTE_EXTENDED_MIN_BYTES)
        return 0;
    uint64_t program_size = read_le64(pte + 16);
    uint64_t segment_base = read_le64(pte + 24);
    uint64_t segment_size = read_le64(pte + 32);
    uint64_t end = segment_size ? segment_base + segment_size : program_size;
    if (end < program_size)
        end = program_size;
    return end <= model_max_size() ? (size_t)end : 0;
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
