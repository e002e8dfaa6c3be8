/* net_wire.c — replication's packets: the writer and the one decoder of untrusted bytes. The
 * decoder is pure (no world, no socket): every length, id and value is bounded here, and a
 * packet either decodes whole or not at all, so a malformed one changes nothing. */
#include "net/net_wire.h"
#include "base/vec.h"

#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writer ---- */


void keel__wire_u8(keel__wire_buf *b, uint8_t v) { keel__buf_u8(b, v); }

void keel__wire_varint(keel__wire_buf *b, uint64_t v)
{
    uint8_t at[10];
    keel__buf_bytes(b, at, keel__wire_varint_to(at, v));
}

void keel__wire_u32(keel__wire_buf *b, uint32_t v) { keel__buf_u32(b, v); }

void keel__wire_bytes(keel__wire_buf *b, const void *p, size_t n) { keel__buf_bytes(b, p, n); }

void keel__wire_str(keel__wire_buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    keel__wire_varint(b, n);
    keel__wire_bytes(b, s, n);
}

/* How many floats a value of type t holds (0: not a float type). */
static int float_count(keel_type t)
{
    switch (t) {
    case KEEL_T_FLOAT: return 1;
    case KEEL_T_VEC2: return 2;
    case KEEL_T_VEC3: return 3;
    case KEEL_T_VEC4:
    case KEEL_T_QUAT:
    case KEEL_T_COLOR: return 4;
    default: return 0;
    }
}

/* n floats at `at`, each as 32 bits (or 64 when `wide`), little-endian. */
static void floats_at(uint8_t *at, const double *x, int n, bool wide)
{
    for (int i = 0; i < n; i++) {
        if (wide) {
            uint64_t u;
            memcpy(&u, &x[i], 8);
            for (int j = 0; j < 8; j++) *at++ = (uint8_t)(u >> (8 * j));
        } else {
            float f = (float)x[i];
            uint32_t u;
            memcpy(&u, &f, 4);
            for (int j = 0; j < 4; j++) *at++ = (uint8_t)(u >> (8 * j));
        }
    }
}

static const double *floats_of(keel_type t, const keel_value *v)
{
    return t == KEEL_T_FLOAT ? &v->as.f : v->as.v;
}

bool keel__wire_needs_wide(keel_type t, const keel_value *v)
{
    int n = float_count(t);
    const double *x = floats_of(t, v);
    for (int i = 0; i < n; i++)
        if ((double)(float)x[i] != x[i] && !isnan(x[i])) return true;
    return false;
}

/* One pass for the common case: each float written as 32 bits while checking it is exact in 32
 * bits; written again as 64 bits when one is not (keel__wire_needs_wide's rule). */
size_t keel__wire_float_value(uint8_t *out, keel_type t, const keel_value *v, bool *wide)
{
    int n = float_count(t);
    if (!n) return 0;
    const double *x = floats_of(t, v);
    bool w = false;
    for (int i = 0; i < n; i++) {
        float f = (float)x[i];
        w |= (double)f != x[i] && !isnan(x[i]);
        uint32_t u;
        memcpy(&u, &f, 4);
        for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(u >> (8 * j));
    }
    if (w) floats_at(out, x, n, true);
    *wide = w;
    return (size_t)n * (w ? 8u : 4u);
}

void keel__wire_value(keel__wire_buf *b, keel_type t, const keel_value *v, bool wide)
{
    switch (t) {
    case KEEL_T_BOOL: keel__wire_u8(b, v->as.b ? 1 : 0); break;
    case KEEL_T_INT: keel__wire_varint(b, ((uint64_t)v->as.i << 1) ^ (uint64_t)(v->as.i >> 63)); break;
    case KEEL_T_FLOAT:
    case KEEL_T_VEC2:
    case KEEL_T_VEC3:
    case KEEL_T_VEC4:
    case KEEL_T_QUAT:
    case KEEL_T_COLOR: {
        int n = float_count(t);
        floats_at(keel__buf_grow(b, (size_t)n * (wide ? 8u : 4u)), floats_of(t, v), n, wide);
        break;
    }
    case KEEL_T_ENUM: keel__wire_varint(b, (uint64_t)v->as.i); break;
    case KEEL_T_STRING: keel__wire_str(b, v->as.s); break;
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY:
        keel__wire_u8(b, v->nil ? 0 : 1);
        if (!v->nil) keel__wire_bytes(b, v->as.u.bytes, 16);
        break;
    default: break;
    }
}

