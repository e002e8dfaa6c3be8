/* bytes.h — little-endian buffers for the binary formats (cooked scenes, slot files). */
#ifndef KEEL_BYTES_H
#define KEEL_BYTES_H

#include "keel.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct keel__buf {
    uint8_t *p;
    size_t len, cap;
} keel__buf;
uint8_t *keel__buf_grow(keel__buf *b, size_t n); /* returns where the n new bytes go */
void keel__buf_u8(keel__buf *b, uint8_t v);
void keel__buf_u32(keel__buf *b, uint32_t v);
void keel__buf_u64(keel__buf *b, uint64_t v);
void keel__buf_f64(keel__buf *b, double d);
void keel__buf_bytes(keel__buf *b, const void *p, size_t n);
void keel__put_u32(uint8_t *at, uint32_t v);
uint32_t keel__get_u32(const uint8_t *p);
uint64_t keel__get_u64(const uint8_t *p);
void keel__buf_uuid(keel__buf *b, keel_uuid u);
void keel__buf_str(keel__buf *b, const char *s);      /* u32 length, then the bytes */
void keel__buf_node(keel__buf *b, const keel_node *n); /* kind, style, then text or items */

/* A bounded reader: every read checks what is left; the first failure sticks in `err`
 * (its message), and later reads return zeros. */
typedef struct keel__rd {
    const uint8_t *p;
    size_t len, pos;
    const char *err;
    bool limit; /* err is a load limit (LimitExceeded), not damage */
} keel__rd;
static inline bool keel__rd_need(keel__rd *r, size_t n, const char *what)
{
    if (r->err) return false;
    if (n > r->len - r->pos) {
        r->err = what;
        return false;
    }
    return true;
}

static inline uint8_t keel__rd_u8(keel__rd *r, const char *what) { return keel__rd_need(r, 1, what) ? r->p[r->pos++] : 0; }

static inline uint32_t keel__rd_u32(keel__rd *r, const char *what)
{
    if (!keel__rd_need(r, 4, what)) return 0;
    uint32_t v = keel__get_u32(r->p + r->pos);
    r->pos += 4;
    return v;
}

static inline uint64_t keel__rd_u64(keel__rd *r, const char *what)
{
    uint64_t lo = keel__rd_u32(r, what);
    return lo | (uint64_t)keel__rd_u32(r, what) << 32;
}
static inline keel_uuid keel__rd_uuid(keel__rd *r, const char *what)
{
    keel_uuid u = { { 0 } };
    if (keel__rd_need(r, 16, what)) {
        memcpy(u.bytes, r->p + r->pos, 16);
        r->pos += 16;
    }
    return u;
}

static inline bool keel__rd_bool(keel__rd *r, const char *what)
{
    uint8_t v = keel__rd_u8(r, what);
    if (v > 1 && !r->err) r->err = "a flag is not 0 or 1";
    return v == 1;
}
char *keel__rd_str(keel__rd *r, const char *what);     /* malloc'd; a NUL inside is an error */
/* A count whose items take at least `min` bytes each: bounded by what is left. */
uint32_t keel__rd_count(keel__rd *r, size_t min, const char *what);
/* A node written by keel__buf_node, nested at most max_depth deep, within the scene
 * reader's limits (keel_limits_default: string length, collection length); a map with
 * a key twice is refused (keel__buf_node never writes one). */
keel_node *keel__rd_node(keel__rd *r, int depth, int max_depth);

#endif
