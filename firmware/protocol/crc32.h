/* CRC-32 (IEEE 802.3: reflected, polynomial 0x04C11DB7, init and final XOR
 * 0xFFFFFFFF), the same value as Python's zlib.crc32. */
#ifndef TINYRPS_CRC32_H
#define TINYRPS_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: start with crc = 0, feed chunks in order. */
uint32_t crc32_update(uint32_t crc, const uint8_t *data, size_t len);

#endif
