#include "sha256.h"

#include <string.h>

/* First 32 bits of the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t round_constants[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32u - n)); }

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void compress_block(uint32_t state[8], const uint8_t block[64])
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = load_be32(block + 4 * i);
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + round_constants[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
}

void sha256_init(sha256_ctx *ctx)
{
    static const uint32_t initial[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                                        0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    memcpy(ctx->state, initial, sizeof initial);
    ctx->total_bytes = 0;
    ctx->block_used = 0;
}

void sha256_update(sha256_ctx *ctx, const uint8_t *data, size_t len)
{
    ctx->total_bytes += len;
    while (len > 0) {
        if (ctx->block_used == 0 && len >= 64) {
            compress_block(ctx->state, data); /* whole blocks straight from the input */
            data += 64;
            len -= 64;
            continue;
        }
        size_t take = 64 - ctx->block_used;
        if (take > len)
            take = len;
        memcpy(ctx->block + ctx->block_used, data, take);
        ctx->block_used += take;
        data += take;
        len -= take;
        if (ctx->block_used == 64) {
            compress_block(ctx->state, ctx->block);
            ctx->block_used = 0;
        }
    }
}

void sha256_final(sha256_ctx *ctx, uint8_t digest[SHA256_DIGEST_BYTES])
{
    uint64_t bit_length = ctx->total_bytes * 8u;
    static const uint8_t pad_start = 0x80;
    static const uint8_t zero = 0;
    /* Padding: 0x80, zeros up to 56 mod 64, then the 64-bit big-endian length;
     * update() must not count these bytes, so restore the total afterwards. */
    uint64_t total = ctx->total_bytes;
    sha256_update(ctx, &pad_start, 1);
    while (ctx->block_used != 56)
        sha256_update(ctx, &zero, 1);
    uint8_t length_be[8];
    store_be32(length_be, (uint32_t)(bit_length >> 32));
    store_be32(length_be + 4, (uint32_t)bit_length);
    sha256_update(ctx, length_be, 8);
    ctx->total_bytes = total;
    for (int i = 0; i < 8; i++)
        store_be32(digest + 4 * i, ctx->state[i]);
}

void sha256(const uint8_t *data, size_t len, uint8_t digest[SHA256_DIGEST_BYTES])
{
    sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, data, len);
    sha256_final(&ctx, digest);
}