void keel__wire_buf_free(keel__wire_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

uint32_t keel__wire_hash(const char *s, uint32_t h)
{
    for (; s && *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return (h ^ 0xffu) * 16777619u; /* a separator: "ab"+"c" differs from "a"+"bc" */
}

/* ---- reader ---- */

typedef keel__rd rd; /* bytes.h's bounded reader: the first failure sticks in err */

/* A varint no larger than max (10 bytes at most, no overlong tail). */
static uint64_t get_varint(rd *r, uint64_t max, const char *what)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        uint8_t c = keel__rd_u8(r, what);
        if (r->err) return 0;
        if (shift == 63 && c > 1) break;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            if (v > max) break;
            return v;
        }
    }
    if (!r->err) r->err = what;
    return 0;
}

static uint64_t get_u64(rd *r, const char *what)
{
    uint64_t lo = keel__rd_u32(r, what);
    return lo | (uint64_t)keel__rd_u32(r, what) << 32;
}

/* A string of at most max bytes, valid UTF-8, no NUL inside: malloc'd, or NULL on error. */
static char *get_str(rd *r, size_t max, const char *what)
{
    size_t n = (size_t)get_varint(r, max, what);
    if (r->err || !keel__rd_need(r, n, what)) return NULL;
    char *s = keel__xrealloc(NULL, n + 1);
    memcpy(s, r->p + r->pos, n);
    s[n] = 0;
    r->pos += n;
    if (strlen(s) != n || !keel__utf8_valid(s)) {
        free(s);
        r->err = what;
        return NULL;
    }
    return s;
}

static double get_float(rd *r, bool wide, const char *what)
{
    double d;
    if (wide) {
        uint64_t u = get_u64(r, what);
        memcpy(&d, &u, 8);
    } else {
        uint32_t u = keel__rd_u32(r, what);
        float f;
        memcpy(&f, &u, 4);
        d = f;
    }
    if (!isfinite(d) && !r->err) r->err = "a value is not a finite number";
    return d;
}

static void get_value(rd *r, keel_type t, uint32_t choices, bool wide, keel_value *v)
{
    memset(v, 0, sizeof *v);
    v->type = t;
    switch (t) {
    case KEEL_T_BOOL: {
        uint8_t c = keel__rd_u8(r, "bool value");
        if (c > 1 && !r->err) r->err = "bool value";
        v->as.b = c == 1;
        break;
    }
    case KEEL_T_INT: {
        uint64_t z = get_varint(r, UINT64_MAX, "int value");
        v->as.i = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
        break;
    }
    case KEEL_T_FLOAT: v->as.f = get_float(r, wide, "float value"); break;
    case KEEL_T_VEC2:
    case KEEL_T_VEC3:
    case KEEL_T_VEC4:
    case KEEL_T_QUAT:
    case KEEL_T_COLOR:
        for (int i = 0; i < keel_type_width(t); i++) v->as.v[i] = get_float(r, wide, "vector value");
        break;
    case KEEL_T_ENUM: v->as.i = (int64_t)get_varint(r, choices ? choices - 1 : 0, "enum value"); break;
    case KEEL_T_STRING: v->as.s = get_str(r, KEEL__WIRE_MAX_STR, "string value"); break;
    case KEEL_T_ASSET:
    case KEEL_T_ENTITY: {
        uint8_t has = keel__rd_u8(r, "reference value");
        if (has > 1 && !r->err) r->err = "reference value";
        v->nil = has == 0;
        if (has == 1) v->as.u = keel__rd_uuid(r, "reference value");
        break;
    }
    default:
        if (!r->err) r->err = "a value of unknown type";
    }
}

static keel__wire_rec *new_rec(keel__wire_msg *m, uint8_t tag)
{
    KEEL__VEC_RESERVE(m->recs, m->nrec, m->rec_cap, 1, 16);
    keel__wire_rec *x = &m->recs[m->nrec++];
    memset(x, 0, sizeof *x);
    x->tag = tag;
    x->val0 = (uint32_t)m->nval;
    return x;
}

