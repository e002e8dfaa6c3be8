/* bytes.c — little-endian byte buffers shared by the binary formats (cooked scenes, save slots). */
#include <string.h>

#include "util.h"
#include "bytes.h"

uint8_t *keel__buf_grow(keel__buf *b, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        b->p = keel__xrealloc(b->p, cap);
        b->cap = cap;
    }
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

void keel__put_u32(uint8_t *at, uint32_t v)
{
    for (int i = 0; i < 4; i++) at[i] = (uint8_t)(v >> (8 * i));
}

uint32_t keel__get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t keel__get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void keel__buf_u8(keel__buf *b, uint8_t v) { *keel__buf_grow(b, 1) = v; }
void keel__buf_u32(keel__buf *b, uint32_t v) { keel__put_u32(keel__buf_grow(b, 4), v); }

void keel__buf_u64(keel__buf *b, uint64_t v)
{
    uint8_t *at = keel__buf_grow(b, 8);
    for (int i = 0; i < 8; i++) at[i] = (uint8_t)(v >> (8 * i));
}

/* Doubles travel as their IEEE-754 bit pattern: exact, and NaN payloads kept. */
void keel__buf_f64(keel__buf *b, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    keel__buf_u64(b, v);
}

void keel__buf_bytes(keel__buf *b, const void *p, size_t n)
{
    if (n) memcpy(keel__buf_grow(b, n), p, n);
}
