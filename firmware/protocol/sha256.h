/* SHA-256 (FIPS 180-4), streaming. The firmware hashes the program it runs so
 * the host can check it is the exact file it exported. */
#ifndef TINYRPS_SHA256_H
#define TINYRPS_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_BYTES 32

typedef struct {
    uint32_t state[8];
    uint64_t total_bytes;
    uint8_t block[64];
    size_t block_used;
} sha256_ctx;

void sha256_init(sha256_ctx *ctx);
void sha256_update(sha256_ctx *ctx, const uint8_t *data, size_t len);
void sha256_final(sha256_ctx *ctx, uint8_t digest[SHA256_DIGEST_BYTES]);
void sha256(const uint8_t *data, size_t len, uint8_t digest[SHA256_DIGEST_BYTES]);

#endif
