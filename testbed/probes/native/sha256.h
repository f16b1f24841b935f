/* SHA-256 (FIPS 180-4), for hashing files the way sha256sum does. */
#ifndef TBPROBE_SHA256_H
#define TBPROBE_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t nbuf;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t n);
void sha256_hex(sha256_ctx *c, char out[65]); /* finishes c; out is NUL-terminated */

#endif
