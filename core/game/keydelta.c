/* keydelta.c — a keyframe as a diff against the one before it (design/replay.md): a byte delta
 * between two keyframe encodings (game/record.h), and the chain of them a replay rebuilds.
 *
 * A delta is a list of operations that rebuild the new encoding from the old one: COPY (a run of
 * the old bytes, by offset and length) and ADD (bytes given). Entities that did not change since
 * the previous keyframe encode to the same bytes, in the same order, so they become a few COPYs;
 * a changed field is a short ADD between two. The encoder indexes the old bytes by blocks of
 * BLOCK bytes (a polynomial hash of each aligned block), slides the same hash over the new bytes
 * one byte at a time, and at a hit that the bytes confirm extends the match both ways; it tries
 * the old bytes right after the last COPY first, where the next match usually is. It works on
 * the encoding's bytes and knows nothing of its fields, so the keyframe's layout may grow (timers,
 * messages) without touching it.
 *
 * Applying bounds every operation by the old bytes and by the length the keyframe declares:
 * a delta that reaches outside either, or falls short, is refused. */
#include "base/util.h"
#include "game/record.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define BLOCK 16
#define PRIME 0x100000001b3ull
#define PROBES 8 /* slots looked at past a block's own */

enum { OP_COPY = 1, OP_ADD = 2 };

static uint64_t block_hash(const uint8_t *p)
{
    uint64_t h = 0;
    for (int i = 0; i < BLOCK; i++) h = h * PRIME + p[i];
    return h;
}

