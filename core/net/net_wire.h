/* net_wire.h — replication's packet format: a bounded writer, and a decoder that turns one
 * untrusted packet into records (or an error) without touching any world. net.c applies them. */
#ifndef KEEL_NET_WIRE_H
#define KEEL_NET_WIRE_H

#include "keel.h"
#include "base/bytes.h"

#include <stddef.h>
#include <stdint.h>

#define KEEL__WIRE_PROTOCOL 1
#define KEEL__WIRE_MTU 1200           /* bytes per packet we send (a single oversized record excepted) */
#define KEEL__WIRE_MAX_SYNC 32        /* synced fields per kind */
#define KEEL__WIRE_MAX_KINDS 4096     /* synced kinds in a handshake */
#define KEEL__WIRE_MAX_KEY 128        /* a kind key's bytes */
#define KEEL__WIRE_MAX_NAME 4096      /* an entity's name, a client's name, a reason */
#define KEEL__WIRE_MAX_STR 65536      /* a string value */
#define KEEL__WIRE_MAX_LID (1u << 24) /* connection-local entity ids */
#define KEEL__WIRE_MAX_SLOT 65535
#define KEEL__WIRE_MAX_RECORDS 8192 /* records in one packet */
#define KEEL__WIRE_MAX_ACKS 128     /* seq ranges in one ack */

/* packet types (first byte) */
enum {
    KEEL__PK_HELLO = 1,  /* c->s ch0: varint protocol, str name */
    KEEL__PK_JOIN = 2,   /* c->s ch0: the kind table is acceptable: start sending state */
    KEEL__PK_REFUSE = 3, /* c->s ch0 / s->c ch0: str reason, then the sender disconnects */
    KEEL__PK_ACK = 4,    /* c->s ch1: varint n (<= KEEL__WIRE_MAX_ACKS), n x (varint first seq, varint count):
                           * the delta packets received since the last ack */
    KEEL__PK_KINDS = 10, /* s->c ch0: varint protocol, u8 last, varint n, n x (str key, varint version,
                           * u32 layout hash, varint interval, u8 many, varint nsync, nsync x u8 type) */
    KEEL__PK_STATE = 11, /* s->c ch0: varint tick, records (u8 tag first) */
    KEEL__PK_DELTA = 12 /* s->c ch1: varint seq (>= 1), varint tick, records: varint lid gap, varint kind, [varint slot],
                           * varint mask (2 bits a synced field: present, 64-bit), values */
};
/* STATE record tags */
enum {
    KEEL__REC_SPAWN = 1, /* varint lid, 16 uuid, varint incarnation, varint parent lid + 1, u8 enabled, str name */
    KEEL__REC_META = 2,  /* varint lid, varint parent lid + 1, u8 enabled, str name */
    KEEL__REC_REMOVE = 3, /* varint lid */
    KEEL__REC_ADD = 4,    /* varint lid, varint kind, varint slot, varint mask, values (all synced fields) */
    KEEL__REC_DROP = 5,   /* varint lid, varint kind, varint slot: a component removed */
    KEEL__REC_DELTA = 6   /* (DELTA packets only, no tag) */
};

/* The kinds a connection agreed on: what the decoder needs to read values. */
typedef struct keel__wire_kind {
    bool many;
    uint32_t nsync;
    keel_type types[KEEL__WIRE_MAX_SYNC];
    uint32_t choices[KEEL__WIRE_MAX_SYNC]; /* enum choice counts */
} keel__wire_kind;
typedef struct keel__wire_schema {
    const keel__wire_kind *kinds;
    uint32_t count;
} keel__wire_schema;

typedef struct keel__wire_rec {
    uint8_t tag;
    uint32_t lid, inc, parent; /* parent: lid + 1, 0 top level */
    keel_uuid uuid;
    bool enabled;
    char *name;
    uint32_t kind, slot;
    uint64_t mask; /* bit 2i: synced field i present */
    uint32_t val0; /* its values: vals[val0 .. val0 + popcount) in field order */
} keel__wire_rec;

typedef struct keel__wire_kindrec {
    char key[KEEL__WIRE_MAX_KEY + 1];
    uint32_t version, hash, interval;
    keel__wire_kind k;
} keel__wire_kindrec;

typedef struct keel__wire_msg {
    uint8_t type;
    uint64_t tick;  /* STATE, DELTA */
    uint64_t seq;   /* DELTA */
    uint64_t *acks; /* ACK: nacks pairs (first seq, count) */
    size_t nacks;
    uint32_t protocol; /* HELLO, KINDS */
    bool last;         /* KINDS */
    char *text;        /* HELLO name, REFUSE reason */
    keel__wire_rec *recs;
    size_t nrec, rec_cap;
    keel_value *vals;
    size_t nval, val_cap;
    keel__wire_kindrec *kinds;
    size_t nkinds;
} keel__wire_msg;

/* Decodes one packet. On failure returns false with a reason in err and *m empty. `schema` may be
 * NULL (then STATE ADD and DELTA records are refused). Frees with keel__wire_msg_free. */
bool keel__wire_decode(const uint8_t *p, size_t len, const keel__wire_schema *schema, keel__wire_msg *m, char *err,
                       size_t cap);
void keel__wire_msg_free(keel__wire_msg *m);

/* ---- the writer: a growable buffer ---- */
typedef keel__buf keel__wire_buf; /* bytes.c's growable buffer */
void keel__wire_u8(keel__wire_buf *b, uint8_t v);
void keel__wire_varint(keel__wire_buf *b, uint64_t v);
/* v as a varint into out (at least 10 bytes); returns its length (inline: the delta writer's hot path). */
static inline size_t keel__wire_varint_to(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}
void keel__wire_u32(keel__wire_buf *b, uint32_t v);
void keel__wire_bytes(keel__wire_buf *b, const void *p, size_t n);
void keel__wire_str(keel__wire_buf *b, const char *s); /* varint length, bytes */
/* A value of type t: floats as 32 bits when `wide` is false (see keel__wire_needs_wide). */
void keel__wire_value(keel__wire_buf *b, keel_type t, const keel_value *v, bool wide);
bool keel__wire_needs_wide(keel_type t, const keel_value *v); /* a float not exact in 32 bits */
/* A float-typed value (float, vectors, quat, color) into out (32 bytes at most), 32-bit floats
 * unless one needs 64 (then *wide); returns its length, 0 for a type of another kind. */
size_t keel__wire_float_value(uint8_t *out, keel_type t, const keel_value *v, bool *wide);
void keel__wire_buf_free(keel__wire_buf *b);

uint32_t keel__wire_hash(const char *s, uint32_t h); /* FNV-1a, h = 2166136261 to start */

#endif