static keel_value *new_val(keel__wire_msg *m)
{
    KEEL__VEC_RESERVE(m->vals, m->nval, m->val_cap, 1, 32);
    keel_value *v = &m->vals[m->nval++];
    memset(v, 0, sizeof *v);
    return v;
}

/* kind, [slot], mask, values: the component part of ADD and DELTA records */
static void get_comp(rd *r, keel__wire_msg *m, const keel__wire_schema *s, keel__wire_rec *x, bool slot_always,
                     bool all)
{
    if (!s) {
        r->err = "component data before the kind table";
        return;
    }
    x->kind = (uint32_t)get_varint(r, s->count ? s->count - 1 : 0, "kind id");
    if (r->err || !s->count) {
        r->err = "kind id";
        return;
    }
    const keel__wire_kind *k = &s->kinds[x->kind];
    if (slot_always || k->many) x->slot = (uint32_t)get_varint(r, k->many ? KEEL__WIRE_MAX_SLOT : 0, "slot");
    uint64_t lim = k->nsync >= 32 ? UINT64_MAX : ((uint64_t)1 << (2 * k->nsync)) - 1;
    x->mask = get_varint(r, lim, "field mask");
    for (uint32_t i = 0; i < k->nsync && !r->err; i++) {
        uint64_t bits = x->mask >> (2 * i) & 3;
        if (bits == 2 || (all && bits == 0)) r->err = "field mask";
        if (!(bits & 1)) continue;
        keel_value *v = new_val(m);
        get_value(r, k->types[i], k->choices[i], bits == 3, v);
    }
}