static size_t slot_of(uint64_t h, size_t mask)
{
    return (size_t)((h * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

static void put_add(keel__buf *out, const uint8_t *p, size_t n)
{
    if (!n) return;
    keel__buf_u8(out, OP_ADD);
    keel__buf_u32(out, (uint32_t)n);
    keel__buf_bytes(out, p, n);
}

static void put_copy(keel__buf *out, size_t at, size_t n)
{
    keel__buf_u8(out, OP_COPY);
    keel__buf_u32(out, (uint32_t)at);
    keel__buf_u32(out, (uint32_t)n);
}

void keel__delta_encode(const uint8_t *old, size_t olen, const uint8_t *cur, size_t clen, keel__buf *out)
{
    size_t nblocks = olen / BLOCK, cap = 16;
    while (cap < nblocks * 2) cap *= 2;
    uint32_t *table = keel__xcalloc(cap, sizeof *table); /* block offset / BLOCK + 1; 0 empty */
    /* a full neighbourhood drops the block: a cost bound */
    for (size_t b = 0; b < nblocks; b++) {
        size_t s = slot_of(block_hash(old + b * BLOCK), cap - 1);
        for (int k = 0; k < PROBES && table[s]; k++) s = (s + 1) & (cap - 1);
        if (!table[s]) table[s] = (uint32_t)b + 1;
    }
    uint64_t top = 1; /* PRIME^(BLOCK-1): what the byte leaving the window weighs */
    for (int i = 1; i < BLOCK; i++) top *= PRIME;
    size_t lit = 0, i = 0, next = 0; /* next: the old offset after the last COPY */
    uint64_t h = clen >= BLOCK ? block_hash(cur) : 0;
    while (i + BLOCK <= clen) {
        size_t at = SIZE_MAX;
        if (next + BLOCK <= olen && memcmp(cur + i, old + next, BLOCK) == 0) at = next;
        size_t s = slot_of(h, cap - 1);
        for (int k = 0; k <= PROBES && at == SIZE_MAX && table[s]; k++, s = (s + 1) & (cap - 1)) {
            size_t o = (size_t)(table[s] - 1) * BLOCK;
            if (memcmp(cur + i, old + o, BLOCK) == 0) at = o;
        }
        if (at == SIZE_MAX) {
            if (i + BLOCK < clen) h = (h - cur[i] * top) * PRIME + cur[i + BLOCK];
            i++;
            continue;
        }
        size_t n = BLOCK;
        while (i + n < clen && at + n < olen && cur[i + n] == old[at + n]) n++;
        while (i > lit && at > 0 && cur[i - 1] == old[at - 1]) i--, at--, n++;
        put_add(out, cur + lit, i - lit);
        put_copy(out, at, n);
        i += n;
        lit = i;
        next = at + n;
        if (i + BLOCK <= clen) h = block_hash(cur + i);
    }
    put_add(out, cur + lit, clen - lit);
    free(table);
}

bool keel__delta_apply(const uint8_t *old, size_t olen, const uint8_t *ops, size_t n, uint8_t *out, size_t out_len,
                       const char **err)
{
    keel__rd r = { ops, n, 0, NULL, false };
    size_t at = 0;
    while (r.pos < r.len && !r.err) {
        uint8_t op = keel__rd_u8(&r, "truncated delta");
        if (op == OP_COPY) {
            uint32_t from = keel__rd_u32(&r, "truncated delta"), len = keel__rd_u32(&r, "truncated delta");
            if (r.err) break;
            if (from > olen || len > olen - from || len > out_len - at) {
                r.err = "a delta copies from outside the keyframe before it";
                break;
            }
            memcpy(out + at, old + from, len);
            at += len;
        } else if (op == OP_ADD) {
            uint32_t len = keel__rd_u32(&r, "truncated delta");
            if (!keel__rd_need(&r, len, "truncated delta")) break;
            if (len > out_len - at) {
                r.err = "a delta runs past its keyframe's length";
                break;
            }
            memcpy(out + at, r.p + r.pos, len);
            r.pos += len;
            at += len;
        } else {
            r.err = "unknown delta operation";
        }
    }
    if (!r.err && at != out_len) r.err = "a delta falls short of its keyframe's length";
    if (err) *err = r.err;
    return r.err == NULL;
}

/* ================================================================ the chunks */

/* n bytes of p, zlib-compressed, onto b (nothing when compression fails: the reader refuses it). */
static void put_compressed(keel__buf *b, const uint8_t *p, size_t n)
{
    uLongf zlen = compressBound((uLong)n);
    size_t at = b->len;
    keel__buf_grow(b, zlen);
    if (compress2(b->p + at, &zlen, p, (uLong)n, 6) != Z_OK) zlen = 0;
    b->len = at + zlen;
}

void keel__keyframe_put(keel__keyframes *k, keel__buf *out, uint64_t frame, uint32_t pending, keel__buf *raw)
{
    keel__buf pay = { 0 }, delta = { 0 };
    keel__buf_u64(&pay, frame);
    keel__buf_u32(&pay, pending);
    keel__buf_u32(&pay, (uint32_t)raw->len);
    /* a diff needs a keyframe before it at an earlier frame (the closing one may repeat a frame) */
    bool diff = k->any && k->run < KEEL__REC_DIFF_RUN && frame > k->prev_frame;
    if (diff) {
        keel__delta_encode(k->prev.p, k->prev.len, raw->p, raw->len, &delta);
        diff = delta.len < raw->len / 2;
    }
    if (diff) {
        keel__buf_u64(&pay, k->prev_frame);
        keel__buf_u32(&pay, (uint32_t)delta.len);
        put_compressed(&pay, delta.p, delta.len);
        keel__chunk_put(out, KEEL__CH_KEYDIFF, pay.p, pay.len);
        k->run++;
    } else {
        put_compressed(&pay, raw->p, raw->len);
        keel__chunk_put(out, KEEL__CH_KEYFRAME, pay.p, pay.len);
        k->run = 0;
    }
    free(delta.p);
    free(pay.p);
    free(k->prev.p);
    k->prev = *raw;
    *raw = (keel__buf){ 0 };
    k->prev_frame = frame;
    k->any = true;
}

void keel__keyframes_free(keel__keyframes *k)
{
    free(k->prev.p);
    memset(k, 0, sizeof *k);
}

static bool inflate_to(const keel__rec_key *k, uint8_t *out, size_t n)
{
    uLongf got = (uLongf)n;
    return uncompress(out, &got, k->p, k->len) == Z_OK && got == n;
}

keel_status keel__keyframe_raw(const keel__rec_key *keys, size_t i, uint8_t **raw, keel_diags *d)
{
    size_t first = i;
    while (first > 0 && keys[first].diff) first--;
    *raw = NULL;
    const keel__rec_key *k = &keys[first];
    uint8_t *cur = keel__xrealloc(NULL, k->raw_len ? k->raw_len : 1), *ops = NULL;
    const char *err = keys[first].diff ? "a diff keyframe has no keyframe before it" : NULL;
    if (!err && !inflate_to(k, cur, k->raw_len)) err = "it does not inflate";
    for (size_t j = first + 1; j <= i && !err; j++) {
        const keel__rec_key *x = &keys[j], *prev = &keys[j - 1];
        ops = keel__xrealloc(ops, x->delta_len ? x->delta_len : 1);
        uint8_t *next = keel__xrealloc(NULL, x->raw_len ? x->raw_len : 1);
        if (!inflate_to(x, ops, x->delta_len)) err = "its delta does not inflate";
        else keel__delta_apply(cur, prev->raw_len, ops, x->delta_len, next, x->raw_len, &err);
        free(cur);
        cur = next;
        if (err) k = x;
    }
    free(ops);
    if (err) {
        free(cur);
        return KEEL_ERROR(d, KEEL_PARSE_ERROR, "", "recording: keyframe %llu: %s", (unsigned long long)k->frame,
                          err);
    }
    *raw = cur;
    return KEEL_OK;
}
