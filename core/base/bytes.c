/* bytes.c — little-endian byte buffers shared by the binary formats (cooked scenes, save slots). */
#include <string.h>

#include "base/util.h"
#include "base/vec.h"
#include "base/bytes.h"

#include <stdlib.h>

uint8_t *keel__buf_grow(keel__buf *b, size_t n)
{
    KEEL__VEC_RESERVE(b->p, b->len, b->cap, n, 4096);
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

/* ---- typed writes and the bounded reader (save slots) ---- */

void keel__buf_uuid(keel__buf *b, keel_uuid u) { keel__buf_bytes(b, u.bytes, 16); }
void keel__buf_str(keel__buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    keel__buf_u32(b, (uint32_t)n);
    keel__buf_bytes(b, s, n);
}
void keel__buf_node(keel__buf *b, const keel_node *n)
{
    keel__buf_u8(b, (uint8_t)n->kind);
    keel__buf_u8(b, (uint8_t)n->style);
    if (n->kind == KEEL_NODE_SCALAR) {
        keel__buf_u32(b, (uint32_t)n->len);
        keel__buf_bytes(b, n->text, n->len);
        return;
    }
    keel__buf_u32(b, (uint32_t)n->count);
    size_t items = n->kind == KEEL_NODE_MAP ? 2 * n->count : n->count;
    for (size_t i = 0; i < items; i++) keel__buf_node(b, &n->items[i]);
}



char *keel__rd_str(keel__rd *r, const char *what)
{
    uint32_t n = keel__rd_u32(r, what);
    if (!keel__rd_need(r, n, what)) return NULL;
    if (memchr(r->p + r->pos, 0, n)) {
        r->err = "a string holds a NUL byte";
        return NULL;
    }
    char *s = keel__xrealloc(NULL, (size_t)n + 1);
    memcpy(s, r->p + r->pos, n);
    s[n] = 0;
    r->pos += n;
    return s;
}
/* A count whose items take at least `min` bytes each: bounded by what is left. */
uint32_t keel__rd_count(keel__rd *r, size_t min, const char *what)
{
    uint32_t n = keel__rd_u32(r, what);
    if (!r->err && n > (r->len - r->pos) / min) {
        r->err = "a count runs past the end of the state";
        return 0;
    }
    return n;
}

static int text_order(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether two keys of the map are equal: sorted, so n log n rather than a scan per key. */
static bool has_duplicate_key(const keel_node *map)
{
    if (map->count < 2) return false;
    const char **keys = keel__xrealloc(NULL, map->count * sizeof *keys);
    for (size_t i = 0; i < map->count; i++) keys[i] = map->items[2 * i].text;
    qsort(keys, map->count, sizeof *keys, text_order);
    bool dup = false;
    for (size_t i = 1; i < map->count && !dup; i++) dup = strcmp(keys[i - 1], keys[i]) == 0;
    free(keys);
    return dup;
}

static bool over_limit(keel__rd *r, const char *what)
{
    if (!r->err) {
        r->err = what;
        r->limit = true;
    }
    return false;
}

keel_node *keel__rd_node(keel__rd *r, int depth, int max_depth)
{
    if (depth > max_depth) {
        if (!r->err) r->err = "a body is nested too deeply";
        return NULL;
    }
    uint8_t kind = keel__rd_u8(r, "truncated body");
    uint8_t style = keel__rd_u8(r, "truncated body");
    if (r->err) return NULL;
    if (kind > KEEL_NODE_MAP || style > KEEL_STYLE_BLOCK) {
        r->err = "a body node has a bad kind or style";
        return NULL;
    }
    keel_limits lim = keel_limits_default();
    if (kind == KEEL_NODE_SCALAR) {
        if (r->len - r->pos >= 4 && keel__get_u32(r->p + r->pos) > lim.string_length) {
            over_limit(r, "a string is longer than the limit (65,536 bytes)");
            return NULL;
        }
        char *text = keel__rd_str(r, "truncated scalar");
        if (!text) return NULL;
        keel_node *n = keel_node_new_scalar(text, (keel_node_style)style);
        free(text);
        return n;
    }
    uint32_t count = keel__rd_count(r, kind == KEEL_NODE_MAP ? 12 : 6, "truncated collection");
    if (r->err) return NULL;
    if (count > lim.collection_length) {
        over_limit(r, "a collection is longer than the limit (65,536 items)");
        return NULL;
    }
    keel_node *n = kind == KEEL_NODE_MAP ? keel_node_new_map() : keel_node_new_seq();
    n->style = (keel_node_style)style;
    size_t slots = kind == KEEL_NODE_MAP ? 2 * (size_t)count : count;
    if (slots) n->items = keel__xcalloc(slots, sizeof *n->items);
    /* Filled in place, not by put (a scan per key) or push: n->count is what is read. */
    for (uint32_t i = 0; i < count; i++) {
        if (kind == KEEL_NODE_MAP) {
            keel_node *k = keel__rd_node(r, depth + 1, max_depth);
            keel_node *v = k ? keel__rd_node(r, depth + 1, max_depth) : NULL;
            if (!v || k->kind != KEEL_NODE_SCALAR) {
                if (!r->err) r->err = "a map key is not a scalar";
                keel_node_free(k);
                keel_node_free(v);
                keel_node_free(n);
                return NULL;
            }
            n->items[2 * i] = *k; /* unknown bodies keep their key styles */
            n->items[2 * i + 1] = *v;
            free(k);
            free(v);
        } else {
            keel_node *v = keel__rd_node(r, depth + 1, max_depth);
            if (!v) {
                keel_node_free(n);
                return NULL;
            }
            n->items[i] = *v;
            free(v);
        }
        n->count = i + 1;
    }
    if (kind == KEEL_NODE_MAP && has_duplicate_key(n)) {
        r->err = "a map holds a key twice";
        keel_node_free(n);
        return NULL;
    }
    return n;
}