static void decode(rd *r, const keel__wire_schema *s, keel__wire_msg *m)
{
    m->type = keel__rd_u8(r, "packet type");
    switch (m->type) {
    case KEEL__PK_HELLO:
        m->protocol = (uint32_t)get_varint(r, UINT32_MAX, "protocol");
        m->text = get_str(r, KEEL__WIRE_MAX_NAME, "client name");
        break;
    case KEEL__PK_JOIN: break;
    case KEEL__PK_REFUSE: m->text = get_str(r, KEEL__WIRE_MAX_NAME, "reason"); break;
    case KEEL__PK_ACK: {
        size_t n = (size_t)get_varint(r, KEEL__WIRE_MAX_ACKS, "ack count");
        if (r->err) break;
        m->acks = keel__xcalloc(n ? 2 * n : 1, sizeof *m->acks);
        for (size_t i = 0; i < n && !r->err; i++) {
            m->acks[2 * i] = get_varint(r, UINT64_MAX >> 2, "acked sequence");
            m->acks[2 * i + 1] = get_varint(r, 1u << 20, "acked count");
        }
        m->nacks = n;
        break;
    }
    case KEEL__PK_KINDS: {
        m->protocol = (uint32_t)get_varint(r, UINT32_MAX, "protocol");
        uint8_t last = keel__rd_u8(r, "last");
        if (last > 1) r->err = "last";
        m->last = last == 1;
        size_t n = (size_t)get_varint(r, KEEL__WIRE_MAX_KINDS, "kind count");
        if (r->err) break;
        if (n > r->len - r->pos) { /* each takes a byte at least: no allocation past the packet */
            r->err = "kind count";
            break;
        }
        m->kinds = keel__xcalloc(n ? n : 1, sizeof *m->kinds);
        for (size_t i = 0; i < n && !r->err; i++) {
            keel__wire_kindrec *k = &m->kinds[i];
            m->nkinds = i + 1;
            char *key = get_str(r, KEEL__WIRE_MAX_KEY, "kind key");
            if (key) {
                memcpy(k->key, key, strlen(key) + 1);
                free(key);
            }
            k->version = (uint32_t)get_varint(r, INT32_MAX, "kind version");
            k->hash = keel__rd_u32(r, "kind hash");
            k->interval = (uint32_t)get_varint(r, KEEL_SYNC_INTERVAL_MAX, "sync interval");
            uint8_t many = keel__rd_u8(r, "multiplicity");
            if (many > 1) r->err = "multiplicity";
            k->k.many = many == 1;
            k->k.nsync = (uint32_t)get_varint(r, KEEL__WIRE_MAX_SYNC, "synced field count");
            for (uint32_t f = 0; f < k->k.nsync && !r->err; f++) {
                uint8_t t = keel__rd_u8(r, "field type");
                if (t >= KEEL_T_COUNT_) r->err = "field type";
                k->k.types[f] = (keel_type)t;
                k->k.choices[f] = t == KEEL_T_ENUM ? (uint32_t)get_varint(r, 65535, "choice count") : 0;
            }
        }
        break;
    }
    case KEEL__PK_STATE:
        m->tick = get_varint(r, UINT64_MAX >> 1, "tick");
        while (!r->err && r->pos < r->len) {
            if (m->nrec >= KEEL__WIRE_MAX_RECORDS) {
                r->err = "too many records";
                break;
            }
            uint8_t tag = keel__rd_u8(r, "record tag");
            keel__wire_rec *x = new_rec(m, tag);
            x->lid = (uint32_t)get_varint(r, KEEL__WIRE_MAX_LID, "entity id");
            switch (tag) {
            case KEEL__REC_SPAWN:
                x->uuid = keel__rd_uuid(r, "uuid");
                if (!r->err && keel_uuid_is_nil(x->uuid)) r->err = "nil uuid";
                x->inc = (uint32_t)get_varint(r, UINT32_MAX, "incarnation");
                /* fall through */
            case KEEL__REC_META: {
                x->parent = (uint32_t)get_varint(r, KEEL__WIRE_MAX_LID + 1u, "parent id");
                uint8_t en = keel__rd_u8(r, "enabled");
                if (en > 1) r->err = "enabled";
                x->enabled = en == 1;
                x->name = get_str(r, KEEL__WIRE_MAX_NAME, "entity name");
                break;
            }
            case KEEL__REC_REMOVE: break;
            case KEEL__REC_ADD: get_comp(r, m, s, x, true, true); break;
            case KEEL__REC_DROP:
                if (!s || !s->count) r->err = "component data before the kind table";
                else {
                    x->kind = (uint32_t)get_varint(r, s->count - 1, "kind id");
                    x->slot = (uint32_t)get_varint(r, KEEL__WIRE_MAX_SLOT, "slot");
                }
                break;
            default: r->err = "record tag";
            }
        }
        break;
    case KEEL__PK_DELTA: {
        m->seq = get_varint(r, UINT64_MAX >> 1, "sequence");
        if (!m->seq && !r->err) r->err = "sequence";
        m->tick = get_varint(r, UINT64_MAX >> 1, "tick");
        uint64_t lid = 0;
        bool first = true;
        while (!r->err && r->pos < r->len) {
            if (m->nrec >= KEEL__WIRE_MAX_RECORDS) {
                r->err = "too many records";
                break;
            }
            keel__wire_rec *x = new_rec(m, KEEL__REC_DELTA);
            uint64_t gap = get_varint(r, KEEL__WIRE_MAX_LID, "entity id");
            lid = first ? gap : lid + gap; /* ascending: a gap of 0 is the same entity's next component */
            first = false;
            if (lid > KEEL__WIRE_MAX_LID && !r->err) r->err = "entity id";
            x->lid = (uint32_t)lid;
            get_comp(r, m, s, x, false, false);
        }
        break;
    }
    default: r->err = "packet type";
    }
    if (!r->err && r->pos != r->len) r->err = "trailing bytes";
}

bool keel__wire_decode(const uint8_t *p, size_t len, const keel__wire_schema *schema, keel__wire_msg *m, char *err,
                       size_t cap)
{
    memset(m, 0, sizeof *m);
    rd r = { .p = p, .len = len };
    if (!p) r.err = "empty packet";
    else decode(&r, schema, m);
    if (!r.err) return true;
    snprintf(err, cap, "malformed packet: bad %s at byte %zu", r.err, r.pos);
    keel__wire_msg_free(m);
    return false;
}

void keel__wire_msg_free(keel__wire_msg *m)
{
    for (size_t i = 0; i < m->nrec; i++) free(m->recs[i].name);
    for (size_t i = 0; i < m->nval; i++)
        if (m->vals[i].type == KEEL_T_STRING) free((char *)m->vals[i].as.s);
    free(m->recs);
    free(m->vals);
    free(m->kinds);
    free(m->text);
    free(m->acks);
    memset(m, 0, sizeof *m);
}
