/* net.c — replication over ENet: a host serving one world's synced state to client worlds,
 * and the clients mirroring it. The bytes are net_wire.c's; this file tracks what changed
 * (per component: each synced field's last change tick, found through the member's write
 * counter), what each client holds (connection-local ids, the tick each component is
 * confirmed at, a ring of the last 32 unreliable packets awaiting acks) and applies what a
 * client receives through the one field write path (keel__field_set, between keel__world_mirror_apply calls). */
#include "net/net.h"

#include "bind.h"
#include "net/net_wire.h"
#include "base/util.h"
#include "model/value.h"
#include "model/world.h"

#include <enet/enet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RING 32
#define BODY_COPY 32 /* delta bodies up to this long are copied with one fixed-size copy */
#define CH_RELIABLE 0
#define CH_DELTA 1

/* ---- a u64 -> u32 map (linear probing, backward-shift deletion) ---- */
typedef struct map {
    uint64_t *keys; /* key + 1; 0 empty */
    uint32_t *vals;
    size_t cap, used;
} map;

static size_t map_slot(const map *m, uint64_t k)
{
    uint64_t h = (k + 1) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 17) & (m->cap - 1);
}

static bool map_get(const map *m, uint64_t k, uint32_t *v)
{
    if (!m->cap) return false;
    for (size_t i = map_slot(m, k);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return false;
        if (m->keys[i] == k + 1) {
            *v = m->vals[i];
            return true;
        }
    }
}

static void map_put(map *m, uint64_t k, uint32_t v);
static void map_grow(map *m)
{
    map old = *m;
    m->cap = old.cap ? old.cap * 2 : 64;
    m->keys = keel__xcalloc(m->cap, sizeof *m->keys);
    m->vals = keel__xcalloc(m->cap, sizeof *m->vals);
    m->used = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i]) map_put(m, old.keys[i] - 1, old.vals[i]);
    free(old.keys);
    free(old.vals);
}

static void map_put(map *m, uint64_t k, uint32_t v)
{
    if ((m->used + 1) * 2 > m->cap) map_grow(m);
    size_t i = map_slot(m, k);
    while (m->keys[i] && m->keys[i] != k + 1) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) m->used++;
    m->keys[i] = k + 1;
    m->vals[i] = v;
}

static void map_del(map *m, uint64_t k)
{
    if (!m->cap) return;
    size_t i = map_slot(m, k);
    while (m->keys[i] && m->keys[i] != k + 1) i = (i + 1) & (m->cap - 1);
    if (!m->keys[i]) return;
    m->keys[i] = 0;
    m->used--;
    for (size_t j = (i + 1) & (m->cap - 1); m->keys[j]; j = (j + 1) & (m->cap - 1)) {
        size_t want = map_slot(m, m->keys[j] - 1);
        /* move j back to i when its home is not in (i, j] */
        bool stays = i <= j ? (want > i && want <= j) : (want > i || want <= j);
        if (stays) continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->keys[j] = 0;
        i = j;
    }
}

static void map_free(map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- a pool: one array of elements of one type, freed indices reused ---- */
typedef struct pool {
    void *items; /* the owner keeps a typed view of it, refreshed after pool_take */
    uint32_t n, cap, *free, nfree;
} pool;

/* A zeroed element's index (items may move). */
static uint32_t pool_take(pool *p, size_t size)
{
    uint32_t i;
    if (p->nfree) i = p->free[--p->nfree];
    else {
        if (p->n == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 256;
            p->items = keel__xrealloc(p->items, p->cap * size);
            p->free = keel__xrealloc(p->free, p->cap * sizeof *p->free);
        }
        i = p->n++;
    }
    memset((unsigned char *)p->items + (size_t)i * size, 0, size);
    return i;
}

static void pool_give(pool *p, uint32_t i)
{
    p->free[p->nfree++] = i;
}

static void pool_free(pool *p)
{
    free(p->items);
    free(p->free);
    memset(p, 0, sizeof *p);
}

/* An uint8_t run of n bytes at the end of b (grown only when full). */
static inline uint8_t *put(keel__wire_buf *b, size_t n)
{
    if (b->len + n > b->cap) return keel__buf_grow(b, n);
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

/* ---- the synced kinds (a host's table; a client maps it onto its own registry) ---- */
typedef struct skind {
    keel_kind_id id;
    const char *key;
    int version;
    uint32_t hash, interval;
    int fields[KEEL__WIRE_MAX_SYNC];
    keel__wire_kind w;
    /* a host's, refreshed each tick: how each synced field is compared, and its place in the record */
    uint8_t how[KEEL__WIRE_MAX_SYNC];
    uint32_t off[KEEL__WIRE_MAX_SYNC], size[KEEL__WIRE_MAX_SYNC];
    uint64_t changes; /* its store's row changes when last walked (tcomp rows hold while it stays) */
    bool due;         /* its interval falls on this tick */
} skind;

enum { HOW_SKIP = 0, HOW_PLAIN, HOW_GET }; /* redeclared since / bytes of the record / keel_get on a write */

static bool kind_synced(const keel_kind_desc *kd)
{
    if (kd->sync_interval) return true;
    for (size_t i = 0; i < kd->field_count; i++)
        if (kd->fields[i].flags & KEEL_FIELD_SYNC) return true;
    return false;
}

/* Fills k from the registry's kind; false when it has more synced fields than the wire carries. */
static bool skind_fill(keel_kind_id id, skind *k)
{
    const keel_kind_desc *kd = keel_kind_describe(id);
    memset(k, 0, sizeof *k);
    k->id = id;
    k->key = kd->key;
    k->version = kd->version < 1 ? 1 : kd->version;
    k->interval = kd->sync_interval ? kd->sync_interval : 1;
    k->w.many = kd->multiplicity == KEEL_MANY;
    uint32_t h = keel__wire_hash(kd->key, 2166136261u);
    h = keel__wire_hash(k->w.many ? "many" : "one", h);
    for (size_t i = 0; i < kd->field_count; i++) {
        const keel_field_desc *f = &kd->fields[i];
        if (!(f->flags & KEEL_FIELD_SYNC)) continue;
        if (k->w.nsync == KEEL__WIRE_MAX_SYNC) return false;
        k->fields[k->w.nsync] = (int)i;
        k->w.types[k->w.nsync] = f->type;
        k->w.choices[k->w.nsync] = f->type == KEEL_T_ENUM ? (uint32_t)f->choice_count : 0;
        k->w.nsync++;
        h = keel__wire_hash(f->key, h);
        h = keel__wire_hash(keel_type_name(f->type), h);
        for (size_t c = 0; f->type == KEEL_T_ENUM && c < f->choice_count; c++)
            h = keel__wire_hash(f->choices[c], h);
    }
    k->hash = h;
    return true;
}

static void value_keep(keel_value *dst, const keel_value *src)
{
    if (dst->type == KEEL_T_STRING) free((char *)dst->as.s);
    *dst = *src;
    if (src->type == KEEL_T_STRING) dst->as.s = keel__strdup(src->as.s ? src->as.s : "");
}

/* ======================================================================
 * Host
 * ====================================================================== */

typedef struct tcomp {
    uint32_t ent;  /* tent index */
    uint32_t kind; /* skind index = connection-local kind id */
    uint32_t slot;
    uint32_t row; /* its storage row, while the world's structure and its store's rows stay */
    bool live;
    uint64_t last;  /* the newest of changed[] */
    uint64_t send_last; /* `last` when its kind's interval falls on this tick, else 0 */
    uint64_t older; /* the newest of changed[] among the fields not changed at `last` */
    uint64_t wide;  /* the 64-bit flag of each field's mask bits (bit 2i+1) */
    uint64_t serial, counter, born, seen;
    /* encoded once per change for every client: each field's value, then the delta body (kind,
     * slot, mask, values) of the fields changed at `last`: what a client holding `older` or later needs */
    uint8_t *enc;
    uint32_t enc_cap, body, body_len;
    /* one block, nsync of each (kept out of line: the per-client passes stride over tcomps) */
    uint32_t nsync;
    uint32_t *enc_off; /* nsync + 1 */
    uint64_t *changed; /* each field's last change tick */
    keel_value *vals;  /* each field's value as last seen */
} tcomp;

typedef struct tent {
    keel_entity e, parent;
    keel_uuid uuid;
    char *name;
    bool enabled, live;
    uint64_t meta_tick, born, seen;
    uint32_t *comps; /* tcomp indices */
    uint32_t ncomp, comp_cap;
    uint32_t pos_comp;     /* its core:transform tcomp + 1, 0 none */
    uint64_t comp_tick;    /* when it last gained a synced component */
    uint64_t cell;         /* its interest grid cell, when gridded */
    uint32_t cnext, cprev; /* the cell's list (tent index + 1, 0 none) */
    bool gridded;
} tent;

/* One tick's unreliable sends to a client: its packets first_seq.. and the components each held. */
typedef struct ringent {
    uint64_t tick, first_seq;
    uint32_t *comps; /* in send order */
    uint32_t n, cap;
    uint32_t *ends; /* ends[p]: past packet p's last component in comps */
    uint8_t *acked;
    uint32_t npk, pk_cap;
    bool used;
} ringent;

enum { C_HELLO = 0, C_KINDS, C_JOINED, C_REFUSED };

typedef struct hclient {
    ENetPeer *peer;
    char *name;
    int state;
    keel_entity focus;
    /* by tent index */
    uint32_t *lid; /* 0: the client does not hold it */
    uint64_t *meta_sent;
    uint32_t *parent_sent;
    /* by tcomp index */
    uint64_t *confirmed; /* 0: not added on the client */
    size_t ent_cap, comp_cap;
    /* by lid */
    uint32_t *ent_of_lid; /* tent index + 1 */
    uint32_t next_lid, lid_cap;
    uint32_t cursor;     /* the lid the next delta pass starts at (budget round robin) */
    uint64_t seq;        /* the last delta packet's sequence number */
    ringent ring[RING];  /* the last 32 ticks' sends */
    uint32_t head;       /* the newest ring entry */
    uint32_t unacked;    /* ticks sent since the client last acked anything */
    keel__wire_buf pend; /* the reliable packet being filled */
    size_t pend_head;    /* its header's length */
    size_t spent;        /* bytes this tick */
    uint64_t struct_done; /* the tick of its last structure pass that held nothing back */
    /* its held (local id, component) pairs in ascending ids, for the delta pass: rebuilt when the
     * host's entities or components changed (shape) or this client's ids did (lid_gen) */
    uint32_t *held;
    uint32_t nheld, held_cap, lid_gen, held_gen;
    uint64_t held_shape;
    bool held_ok;
    bool held_back;       /* this pass left a spawn for later (the budget) */
} hclient;

struct keel_net_host {
    keel_world *w;
    ENetHost *enet;
    keel_net_host_opts o;
    skind *kinds;
    uint32_t nkinds;
    uint32_t *kind_of; /* by kind id: skind index + 1 */
    size_t kind_of_cap;
    keel_kind_id transform;
    uint64_t tick;
    double due; /* world seconds stepped since the last network tick */
    pool entp, compp;
    tent *ents;   /* entp's items */
    tcomp *comps; /* compp's items */
    uint64_t structure;   /* the world's structure when last walked */
    uint64_t struct_tick; /* the last tick an entity came, went, or changed name, flags or parent */
    uint64_t shape;       /* counts full walks (the only place entities and components come and go) */
    keel__wire_buf scratch, scratch2;
    map by_entity;
    map cells;       /* interest grid (radius > 0): cell key -> first tent + 1 */
    uint32_t *order; /* tents in run order this tick */
    uint32_t norder, order_cap;
    hclient **clients;
    uint32_t nclients;
    /* loss shim */
    double drop, dup, reorder;
    uint32_t rng;
    ENetPacket *held;
    ENetPeer *held_peer;
    keel__net_stats stats;
    char *kinds_key;
};

static int enet_users;
static bool net_up(void)
{
    if (enet_users == 0 && enet_initialize() != 0) return false;
    enet_users++;
    return true;
}
static void net_down(void)
{
    if (--enet_users == 0) enet_deinitialize();
}

/* Tells every peer still there goodbye now, and closes the socket. */
static void net_close(ENetHost *eh)
{
    for (size_t i = 0; i < eh->peerCount; i++)
        if (eh->peers[i].state != ENET_PEER_STATE_DISCONNECTED) enet_peer_disconnect_now(&eh->peers[i], 0);
    enet_host_flush(eh);
    enet_host_destroy(eh);
    net_down();
}

static void send_packet(keel_net_host *h, hclient *c, int ch, const uint8_t *p, size_t n)
{
    ENetPacket *pk = enet_packet_create(p, n, ch == CH_RELIABLE ? ENET_PACKET_FLAG_RELIABLE : 0);
    if (!pk) return;
    h->stats.bytes += n;
    h->stats.packets++;
    c->spent += n;
    if (ch == CH_DELTA && (h->drop > 0 || h->dup > 0 || h->reorder > 0)) {
        /* the loss shim: an xorshift draw per packet */
        h->rng ^= h->rng << 13;
        h->rng ^= h->rng >> 17;
        h->rng ^= h->rng << 5;
        double x = (h->rng & 0xffffff) / (double)0x1000000;
        if (x < h->drop) {
            enet_packet_destroy(pk);
            return;
        }
        if (x < h->drop + h->reorder && !h->held) { /* sent after the next one */
            h->held = pk;
            h->held_peer = c->peer;
            return;
        }
        if (x < h->drop + h->reorder + h->dup) {
            ENetPacket *again = enet_packet_create(p, n, 0);
            if (again) enet_peer_send(c->peer, CH_DELTA, again);
        }
        enet_peer_send(c->peer, CH_DELTA, pk);
        if (h->held) {
            if (h->held_peer == c->peer) enet_peer_send(c->peer, CH_DELTA, h->held);
            else enet_packet_destroy(h->held);
            h->held = NULL;
        }
        return;
    }
    enet_peer_send(c->peer, (enet_uint8)ch, pk);
}

static void state_flush(keel_net_host *h, hclient *c)
{
    if (c->pend.len > c->pend_head) send_packet(h, c, CH_RELIABLE, c->pend.p, c->pend.len);
    c->pend.len = 0;
}

static void state_head(keel_net_host *h, hclient *c)
{
    if (c->pend.len) return;
    keel__wire_u8(&c->pend, KEEL__PK_STATE);
    keel__wire_varint(&c->pend, h->tick);
    c->pend_head = c->pend.len;
}

/* Appends the record in rec to the client's reliable packet, starting a new one past the MTU. */
static void state_add(keel_net_host *h, hclient *c, keel__wire_buf *rec)
{
    state_head(h, c);
    if (c->pend.len + rec->len > KEEL__WIRE_MTU && c->pend.len > c->pend_head) {
        state_flush(h, c);
        state_head(h, c);
    }
    keel__wire_bytes(&c->pend, rec->p, rec->len);
    rec->len = 0;
}

static void grow_client(keel_net_host *h, hclient *c)
{
    size_t ents = h->entp.cap, comps = h->compp.cap;
    if (c->ent_cap < ents) {
        c->lid = keel__xrealloc(c->lid, ents * sizeof *c->lid);
        c->meta_sent = keel__xrealloc(c->meta_sent, ents * sizeof *c->meta_sent);
        c->parent_sent = keel__xrealloc(c->parent_sent, ents * sizeof *c->parent_sent);
        for (size_t i = c->ent_cap; i < ents; i++) c->lid[i] = 0, c->meta_sent[i] = 0, c->parent_sent[i] = 0;
        c->ent_cap = ents;
    }
    if (c->comp_cap < comps) {
        c->confirmed = keel__xrealloc(c->confirmed, comps * sizeof *c->confirmed);
        for (size_t i = c->comp_cap; i < comps; i++) c->confirmed[i] = 0;
        c->comp_cap = comps;
    }
}

static void client_forget_ent(hclient *c, uint32_t ti)
{
    if (ti < c->ent_cap && c->lid[ti]) {
        c->ent_of_lid[c->lid[ti]] = 0;
        c->lid[ti] = 0;
        c->lid_gen++;
        c->meta_sent[ti] = 0;
        c->parent_sent[ti] = 0;
    }
}

static void client_free(hclient *c)
{
    free(c->name);
    free(c->lid);
    free(c->held);
    free(c->meta_sent);
    free(c->parent_sent);
    free(c->confirmed);
    free(c->ent_of_lid);
    for (int i = 0; i < RING; i++) {
        free(c->ring[i].comps);
        free(c->ring[i].ends);
        free(c->ring[i].acked);
    }
    keel__wire_buf_free(&c->pend);
    free(c);
}

static void tcomp_fini(tcomp *tc)
{
    for (uint32_t f = 0; f < tc->nsync; f++)
        if (tc->vals[f].type == KEEL_T_STRING) free((char *)tc->vals[f].as.s);
    free(tc->enc);
    free(tc->changed);
}

static void tcomp_free(keel_net_host *h, uint32_t i)
{
    tcomp *tc = &h->comps[i];
    tcomp_fini(tc);
    memset(tc, 0, sizeof *tc);
    for (uint32_t k = 0; k < h->nclients; k++)
        if (i < h->clients[k]->comp_cap) h->clients[k]->confirmed[i] = 0;
    pool_give(&h->compp, i);
}

static void grid_unlink(keel_net_host *h, uint32_t ti);

/* An entity gone (or its tracking dropped): each client holding it gets a removal. */
static void tent_free(keel_net_host *h, uint32_t ti)
{
    tent *t = &h->ents[ti];
    keel__wire_buf rec = { 0 };
    for (uint32_t k = 0; k < h->nclients; k++) {
        hclient *c = h->clients[k];
        if (ti < c->ent_cap && c->lid[ti]) {
            keel__wire_u8(&rec, KEEL__REC_REMOVE);
            keel__wire_varint(&rec, c->lid[ti]);
            state_add(h, c, &rec);
            client_forget_ent(c, ti);
        }
    }
    keel__wire_buf_free(&rec);
    grid_unlink(h, ti);
    for (uint32_t j = 0; j < t->ncomp; j++) tcomp_free(h, t->comps[j]);
    map_del(&h->by_entity, t->e);
    free(t->name);
    free(t->comps);
    memset(t, 0, sizeof *t);
    pool_give(&h->entp, ti);
}

static void tent_add_comp(tent *t, uint32_t ci)
{
    if (t->ncomp == t->comp_cap) {
        t->comp_cap = t->comp_cap ? t->comp_cap * 2 : 4;
        t->comps = keel__xrealloc(t->comps, t->comp_cap * sizeof *t->comps);
    }
    t->comps[t->ncomp++] = ci;
}

/* The bytes of a plain value of type t inside a keel_value (what the record holds at the field). */
static void *value_bytes(keel_value *v, keel_type t)
{
    return t == KEEL_T_BOOL                     ? (void *)&v->as.b
        : t == KEEL_T_INT || t == KEEL_T_ENUM ? (void *)&v->as.i
        : t == KEEL_T_FLOAT                   ? (void *)&v->as.f
                                              : (void *)v->as.v;
}

/* Each synced kind's fields as the registry lays them out now (a kind redeclared since the host
 * started keeps only the fields of the same type), and whether its interval falls on this tick. */
static void kinds_refresh(keel_net_host *h)
{
    for (uint32_t i = 0; i < h->nkinds; i++) {
        skind *k = &h->kinds[i];
        const keel_kind_desc *kd = keel_kind_describe(k->id);
        k->due = h->tick % k->interval == 0;
        for (uint32_t f = 0; f < k->w.nsync; f++) {
            keel_type ty = k->w.types[f];
            int fi = k->fields[f];
            k->how[f] = HOW_SKIP;
            if (!kd || (size_t)fi >= kd->field_count || kd->fields[fi].type != ty) continue;
            if (ty == KEEL_T_STRING || ty == KEEL_T_ASSET || ty == KEEL_T_ENTITY) {
                k->how[f] = HOW_GET;
                continue;
            }
            k->how[f] = HOW_PLAIN;
            k->off[f] = (uint32_t)keel_kind_field_offset(k->id, fi);
            k->size[f] = ty == KEEL_T_BOOL                                      ? (uint32_t)sizeof(bool)
                : ty == KEEL_T_FLOAT || ty == KEEL_T_INT || ty == KEEL_T_ENUM ? 8u
                                                                              : 8u * (uint32_t)keel_type_width(ty);
        }
    }
}

static uint64_t store_changes(const keel_world *w, keel_kind_id id)
{
    return id < w->store_count ? w->stores[id].changes : 0;
}

/* Each field's value encoded again (the first time, or when one changed its encoded length). */
static void comp_encode_all(keel_net_host *h, tcomp *tc, const skind *k)
{
    keel__wire_buf *v = &h->scratch;
    v->len = 0;
    tc->wide = 0;
    for (uint32_t f = 0; f < k->w.nsync; f++) {
        tc->enc_off[f] = (uint32_t)v->len;
        bool wide = keel__wire_needs_wide(k->w.types[f], &tc->vals[f]);
        if (wide) tc->wide |= 2ull << (2 * f);
        keel__wire_value(v, k->w.types[f], &tc->vals[f], wide);
    }
    tc->enc_off[k->w.nsync] = (uint32_t)v->len;
    if (v->len > tc->enc_cap) {
        tc->enc_cap = (uint32_t)v->len;
        tc->enc = keel__xrealloc(tc->enc, tc->enc_cap);
    }
    memcpy(tc->enc, v->p, v->len);
}

/* memcpy of a float value's few bytes, constant lengths for the compiler to inline. */
static inline void copy_small(uint8_t *dst, const uint8_t *src, size_t n)
{
    switch (n) {
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    case 12: memcpy(dst, src, 12); break;
    case 16: memcpy(dst, src, 16); break;
    case 24: memcpy(dst, src, 24); break;
    case 32: memcpy(dst, src, 32); break;
    default: memcpy(dst, src, n); break;
    }
}

/* Encodes a component that changed this tick, once for every client: the values of the fields
 * changed now (in place), then the delta body of those fields after every field's value. */
static void comp_encode(keel_net_host *h, tcomp *tc, const skind *k)
{
    uint64_t now = 0; /* bit 2f: field f changed now */
    bool again = !tc->enc;
    tc->older = 0;
    tc->last = h->tick;
    for (uint32_t f = 0; f < k->w.nsync; f++) {
        if (tc->changed[f] != h->tick) {
            if (tc->changed[f] > tc->older) tc->older = tc->changed[f];
            continue;
        }
        now |= 1ull << (2 * f);
        if (again) continue;
        uint8_t tmp[32];
        bool wide = false;
        const uint8_t *src = tmp;
        size_t n = keel__wire_float_value(tmp, k->w.types[f], &tc->vals[f], &wide);
        if (!n) {
            keel__wire_buf *v = &h->scratch;
            v->len = 0;
            keel__wire_value(v, k->w.types[f], &tc->vals[f], false);
            src = v->p;
            n = v->len;
        }
        if (n != tc->enc_off[f + 1] - tc->enc_off[f]) again = true; /* its length changed */
        else {
            copy_small(tc->enc + tc->enc_off[f], src, n);
            tc->wide = (tc->wide & ~(2ull << (2 * f))) | (wide ? 2ull << (2 * f) : 0);
        }
    }
    if (again) comp_encode_all(h, tc, k);
    uint8_t head[BODY_COPY];
    size_t hl = keel__wire_varint_to(head, tc->kind);
    if (k->w.many) hl += keel__wire_varint_to(head + hl, tc->slot);
    hl += keel__wire_varint_to(head + hl, now | (tc->wide & now << 1));
    size_t at = tc->enc_off[k->w.nsync], len = hl;
    for (uint64_t m = now; m; m &= m - 1) {
        unsigned f = (unsigned)__builtin_ctzll(m) / 2;
        len += tc->enc_off[f + 1] - tc->enc_off[f];
    }
    if (at + len + BODY_COPY > tc->enc_cap) {
        tc->enc_cap = (uint32_t)(at + len + BODY_COPY);
        tc->enc = keel__xrealloc(tc->enc, tc->enc_cap);
    }
    tc->body = (uint32_t)at;
    tc->body_len = (uint32_t)len;
    /* fixed-size copies into the body (enc has BODY_COPY of slack past it, and each copy's tail
     * is overwritten by the next); a field's value longer than that is copied as it is */
    memcpy(tc->enc + at, head, BODY_COPY);
    at += hl;
    for (uint64_t m = now; m; m &= m - 1) {
        unsigned f = (unsigned)__builtin_ctzll(m) / 2;
        uint32_t sz = tc->enc_off[f + 1] - tc->enc_off[f];
        if (sz <= BODY_COPY) {
            uint8_t t[BODY_COPY];
            memcpy(t, tc->enc + tc->enc_off[f], BODY_COPY);
            memcpy(tc->enc + at, t, BODY_COPY);
        } else memcpy(tc->enc + at, tc->enc + tc->enc_off[f], sz);
        at += sz;
    }
}

/* memcmp's answer for the few bytes of a plain value (8-byte words but for a bool); the common
 * widths get loops of a constant length, which the compiler unrolls. */
static inline __attribute__((always_inline)) bool same_words(const unsigned char *p, const unsigned char *q, size_t n)
{
    uint64_t d = 0;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x, y;
        memcpy(&x, p + i, 8);
        memcpy(&y, q + i, 8);
        d |= x ^ y;
    }
    return d == 0;
}

static inline bool same_bytes(const void *a, const void *b, size_t n)
{
    switch (n) {
    case 8: return same_words(a, b, 8);
    case 16: return same_words(a, b, 16);
    case 24: return same_words(a, b, 24);
    case 32: return same_words(a, b, 32);
    default: break;
    }
    if (n % 8) return memcmp(a, b, n) == 0;
    return same_words(a, b, n);
}

static inline __attribute__((always_inline)) void copy_words(unsigned char *dst, const unsigned char *src, size_t n)
{
    for (size_t i = 0; i < n; i += 8) memcpy(dst + i, src + i, 8);
}

static inline void copy_bytes(void *dst, const void *src, size_t n)
{
    switch (n) {
    case 8: copy_words(dst, src, 8); return;
    case 16: copy_words(dst, src, 16); return;
    case 24: copy_words(dst, src, 24); return;
    case 32: copy_words(dst, src, 32); return;
    default: break;
    }
    if (n % 8) {
        memcpy(dst, src, n);
        return;
    }
    copy_words(dst, src, n);
}

/* Compares a component's synced fields with what was last seen: plain values with the record
 * itself every tick (a C hook or system may write its record directly, past the write counter),
 * strings and references when the counter moved (they change only through the write path). */
static void comp_look(keel_net_host *h, tcomp *tc, const skind *k, keel_entity e)
{
    const keel__store *s = &h->w->stores[k->id];
    const unsigned char *rec = keel__store_rec(s, tc->row);
    uint64_t counter = keel__row_counter(s, tc->row);
    bool counted = tc->counter != counter;
    tc->counter = counter;
    bool dirty = false;
    for (uint32_t f = 0; f < k->w.nsync; f++) {
        keel_type ty = k->w.types[f];
        keel_value *sh = &tc->vals[f];
        if (k->how[f] == HOW_PLAIN) {
            void *dst = value_bytes(sh, ty);
            if (tc->changed[f] && same_bytes(rec + k->off[f], dst, k->size[f])) continue;
            copy_bytes(dst, rec + k->off[f], k->size[f]);
            sh->type = ty;
        } else if (k->how[f] == HOW_GET && counted) {
            keel_value v;
            keel_comp comp = { e, k->id, tc->slot };
            if (keel_get(h->w, comp, k->fields[f], &v, NULL) != KEEL_OK || v.type != ty) continue;
            if (tc->changed[f] && keel__value_equal(sh, &v)) continue;
            value_keep(sh, &v);
        } else continue;
        tc->changed[f] = h->tick;
        dirty = true;
    }
    if (dirty) comp_encode(h, tc, k);
    tc->send_last = k->due ? tc->last : 0;
}

/* One component of a live entity in a walk: found by its serial, or new (every field changed). */
static void scan_comp(keel_net_host *h, uint32_t ti, const keel_member *mb, uint32_t sk)
{
    tent *t = &h->ents[ti];
    tcomp *tc = NULL;
    for (uint32_t j = 0; j < t->ncomp && !tc; j++)
        if (h->comps[t->comps[j]].serial == mb->serial) tc = &h->comps[t->comps[j]];
    const skind *k = &h->kinds[sk];
    if (!tc) {
        uint32_t ci = pool_take(&h->compp, sizeof *h->comps);
        h->comps = h->compp.items;
        tc = &h->comps[ci];
        tc->ent = ti;
        tc->kind = sk;
        tc->slot = mb->slot;
        tc->serial = mb->serial;
        tc->born = h->tick;
        tc->live = true;
        tc->counter = mb->counter - 1; /* read below: every field counts as changed */
        tc->nsync = k->w.nsync;
        size_t n = tc->nsync ? tc->nsync : 1;
        unsigned char *blk = keel__xcalloc(
            1, n * (sizeof *tc->changed + sizeof *tc->vals) + (n + 1) * sizeof *tc->enc_off);
        tc->changed = (uint64_t *)blk;
        tc->vals = (keel_value *)(blk + n * sizeof *tc->changed);
        tc->enc_off = (uint32_t *)(blk + n * (sizeof *tc->changed + sizeof *tc->vals));
        for (uint32_t f = 0; f < k->w.nsync; f++) tc->vals[f].type = k->w.types[f];
        tent_add_comp(t, ci);
        t->comp_tick = h->tick;
        if (mb->kind == h->transform) t->pos_comp = ci + 1;
    }
    tc->seen = h->tick;
    keel_comp comp = { t->e, mb->kind, mb->slot };
    tc->row = keel__comp_entry(h->w, comp)->row;
    comp_look(h, tc, k, t->e);
}

/* ---- the interest grid: cells of the radius's size, an entity listed in the one its position
 * falls in (entities with no position in one cell of their own kind): a client's candidates
 * are the 27 cells around its focus, not every entity ---- */
#define CELL_NOWHERE UINT64_MAX
#define CELL_BIAS (1 << 20)

static uint64_t cell_of(const keel_net_host *h, const tent *t)
{
    if (!t->pos_comp) return CELL_NOWHERE;
    const double *p = h->comps[t->pos_comp - 1].vals[0].as.v;
    uint64_t key = 0;
    for (int i = 0; i < 3; i++) {
        double q = floor(p[i] / h->o.interest_radius);
        if (!(q > -CELL_BIAS)) q = -CELL_BIAS; /* far away (or NaN): the edge cells */
        if (q > CELL_BIAS - 1) q = CELL_BIAS - 1;
        key = key << 21 | (uint64_t)((int64_t)q + CELL_BIAS);
    }
    return key;
}

static void grid_unlink(keel_net_host *h, uint32_t ti)
{
    tent *t = &h->ents[ti];
    if (!t->gridded) return;
    if (t->cprev) h->ents[t->cprev - 1].cnext = t->cnext;
    else if (t->cnext) map_put(&h->cells, t->cell, t->cnext);
    else map_del(&h->cells, t->cell);
    if (t->cnext) h->ents[t->cnext - 1].cprev = t->cprev;
    t->gridded = false;
    t->cnext = t->cprev = 0;
}

/* Keeps t in the cell its position is in now (moves only when it changed cell). */
static void grid_place(keel_net_host *h, uint32_t ti)
{
    tent *t = &h->ents[ti];
    uint64_t cell = cell_of(h, t);
    if (t->gridded && t->cell == cell) return;
    grid_unlink(h, ti);
    uint32_t head = 0;
    map_get(&h->cells, cell, &head);
    t->cell = cell;
    t->cprev = 0;
    t->cnext = head;
    if (head) h->ents[head - 1].cprev = ti + 1;
    map_put(&h->cells, cell, ti + 1);
    t->gridded = true;
}

/* Name and enabled flag as the world has them now; true when they changed. */
static bool meta_look(tent *t, const char *name, bool enabled)
{
    if (!name) name = "";
    if (t->meta_tick && enabled == t->enabled && !strcmp(name, t->name ? t->name : "")) return false;
    free(t->name);
    t->name = keel__strdup(name);
    t->enabled = enabled;
    return true;
}

/* The whole walk: what lives, what came, what changed, what went (any structural change). */
static void scan_full(keel_net_host *h)
{
    keel_world *w = h->w;
    h->norder = 0;
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) {
        uint32_t ti;
        if (!map_get(&h->by_entity, e, &ti)) {
            ti = pool_take(&h->entp, sizeof *h->ents);
            h->ents = h->entp.items;
            tent *t = &h->ents[ti];
            t->e = e;
            t->uuid = keel_entity_uuid(w, e);
            t->born = h->tick;
            t->live = true;
            map_put(&h->by_entity, e, ti);
        }
        tent *t = &h->ents[ti];
        t->seen = h->tick;
        keel_entity parent = keel_entity_parent(w, e);
        bool meta = meta_look(t, keel_entity_name(w, e), keel_entity_enabled(w, e));
        if (meta || parent != t->parent) {
            t->parent = parent;
            t->meta_tick = h->tick;
        }
        size_t nm = keel_member_count(w, e);
        for (size_t i = 0; i < nm; i++) {
            keel_member mb;
            if (!keel_member_at(w, e, i, &mb) || !mb.loaded || mb.kind >= h->kind_of_cap || !h->kind_of[mb.kind])
                continue;
            scan_comp(h, ti, &mb, h->kind_of[mb.kind] - 1);
        }
        t = &h->ents[ti];
        /* components gone (removed, or re-added under a new serial) */
        for (uint32_t j = 0; j < t->ncomp;) {
            uint32_t ci = t->comps[j];
            if (h->comps[ci].seen == h->tick) {
                j++;
                continue;
            }
            keel__wire_buf rec = { 0 };
            for (uint32_t k = 0; k < h->nclients; k++) {
                hclient *c = h->clients[k];
                if (ci < c->comp_cap && c->confirmed[ci] && c->lid[ti]) {
                    keel__wire_u8(&rec, KEEL__REC_DROP);
                    keel__wire_varint(&rec, c->lid[ti]);
                    keel__wire_varint(&rec, h->comps[ci].kind);
                    keel__wire_varint(&rec, h->comps[ci].slot);
                    state_add(h, c, &rec);
                }
            }
            keel__wire_buf_free(&rec);
            if (t->pos_comp == ci + 1) t->pos_comp = 0;
            tcomp_free(h, ci);
            t->comps[j] = t->comps[--t->ncomp];
        }
        if (h->norder == h->order_cap) {
            h->order_cap = h->order_cap ? h->order_cap * 2 : 256;
            h->order = keel__xrealloc(h->order, h->order_cap * sizeof *h->order);
        }
        h->order[h->norder++] = ti;
        if (h->o.interest_radius > 0) grid_place(h, ti);
    }
    for (uint32_t ti = 0; ti < h->entp.n; ti++)
        if (h->ents[ti].live && h->ents[ti].seen != h->tick) tent_free(h, ti);
}

/* No structural change since the last walk: the same entities and components in the same rows
 * (parents move only structurally), so only names, enabled flags and field values can differ. */
static void scan_quick(keel_net_host *h)
{
    for (uint32_t n = 0; n < h->norder; n++) {
        uint32_t ti = h->order[n];
        tent *t = &h->ents[ti];
        t->seen = h->tick;
        if (meta_look(t, keel_entity_name(h->w, t->e), keel_entity_enabled(h->w, t->e)))
            t->meta_tick = h->struct_tick = h->tick;
        for (uint32_t j = 0; j < t->ncomp; j++) {
            tcomp *tc = &h->comps[t->comps[j]];
            tc->seen = h->tick;
            comp_look(h, tc, &h->kinds[tc->kind], t->e);
        }
        if (h->o.interest_radius > 0) grid_place(h, ti);
    }
}

/* The tick's look at the world, once for every client. */
static void scan(keel_net_host *h)
{
    kinds_refresh(h);
    bool same = h->structure == h->w->structure;
    for (uint32_t i = 0; i < h->nkinds && same; i++) same = h->kinds[i].changes == store_changes(h->w, h->kinds[i].id);
    if (same) scan_quick(h);
    else {
        scan_full(h);
        h->struct_tick = h->tick;
        h->shape++;
    }
    h->structure = h->w->structure;
    for (uint32_t i = 0; i < h->nkinds; i++) h->kinds[i].changes = store_changes(h->w, h->kinds[i].id);
    for (uint32_t k = 0; k < h->nclients; k++) grow_client(h, h->clients[k]);
}

static bool in_interest(keel_net_host *h, hclient *c, const tent *t)
{
    if (h->o.interest_radius <= 0) return true;
    if (!t->pos_comp) return true; /* no place in the world: everywhere */
    uint32_t fi;
    if (!c->focus || !map_get(&h->by_entity, c->focus, &fi) || !h->ents[fi].pos_comp) return false;
    const double *a = h->comps[t->pos_comp - 1].vals[0].as.v, *b = h->comps[h->ents[fi].pos_comp - 1].vals[0].as.v;
    double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return dx * dx + dy * dy + dz * dz <= h->o.interest_radius * h->o.interest_radius;
}

/* mask + values of a component: every synced field when `all`, else those changed after
 * `since`; the values are the tick's encoding, shared by every client. */
static bool put_comp_values(keel_net_host *h, keel__wire_buf *b, const tcomp *tc, bool all, uint64_t since)
{
    uint32_t nsync = h->kinds[tc->kind].w.nsync;
    uint64_t mask = 0;
    if (all) mask = nsync >= 32 ? UINT64_MAX : ((1ull << (2 * nsync)) - 1);
    else if (tc->last <= since) return false;
    else
        for (uint32_t f = 0; f < nsync; f++)
            if (tc->changed[f] > since) mask |= 3ull << (2 * f);
    mask &= 0x5555555555555555ull | tc->wide;
    keel__wire_varint(b, mask);
    for (uint32_t f = 0; f < nsync;) {
        if (!(mask >> (2 * f) & 1)) {
            f++;
            continue;
        }
        uint32_t g = f + 1; /* a run of present fields: one copy */
        while (g < nsync && (mask >> (2 * g) & 1)) g++;
        keel__wire_bytes(b, tc->enc + tc->enc_off[f], tc->enc_off[g] - tc->enc_off[f]);
        f = g;
    }
    return true;
}

static void put_add(keel_net_host *h, hclient *c, keel__wire_buf *rec, uint32_t ti, uint32_t ci)
{
    const tcomp *tc = &h->comps[ci];
    keel__wire_u8(rec, KEEL__REC_ADD);
    keel__wire_varint(rec, c->lid[ti]);
    keel__wire_varint(rec, tc->kind);
    keel__wire_varint(rec, tc->slot);
    put_comp_values(h, rec, tc, true, 0);
    state_add(h, c, rec);
    c->confirmed[ci] = h->tick;
}

static uint32_t parent_lid(keel_net_host *h, hclient *c, const tent *t)
{
    uint32_t pi;
    if (!t->parent || !map_get(&h->by_entity, t->parent, &pi)) return 0;
    return c->lid[pi];
}

static void new_lid(hclient *c, uint32_t ti)
{
    uint32_t lid = ++c->next_lid;
    if (lid >= c->lid_cap) {
        uint32_t cap = c->lid_cap ? c->lid_cap * 2 : 256;
        while (cap <= lid) cap *= 2;
        c->ent_of_lid = keel__xrealloc(c->ent_of_lid, cap * sizeof *c->ent_of_lid);
        memset(c->ent_of_lid + c->lid_cap, 0, (cap - c->lid_cap) * sizeof *c->ent_of_lid);
        c->lid_cap = cap;
    }
    c->ent_of_lid[lid] = ti + 1;
    c->lid[ti] = lid;
    c->lid_gen++;
}

/* Reliable part: removals for interest exits, spawns (with every component), meta changes,
 * components added since. Spawns stop at the budget; the rest go next tick. */
static void structure_one(keel_net_host *h, hclient *c, uint32_t ti, keel__wire_buf *rec_)
{
    keel__wire_buf rec = *rec_;
    {
        tent *t = &h->ents[ti];
        bool want = in_interest(h, c, t);
        if (!c->lid[ti]) {
            if (!want) goto out;
            if (c->spent >= h->o.budget) {
                c->held_back = true;
                goto out;
            }
            new_lid(c, ti);
            uint32_t pl = parent_lid(h, c, t);
            keel__wire_u8(&rec, KEEL__REC_SPAWN);
            keel__wire_varint(&rec, c->lid[ti]);
            keel__wire_bytes(&rec, t->uuid.bytes, 16);
            keel__wire_varint(&rec, (uint32_t)(t->e >> 32));
            keel__wire_varint(&rec, pl ? pl + 1 : 0);
            keel__wire_u8(&rec, t->enabled ? 1 : 0);
            keel__wire_str(&rec, t->name);
            state_add(h, c, &rec);
            c->meta_sent[ti] = h->tick;
            c->parent_sent[ti] = pl;
            for (uint32_t j = 0; j < t->ncomp; j++) put_add(h, c, &rec, ti, t->comps[j]);
            goto out;
        }
        if (!want) {
            keel__wire_u8(&rec, KEEL__REC_REMOVE);
            keel__wire_varint(&rec, c->lid[ti]);
            state_add(h, c, &rec);
            for (uint32_t j = 0; j < t->ncomp; j++) c->confirmed[t->comps[j]] = 0;
            client_forget_ent(c, ti);
            goto out;
        }
        uint32_t pl = parent_lid(h, c, t);
        if (t->meta_tick > c->meta_sent[ti] || pl != c->parent_sent[ti]) {
            keel__wire_u8(&rec, KEEL__REC_META);
            keel__wire_varint(&rec, c->lid[ti]);
            keel__wire_varint(&rec, pl ? pl + 1 : 0);
            keel__wire_u8(&rec, t->enabled ? 1 : 0);
            keel__wire_str(&rec, t->name);
            state_add(h, c, &rec);
            c->meta_sent[ti] = h->tick;
            c->parent_sent[ti] = pl;
        }
        for (uint32_t j = 0; j < t->ncomp; j++)
            if (!c->confirmed[t->comps[j]]) put_add(h, c, &rec, ti, t->comps[j]);
        c->meta_sent[ti] = h->tick; /* everything of it is sent as of now */
    }
out:
    *rec_ = rec;
}

static void send_structure(keel_net_host *h, hclient *c)
{
    keel__wire_buf rec = { 0 };
    if (h->o.interest_radius <= 0) {
        /* nothing came, went or changed its name, flags or parent since a pass that sent all */
        if (c->struct_done >= h->struct_tick) return;
        c->held_back = false;
        for (uint32_t n = 0; n < h->norder; n++) {
            uint32_t ti = h->order[n];
            const tent *t = &h->ents[ti];
            /* held, and nothing of its structure changed since: nothing to send */
            if (c->lid[ti] && !t->parent && c->meta_sent[ti] >= t->meta_tick && c->meta_sent[ti] >= t->comp_tick)
                continue;
            structure_one(h, c, ti, &rec);
        }
        if (!c->held_back) c->struct_done = h->tick;
    } else {
        /* what it holds (leaving, changing), then the candidates around its focus */
        for (uint32_t lid = 1; lid <= c->next_lid && lid < c->lid_cap; lid++)
            if (c->ent_of_lid[lid]) structure_one(h, c, c->ent_of_lid[lid] - 1, &rec);
        uint32_t head = 0, fi;
        if (map_get(&h->cells, CELL_NOWHERE, &head))
            for (uint32_t i = head; i; i = h->ents[i - 1].cnext)
                if (!c->lid[i - 1]) structure_one(h, c, i - 1, &rec);
        if (c->focus && map_get(&h->by_entity, c->focus, &fi) && h->ents[fi].pos_comp) {
            uint64_t fc = cell_of(h, &h->ents[fi]);
            int64_t base[3] = { (int64_t)(fc >> 42 & 0x1fffff), (int64_t)(fc >> 21 & 0x1fffff),
                                (int64_t)(fc & 0x1fffff) };
            for (int dx = -1; dx <= 1; dx++)
                for (int dy = -1; dy <= 1; dy++)
                    for (int dz = -1; dz <= 1; dz++) {
                        int64_t q[3] = { base[0] + dx, base[1] + dy, base[2] + dz };
                        if (q[0] < 0 || q[1] < 0 || q[2] < 0 || q[0] >= 2 * CELL_BIAS || q[1] >= 2 * CELL_BIAS ||
                            q[2] >= 2 * CELL_BIAS)
                            continue;
                        uint64_t key = (uint64_t)q[0] << 42 | (uint64_t)q[1] << 21 | (uint64_t)q[2];
                        if (!map_get(&h->cells, key, &head)) continue;
                        for (uint32_t i = head; i; i = h->ents[i - 1].cnext)
                            if (!c->lid[i - 1]) structure_one(h, c, i - 1, &rec);
                    }
        }
    }
    keel__wire_buf_free(&rec);
}

/* The client stopped acking: every component it holds again, reliably, at this tick. */
static void resnapshot(keel_net_host *h, hclient *c)
{
    keel__wire_buf rec = { 0 };
    for (uint32_t lid = 1; lid <= c->next_lid && lid < c->lid_cap; lid++) {
        if (!c->ent_of_lid[lid]) continue;
        uint32_t ti = c->ent_of_lid[lid] - 1;
        tent *t = &h->ents[ti];
        for (uint32_t j = 0; j < t->ncomp; j++)
            if (c->confirmed[t->comps[j]]) put_add(h, c, &rec, ti, t->comps[j]);
    }
    keel__wire_buf_free(&rec);
    for (int i = 0; i < RING; i++) c->ring[i].used = false;
    c->unacked = 0;
    h->stats.resnapshots++;
}

static ringent *delta_begin(keel_net_host *h, hclient *c, keel__wire_buf *pk)
{
    c->seq++;
    ringent *r = &c->ring[c->head];
    if (!r->used || r->tick != h->tick) { /* this tick's entry: the oldest one goes */
        c->head = (c->head + 1) % RING;
        r = &c->ring[c->head];
        r->used = true;
        r->tick = h->tick;
        r->first_seq = c->seq;
        r->n = 0;
        r->npk = 0;
        c->unacked++;
    }
    if (r->npk == r->pk_cap) {
        r->pk_cap = r->pk_cap ? r->pk_cap * 2 : 16;
        r->ends = keel__xrealloc(r->ends, r->pk_cap * sizeof *r->ends);
        r->acked = keel__xrealloc(r->acked, r->pk_cap);
    }
    r->ends[r->npk] = r->n;
    r->acked[r->npk] = 0;
    r->npk++;
    /* a packet holds at most one record per 3 bytes (gap, kind, mask) */
    if (r->cap < r->n + KEEL__WIRE_MTU / 3 + 1) {
        r->cap = r->n + KEEL__WIRE_MTU / 3 + 1 + r->cap;
        r->comps = keel__xrealloc(r->comps, r->cap * sizeof *r->comps);
    }
    pk->len = 0;
    keel__wire_u8(pk, KEEL__PK_DELTA);
    keel__wire_varint(pk, c->seq);
    keel__wire_varint(pk, h->tick);
    if (pk->cap < KEEL__WIRE_MTU + 16 + BODY_COPY) { /* room for the fixed-size copies */
        size_t len = pk->len;
        put(pk, KEEL__WIRE_MTU + 16 + BODY_COPY - len);
        pk->len = len;
    }
    return r;
}

/* A delta pass over one client: the packet being filled and the ring entry noting it. */
typedef struct dpass {
    keel__wire_buf *pk;
    ringent *r;
    uint32_t prev; /* the last id written in this packet */
    size_t header; /* the packet's header length; 0: no packet open */
} dpass;

/* Sends the open packet (if it holds records). */
static void delta_flush(keel_net_host *h, hclient *c, dpass *d)
{
    if (!d->r || !d->header) return;
    d->r->ends[d->r->npk - 1] = d->r->n;
    if (d->pk->len > d->header) send_packet(h, c, CH_DELTA, d->pk->p, d->pk->len);
    d->header = 0;
}

static void delta_open(keel_net_host *h, hclient *c, dpass *d)
{
    delta_flush(h, c, d);
    d->r = delta_begin(h, c, d->pk);
    d->header = d->pk->len;
    d->prev = 0;
}

/* The client's held pairs (ids 1..n), walked from the entity records only when they changed. */
static void held_refresh(keel_net_host *h, hclient *c, uint32_t n)
{
    if (c->held_ok && c->held_shape == h->shape && c->held_gen == c->lid_gen) return;
    c->nheld = 0;
    for (uint32_t lid = 1; lid <= n; lid++) {
        uint32_t te = c->ent_of_lid[lid];
        if (!te) continue;
        const tent *t = &h->ents[te - 1];
        if (c->nheld + t->ncomp > c->held_cap) {
            c->held_cap = (c->nheld + t->ncomp) * 2 + 64;
            c->held = keel__xrealloc(c->held, (size_t)c->held_cap * 2 * sizeof *c->held);
        }
        for (uint32_t j = 0; j < t->ncomp; j++) {
            c->held[2 * c->nheld] = lid;
            c->held[2 * c->nheld + 1] = t->comps[j];
            c->nheld++;
        }
    }
    c->held_ok = true;
    c->held_shape = h->shape;
    c->held_gen = c->lid_gen;
}

/* The first held pair whose id is at least lid. */
static uint32_t held_at(const hclient *c, uint32_t lid)
{
    uint32_t lo = 0, hi = c->nheld;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->held[2 * mid] < lid) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* One component's record in the general case (no packet open yet, a body of its own, a long
 * body or gap, or the packet full), on the pass's own state (d, its packet and ring entry). */
__attribute__((noinline)) static void delta_one(keel_net_host *h, hclient *c, dpass *d, uint32_t lid,
                                                const tcomp *tc, uint32_t ci, uint64_t since)
{
    keel__wire_buf *pk = d->pk, *rec = &h->scratch2;
    const uint8_t *body = tc->enc + tc->body;
    size_t blen = tc->body_len;
    if (since < tc->older) { /* it missed an earlier change too: a body of its own */
        rec->len = 0;
        keel__wire_varint(rec, tc->kind);
        if (h->kinds[tc->kind].w.many) keel__wire_varint(rec, tc->slot);
        put_comp_values(h, rec, tc, false, since);
        body = rec->p;
        blen = rec->len;
    }
    if (!d->header) delta_open(h, c, d);
    uint8_t gap[10];
    size_t glen = keel__wire_varint_to(gap, lid - d->prev);
    if (pk->len + glen + blen > KEEL__WIRE_MTU && pk->len > d->header) {
        delta_open(h, c, d);
        glen = keel__wire_varint_to(gap, lid); /* the gap is relative to the packet's first id */
    }
    uint8_t *at = put(pk, glen + blen);
    memcpy(at, gap, glen);
    memcpy(at + glen, body, blen);
    d->r->comps[d->r->n++] = ci;
    d->prev = lid;
}

/* Held pairs from..to-1 (ascending ids); false when the budget stopped it at the cursor.
 * The common record (a packet open, the body encoded at the change, a gap below 128, room left)
 * is written here with the pass's state in locals: the packet's bytes are written through a
 * byte pointer, which would otherwise make every load be done again per component. */
static bool delta_range(keel_net_host *h, hclient *c, dpass *d, uint32_t from, uint32_t to)
{
    keel__wire_buf *pk = d->pk;
    const uint32_t *held = c->held;
    const uint64_t *conf = c->confirmed;
    const tcomp *comps = h->comps;
    const size_t limit = h->o.budget > c->spent ? h->o.budget - c->spent : 0; /* the packet's length */
    uint8_t *base = pk->p;
    size_t len = pk->len;
    uint32_t *noted = d->r ? d->r->comps : NULL, n = d->r ? d->r->n : 0, prev = d->prev, checked = 0;
    bool open = d->header != 0;
    for (const uint32_t *p = held + 2 * (size_t)from, *end = held + 2 * (size_t)to; p < end; p += 2) {
        uint32_t lid = p[0], ci = p[1];
        if (lid != checked) { /* the budget is looked at per entity */
            checked = lid;
            if (len >= limit) {
                c->cursor = lid;
                pk->len = len;
                if (d->r) d->r->n = n;
                d->prev = prev;
                return false;
            }
        }
        const tcomp *tc = &comps[ci];
        uint64_t since = conf[ci];
        if (tc->send_last <= since || !since) continue;
        size_t blen = tc->body_len;
        uint32_t g = lid - prev;
        if (open && since >= tc->older && g < 0x80 && blen <= BODY_COPY && len + 1 + blen <= KEEL__WIRE_MTU) {
            /* fixed-size copies: an open packet has room past the MTU (delta_begin) and a body
             * is readable that far (BODY_COPY of slack); a gap below 128 is one varint byte */
            uint8_t *at = base + len;
            at[0] = (uint8_t)g;
            memcpy(at + 1, tc->enc + tc->body, BODY_COPY);
            len += 1 + blen;
            noted[n++] = ci;
            prev = lid;
            continue;
        }
        pk->len = len;
        if (d->r) d->r->n = n;
        d->prev = prev;
        delta_one(h, c, d, lid, tc, ci, since);
        base = pk->p, len = pk->len, noted = d->r->comps, n = d->r->n, prev = d->prev, open = true;
    }
    pk->len = len;
    if (d->r) d->r->n = n;
    d->prev = prev;
    return true;
}

/* Unreliable part: each held component's fields changed after what the client confirmed, in
 * ascending local ids from where the last tick's budget stopped (wrapping once). A client
 * holding what came before a component's latest change (the common case) gets the body encoded
 * at that change, copied; another gets its own. */
static void send_deltas(keel_net_host *h, hclient *c)
{
    if (c->unacked >= RING) { /* no ack for the whole ring: start over from a snapshot */
        resnapshot(h, c);
        return;
    }
    dpass d = { &h->scratch, NULL, 0, 0 };
    uint32_t n = !c->lid_cap ? 0 : c->next_lid < c->lid_cap ? c->next_lid : c->lid_cap - 1;
    uint32_t start = c->cursor && c->cursor <= n ? c->cursor : 1;
    held_refresh(h, c, n);
    uint32_t si = start > 1 ? held_at(c, start) : 0;
    if (n && delta_range(h, c, &d, si, c->nheld)) {
        delta_flush(h, c, &d); /* wrapped: ids must ascend within a packet */
        c->cursor = 1;
        if (start > 1) delta_range(h, c, &d, 0, si);
    }
    delta_flush(h, c, &d);
}

/* Delta packet `seq` arrived: the components it held are confirmed at its tick. The ring is
 * looked at from the newest entry back (acks are mostly for the last tick or two). */
static void on_ack(hclient *c, uint64_t seq)
{
    for (int k = 0; k < RING; k++) {
        ringent *r = &c->ring[(c->head + RING - (uint32_t)k) % RING];
        if (!r->used || seq < r->first_seq || seq - r->first_seq >= r->npk) continue;
        uint32_t p = (uint32_t)(seq - r->first_seq);
        if (r->acked[p]) return;
        r->acked[p] = 1;
        c->unacked = 0;
        /* A component freed since has confirmed 0 (tcomp_free), and one re-made under its index
         * was added at a later tick than the packet's: neither takes the ack. */
        uint64_t *conf = c->confirmed, tick = r->tick;
        const uint32_t *cs = r->comps;
        for (uint32_t j = p ? r->ends[p - 1] : 0, end = r->ends[p]; j < end; j++) {
            uint32_t ci = cs[j];
            uint64_t cf = conf[ci];
            if (cf && cf < tick) conf[ci] = tick;
        }
        return;
    }
}

static void send_kinds(keel_net_host *h, hclient *c)
{
    keel__wire_buf b = { 0 };
    uint32_t i = 0;
    do {
        b.len = 0;
        keel__wire_u8(&b, KEEL__PK_KINDS);
        keel__wire_varint(&b, KEEL__WIRE_PROTOCOL);
        size_t lastpos = b.len;
        keel__wire_u8(&b, 0);
        uint32_t n = 0;
        keel__wire_buf body = { 0 };
        for (; i < h->nkinds && body.len < KEEL__WIRE_MTU - 400; i++, n++) {
            const skind *k = &h->kinds[i];
            keel__wire_str(&body,
                           keel_kind_describe(k->id)->key); /* the registry's: a redeclaration frees the old */
            keel__wire_varint(&body, (uint64_t)k->version);
            keel__wire_u32(&body, k->hash);
            keel__wire_varint(&body, k->interval);
            keel__wire_u8(&body, k->w.many ? 1 : 0);
            keel__wire_varint(&body, k->w.nsync);
            for (uint32_t f = 0; f < k->w.nsync; f++) {
                keel__wire_u8(&body, (uint8_t)k->w.types[f]);
                if (k->w.types[f] == KEEL_T_ENUM) keel__wire_varint(&body, k->w.choices[f]);
            }
        }
        b.p[lastpos] = i == h->nkinds ? 1 : 0;
        keel__wire_varint(&b, n);
        keel__wire_bytes(&b, body.p, body.len);
        keel__wire_buf_free(&body);
        send_packet(h, c, CH_RELIABLE, b.p, b.len);
    } while (i < h->nkinds);
    keel__wire_buf_free(&b);
}

static void refuse(keel_net_host *h, hclient *c, const char *reason)
{
    keel__wire_buf b = { 0 };
    keel__wire_u8(&b, KEEL__PK_REFUSE);
    keel__wire_str(&b, reason);
    send_packet(h, c, CH_RELIABLE, b.p, b.len);
    keel__wire_buf_free(&b);
    c->state = C_REFUSED;
    enet_peer_disconnect_later(c->peer, 1);
}

static void host_receive(keel_net_host *h, hclient *c, ENetPacket *pk)
{
    keel__wire_msg m;
    char err[160];
    if (!keel__wire_decode(pk->data, pk->dataLength, NULL, &m, err, sizeof err)) {
        refuse(h, c, err);
        return;
    }
    switch (m.type) {
    case KEEL__PK_HELLO:
        if (c->state != C_HELLO) refuse(h, c, "a second hello");
        else if (m.protocol != KEEL__WIRE_PROTOCOL) {
            char why[96];
            snprintf(why, sizeof why, "protocol %u, the server speaks %d", (unsigned)m.protocol,
                     KEEL__WIRE_PROTOCOL);
            refuse(h, c, why);
        } else {
            free(c->name);
            c->name = keel__strdup(m.text && *m.text ? m.text : "client");
            c->state = C_KINDS;
            send_kinds(h, c);
        }
        break;
    case KEEL__PK_JOIN:
        if (c->state != C_KINDS) refuse(h, c, "join out of turn");
        else c->state = C_JOINED;
        break;
    case KEEL__PK_REFUSE: c->state = C_REFUSED; break; /* the client said why and leaves */
    case KEEL__PK_ACK:
        for (size_t i = 0; c->state == C_JOINED && i < m.nacks; i++) {
            uint64_t first = m.acks[2 * i], n = m.acks[2 * i + 1];
            if (first > c->seq || n > c->seq - first + 1) break; /* never sent: the rest is not believed */
            for (uint64_t s = first; s < first + n; s++) on_ack(c, s);
        }
        break;
    default: refuse(h, c, "a packet only a server sends");
    }
    keel__wire_msg_free(&m);
}

static hclient *client_of(keel_net_host *h, ENetPeer *p)
{
    for (uint32_t k = 0; k < h->nclients; k++)
        if (h->clients[k]->peer == p) return h->clients[k];
    return NULL;
}

static void client_drop(keel_net_host *h, ENetPeer *p)
{
    for (uint32_t k = 0; k < h->nclients; k++)
        if (h->clients[k]->peer == p) {
            client_free(h->clients[k]);
            h->clients[k] = h->clients[--h->nclients];
            return;
        }
}

static void host_pump(keel_net_host *h)
{
    ENetEvent ev;
    while (enet_host_service(h->enet, &ev, 0) > 0) {
        switch (ev.type) {
        case ENET_EVENT_TYPE_CONNECT: {
            /* ENet's own throttle drops unreliable packets when the round trip grows (a big
             * snapshot in flight): the budget paces sends here, and acks must keep coming */
            enet_peer_throttle_configure(ev.peer, ENET_PEER_PACKET_THROTTLE_INTERVAL,
                                         ENET_PEER_PACKET_THROTTLE_SCALE, 0);
            hclient *c = keel__xcalloc(1, sizeof *c);
            c->peer = ev.peer;
            c->name = keel__strdup("");
            h->clients = keel__xrealloc(h->clients, (h->nclients + 1) * sizeof *h->clients);
            h->clients[h->nclients++] = c;
            grow_client(h, c);
            break;
        }
        case ENET_EVENT_TYPE_RECEIVE: {
            hclient *c = client_of(h, ev.peer);
            if (c && c->state != C_REFUSED) { host_receive(h, c, ev.packet); }
            enet_packet_destroy(ev.packet);
            break;
        }
        case ENET_EVENT_TYPE_DISCONNECT: client_drop(h, ev.peer); break;
        default: break;
        }
    }
}

static void host_tick(keel_net_host *h);

/* A step adds its dt; a tick goes out once `tick` seconds have added up. A step longer than several
 * ticks sends one, not a burst: the next tick carries everything changed meanwhile anyway. */
static void host_step_hook(keel_world *w, void *user, double dt);
/* the world went before its host: the host serves nothing more */
static void host_world_gone(keel_world *w, void *user) { ((keel_net_host *)user)->w = NULL; }
static const keel__ext_type host_ext = { .name = "net host", .order = 40, .step_end = host_step_hook, .free = host_world_gone };
static void client_step_hook(keel_world *w, void *user, double dt);
static const keel__ext_type client_ext = { .name = "net client", .order = 40, .step_end = client_step_hook };

static void host_step_hook(keel_world *w, void *user, double dt)
{
    (void)w;
    keel_net_host *h = user;
    if (isfinite(dt) && dt > 0) h->due += dt;
    /* a small slack so that steps summing to `tick` in floating point (2 x 0.05 for 0.1) count as one */
    if (h->due + 1e-9 * h->o.tick < h->o.tick) {
        host_pump(h); /* keep hearing joins and acks between ticks */
        return;
    }
    h->due -= h->o.tick;
    if (h->due >= h->o.tick || h->due < 0) h->due = 0;
    host_tick(h);
}

keel_status keel_net_host_new(keel_world *w, const keel_net_host_opts *o, keel_net_host **out, keel_diags *d)
{
    *out = NULL;
    keel_net_host_opts opts = KEEL_NET_HOST_OPTS_INIT;
    if (o) opts = *o;
    if (!w) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no world to host");
    if (keel__ext_get(w, &client_ext))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "a client's mirror world cannot be hosted");
    if (keel__ext_get(w, &host_ext))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "world '%s' is hosted already", keel_world_name(w));
    if (opts.max_clients < 1 || opts.max_clients > 4095)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "max_clients", "max_clients must be in 1..4095, got %u",
                          (unsigned)opts.max_clients);
    if (!isfinite(opts.interest_radius) || opts.interest_radius < 0)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "interest", "interest radius must be a finite number >= 0");
    if (!isfinite(opts.tick) || !(opts.tick > 0))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "tick", "tick must be a positive number of seconds");
    if (opts.budget < KEEL__WIRE_MTU)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "budget", "budget must be at least %d bytes a tick",
                          KEEL__WIRE_MTU);
    if (!net_up()) return KEEL_ERROR(d, KEEL_IO_ERROR, "", "ENet failed to start");
    ENetAddress a;
    a.host = ENET_HOST_ANY;
    a.port = opts.port;
    if (opts.bind && enet_address_set_host(&a, opts.bind) != 0) {
        net_down();
        return KEEL_ERROR(d, KEEL_IO_ERROR, "bind", "cannot resolve '%s'", opts.bind);
    }
    ENetHost *eh = enet_host_create(&a, opts.max_clients, 2, 0, 0);
    if (!eh) {
        net_down();
        return KEEL_ERROR(d, KEEL_IO_ERROR, "port", "cannot listen on UDP port %u (in use?)", (unsigned)opts.port);
    }
    keel_net_host *h = keel__xcalloc(1, sizeof *h);
    h->w = w;
    h->enet = eh;
    h->o = opts;
    h->rng = 2463534242u;
    h->structure = UINT64_MAX; /* the first tick walks */
    h->transform = keel_kind_find("core:transform");
    size_t nk = keel_kind_count();
    h->kinds = keel__xcalloc(nk ? nk : 1, sizeof *h->kinds);
    for (size_t i = 0; i < nk; i++) {
        keel_kind_id id = keel_kind_at(i);
        const keel_kind_desc *kd = keel_kind_describe(id);
        if (!kd || !kind_synced(kd)) continue;
        if (!skind_fill(id, &h->kinds[h->nkinds])) {
            keel_net_host_free(h);
            return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, kd->key, "%s syncs more than %d fields", kd->key,
                              KEEL__WIRE_MAX_SYNC);
        }
        if (id >= h->kind_of_cap) {
            size_t cap = (size_t)id + 64;
            h->kind_of = keel__xrealloc(h->kind_of, cap * sizeof *h->kind_of);
            memset(h->kind_of + h->kind_of_cap, 0, (cap - h->kind_of_cap) * sizeof *h->kind_of);
            h->kind_of_cap = cap;
        }
        h->kind_of[id] = ++h->nkinds;
    }
    keel__ext_add(w, &host_ext, h);
    *out = h;
    return KEEL_OK;
}

void keel_net_host_free(keel_net_host *h)
{
    if (!h) return;
    if (h->w && keel__ext_get(h->w, &host_ext) == h) keel__ext_remove(h->w, &host_ext);
    if (h->held) enet_packet_destroy(h->held);
    if (h->enet) net_close(h->enet);
    for (uint32_t k = 0; k < h->nclients; k++) client_free(h->clients[k]);
    free(h->clients);
    for (uint32_t i = 0; i < h->entp.n; i++)
        if (h->ents[i].live) {
            free(h->ents[i].name);
            free(h->ents[i].comps);
        }
    for (uint32_t i = 0; i < h->compp.n; i++) tcomp_fini(&h->comps[i]);
    pool_free(&h->entp);
    pool_free(&h->compp);
    keel__wire_buf_free(&h->scratch);
    keel__wire_buf_free(&h->scratch2);
    free(h->order);
    free(h->kinds);
    free(h->kind_of);
    map_free(&h->by_entity);
    map_free(&h->cells);
    free(h);
}

keel_status keel_net_host_service(keel_net_host *h, keel_diags *d)
{
    if (!h) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no host");
    h->due = 0; /* called directly, the caller paces the ticks */
    host_tick(h);
    return KEEL_OK;
}

static void host_tick(keel_net_host *h)
{
    host_pump(h);
    h->tick++;
    scan(h);
    for (uint32_t k = 0; k < h->nclients; k++) {
        hclient *c = h->clients[k];
        c->spent = 0;
        if (c->state != C_JOINED) continue;
        send_structure(h, c);
        state_flush(h, c);
        send_deltas(h, c);
    }
    for (uint32_t k = 0; k < h->nclients; k++) state_flush(h, h->clients[k]); /* removals of dead ones */
    enet_host_flush(h->enet);
    host_pump(h);
}

uint16_t keel_net_host_port(const keel_net_host *h)
{
    return h ? h->enet->address.port : 0;
}

size_t keel_net_host_client_count(const keel_net_host *h)
{
    size_t n = 0;
    for (uint32_t k = 0; h && k < h->nclients; k++) n += h->clients[k]->state == C_JOINED;
    return n;
}

const char *keel_net_host_client_name(const keel_net_host *h, size_t i)
{
    for (uint32_t k = 0; h && k < h->nclients; k++)
        if (h->clients[k]->state == C_JOINED && i-- == 0) return h->clients[k]->name;
    return NULL;
}

keel_status keel_net_host_focus(keel_net_host *h, const char *name, keel_entity e, keel_diags *d)
{
    if (!keel_alive(h->w, e)) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "focus: the entity is not alive");
    for (uint32_t k = 0; k < h->nclients; k++)
        if (h->clients[k]->state == C_JOINED && name && !strcmp(h->clients[k]->name, name)) {
            h->clients[k]->focus = e;
            return KEEL_OK;
        }
    return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "focus: no client named '%s'", name ? name : "");
}

void keel_net_host_set_loss(keel_net_host *h, double drop, double dup, double reorder, uint32_t seed)
{
    h->drop = drop;
    h->dup = dup;
    h->reorder = reorder;
    h->rng = seed ? seed : 2463534242u;
}

keel__net_stats keel__net_host_stats(const keel_net_host *h)
{
    keel__net_stats s = h->stats;
    s.wire = h->enet->totalSentData;
    return s;
}

/* ======================================================================
 * Client
 * ====================================================================== */

typedef struct ccomp {
    uint32_t kind, slot;                 /* connection kind id */
    uint64_t ticks[KEEL__WIRE_MAX_SYNC]; /* the tick of each field's value held */
} ccomp;

typedef struct cent {
    keel_entity e;
    uint32_t inc;
    uint64_t born; /* the tick of its spawn snapshot */
    ccomp *comps;
    uint32_t ncomp, cap;
} cent;

struct keel_net_client {
    ENetHost *enet;
    ENetPeer *peer;
    keel_world *w;
    char *name;
    char *reason;
    bool connected, joined;
    skind *kinds; /* by connection kind id; id = KEEL_NO_KIND: not usable */
    keel__wire_kind *wk;
    uint32_t nkinds;
    keel__wire_schema schema;
    map by_lid; /* lid -> cent index */
    pool entp;
    cent *ents; /* entp's items */
    uint64_t *rx; /* delta packets received since the last ack */
    size_t nrx, rx_cap;
    keel__net_stats stats;
    char *mismatch; /* handshake: kinds this client lacks or differs on */
};

/* Refused or dropped: not connected from now on, whatever ENet's own disconnect still has to do. */
static void set_reason(keel_net_client *c, const char *why)
{
    c->connected = false;
    c->joined = false;
    if (c->reason) return;
    c->reason = keel__strdup(why);
}

static void client_send(keel_net_client *c, int ch, const keel__wire_buf *b)
{
    if (!c->peer) return;
    ENetPacket *pk = enet_packet_create(b->p, b->len, ch == CH_RELIABLE ? ENET_PACKET_FLAG_RELIABLE : 0);
    if (pk) enet_peer_send(c->peer, (enet_uint8)ch, pk);
}

/* Refuses the server: says why and leaves. */
static void client_leave(keel_net_client *c, const char *why)
{
    set_reason(c, why);
    keel__wire_buf b = { 0 };
    keel__wire_u8(&b, KEEL__PK_REFUSE);
    keel__wire_str(&b, why);
    client_send(c, CH_RELIABLE, &b);
    keel__wire_buf_free(&b);
    if (c->peer) enet_peer_disconnect_later(c->peer, 2);
    c->joined = false;
}

static void append(char **s, const char *part)
{
    size_t n = *s ? strlen(*s) : 0, m = strlen(part);
    *s = keel__xrealloc(*s, n + m + 3);
    if (n) memcpy(*s + n, ", ", 2), n += 2;
    memcpy(*s + n, part, m + 1);
}

static void on_kinds(keel_net_client *c, const keel__wire_msg *m)
{
    if (c->joined) {
        client_leave(c, "malformed packet: a second kind table");
        return;
    }
    if (c->nkinds + m->nkinds > KEEL__WIRE_MAX_KINDS) {
        client_leave(c, "malformed packet: too many kinds");
        return;
    }
    c->kinds = keel__xrealloc(c->kinds, (c->nkinds + m->nkinds + 1) * sizeof *c->kinds);
    for (size_t i = 0; i < m->nkinds; i++) {
        const keel__wire_kindrec *r = &m->kinds[i];
        skind *k = &c->kinds[c->nkinds++];
        memset(k, 0, sizeof *k);
        k->w = r->k;
        k->interval = r->interval;
        keel_kind_id id = keel_kind_find(r->key);
        char part[KEEL__WIRE_MAX_KEY + 96];
        if (!id) {
            snprintf(part, sizeof part, "%s (missing)", r->key);
            append(&c->mismatch, part);
            continue;
        }
        skind mine;
        const keel_kind_desc *kd = keel_kind_describe(id);
        if (!kind_synced(kd) || !skind_fill(id, &mine) || (uint32_t)mine.version != r->version ||
            mine.hash != r->hash || mine.w.nsync != r->k.nsync || mine.w.many != r->k.many) {
            if ((uint32_t)mine.version != r->version)
                snprintf(part, sizeof part, "%s (version %u, the server has %u)", r->key, (unsigned)mine.version,
                         (unsigned)r->version);
            else snprintf(part, sizeof part, "%s (its synced fields differ)", r->key);
            append(&c->mismatch, part);
            continue;
        }
        for (uint32_t f = 0; f < mine.w.nsync; f++)
            if (mine.w.types[f] != r->k.types[f] || mine.w.choices[f] != r->k.choices[f]) {
                snprintf(part, sizeof part, "%s (its synced fields differ)", r->key);
                append(&c->mismatch, part);
                goto next;
            }
        *k = mine;
        k->interval = r->interval;
    next:;
    }
    if (!m->last) return;
    if (c->mismatch) {
        size_t n = strlen(c->mismatch) + 64;
        char *why = keel__xrealloc(NULL, n);
        snprintf(why, n, "refused: kinds differ from the server's: %s", c->mismatch);
        client_leave(c, why);
        free(why);
        return;
    }
    c->wk = keel__xcalloc(c->nkinds ? c->nkinds : 1, sizeof *c->wk);
    for (uint32_t i = 0; i < c->nkinds; i++) c->wk[i] = c->kinds[i].w;
    c->schema.kinds = c->wk;
    c->schema.count = c->nkinds;
    keel__wire_buf b = { 0 };
    keel__wire_u8(&b, KEEL__PK_JOIN);
    client_send(c, CH_RELIABLE, &b);
    keel__wire_buf_free(&b);
    c->joined = true;
}

static cent *cent_of(keel_net_client *c, uint32_t lid)
{
    uint32_t i;
    return map_get(&c->by_lid, lid, &i) ? &c->ents[i] : NULL;
}

static ccomp *ccomp_of(cent *e, uint32_t kind, uint32_t slot)
{
    for (uint32_t j = 0; j < e->ncomp; j++)
        if (e->comps[j].kind == kind && e->comps[j].slot == slot) return &e->comps[j];
    return NULL;
}

/* Checks a STATE packet's records against what the client holds, before anything is applied. */
static const char *state_check(keel_net_client *c, const keel__wire_msg *m)
{
    map fresh = { 0 }; /* lids spawned (1) or removed (2) earlier in this packet */
    const char *bad = NULL;
    for (size_t i = 0; i < m->nrec && !bad; i++) {
        const keel__wire_rec *x = &m->recs[i];
        uint32_t st = 0;
        bool had = map_get(&fresh, x->lid, &st);
        bool known = had ? st == 1 : cent_of(c, x->lid) != NULL;
        if (x->tag == KEEL__REC_SPAWN) {
            if (known) bad = "a spawn of an id in use";
            else {
                keel_entity other = keel_find(c->w, x->uuid);
                if (other && !had) {
                    /* the same UUID under another live id: refused (one entity, one id) */
                    bad = "a spawn of an entity held under another id";
                }
                map_put(&fresh, x->lid, 1);
            }
        } else if (x->tag == KEEL__REC_REMOVE) {
            if (!known) bad = "a removal of an unknown id";
            map_put(&fresh, x->lid, 2);
        } else if (!known) bad = "a record for an unknown id";
        else if ((x->tag == KEEL__REC_ADD || x->tag == KEEL__REC_DROP) && !c->kinds[x->kind].id)
            bad = "a component of an unusable kind";
    }
    map_free(&fresh);
    return bad;
}

static void apply_values(keel_net_client *c, keel_comp comp, const skind *k, ccomp *cc, const keel__wire_msg *m,
                         const keel__wire_rec *x, uint64_t tick, bool force)
{
    uint32_t vi = x->val0;
    keel__world_mirror_apply(c->w, true);
    for (uint32_t f = 0; f < k->w.nsync; f++) {
        if (!(x->mask >> (2 * f) & 1)) continue;
        keel_value v = m->vals[vi++];
        if (!force && cc->ticks[f] >= tick) continue; /* older than what it holds */
        if (keel__field_set(c->w, comp, k->fields[f], &v, true, NULL, NULL) == KEEL_OK) cc->ticks[f] = tick;
    }
    keel__world_mirror_apply(c->w, false);
}

static void apply_add(keel_net_client *c, cent *e, const keel__wire_msg *m, const keel__wire_rec *x)
{
    const skind *k = &c->kinds[x->kind];
    ccomp *cc = ccomp_of(e, x->kind, x->slot);
    keel_comp comp;
    if (!cc) {
        keel_add_opts ao = KEEL_ADD_OPTS_INIT;
        ao.slot = k->w.many ? x->slot : 0;
        ao.skip_rules = true; /* a mirror: the server's world held to the rules */
        if (!keel_get_comp(c->w, e->e, k->id, ao.slot, &comp) &&
            keel_add(c->w, e->e, k->id, &ao, &comp, NULL, NULL) != KEEL_OK)
            return;
        if (e->ncomp == e->cap) {
            e->cap = e->cap ? e->cap * 2 : 4;
            e->comps = keel__xrealloc(e->comps, e->cap * sizeof *e->comps);
        }
        cc = &e->comps[e->ncomp++];
        memset(cc, 0, sizeof *cc);
        cc->kind = x->kind;
        cc->slot = x->slot;
        c->stats.adds++;
    } else if (!keel_get_comp(c->w, e->e, k->id, k->w.many ? x->slot : 0, &comp)) return;
    apply_values(c, comp, k, cc, m, x, m->tick, true);
}

static void cent_drop(keel_net_client *c, uint32_t lid)
{
    uint32_t i;
    if (!map_get(&c->by_lid, lid, &i)) return;
    cent *e = &c->ents[i];
    if (keel_alive(c->w, e->e)) keel_destroy(c->w, e->e, NULL, NULL);
    free(e->comps);
    memset(e, 0, sizeof *e);
    map_del(&c->by_lid, lid);
    pool_give(&c->entp, i);
}

static void apply_meta(keel_net_client *c, cent *e, const keel__wire_rec *x)
{
    cent *p = x->parent ? cent_of(c, x->parent - 1) : NULL;
    keel_entity pe = p ? p->e : KEEL_NO_ENTITY;
    if (keel_entity_parent(c->w, e->e) != pe) keel_reparent(c->w, e->e, pe, NULL, NULL);
    const char *name = keel_entity_name(c->w, e->e);
    if (!name || strcmp(name, x->name ? x->name : "")) keel_rename(c->w, e->e, x->name ? x->name : "", NULL, NULL);
    if (keel_entity_enabled(c->w, e->e) != x->enabled) keel_set_enabled(c->w, e->e, x->enabled, NULL, NULL);
}

static void apply_state(keel_net_client *c, const keel__wire_msg *m)
{
    for (size_t i = 0; i < m->nrec; i++) {
        const keel__wire_rec *x = &m->recs[i];
        switch (x->tag) {
        case KEEL__REC_SPAWN: {
            cent *p = x->parent ? cent_of(c, x->parent - 1) : NULL;
            keel_entity e = KEEL_NO_ENTITY;
            if (keel_spawn(c->w, x->name ? x->name : "", p ? p->e : KEEL_NO_ENTITY, &x->uuid, &e, NULL, NULL) !=
                KEEL_OK)
                break;
            if (!x->enabled) keel_set_enabled(c->w, e, false, NULL, NULL);
            uint32_t ci = pool_take(&c->entp, sizeof *c->ents);
            c->ents = c->entp.items;
            c->ents[ci].e = e;
            c->ents[ci].inc = x->inc;
            c->ents[ci].born = m->tick;
            map_put(&c->by_lid, x->lid, ci);
            c->stats.spawns++;
            break;
        }
        case KEEL__REC_META: apply_meta(c, cent_of(c, x->lid), x); break;
        case KEEL__REC_REMOVE:
            cent_drop(c, x->lid);
            c->stats.removals++;
            break;
        case KEEL__REC_ADD: apply_add(c, cent_of(c, x->lid), m, x); break;
        case KEEL__REC_DROP: {
            cent *e = cent_of(c, x->lid);
            const skind *k = &c->kinds[x->kind];
            for (uint32_t j = 0; j < e->ncomp; j++)
                if (e->comps[j].kind == x->kind && e->comps[j].slot == x->slot) {
                    keel_remove(c->w, e->e, keel_kind_describe(k->id)->key, k->w.many ? x->slot : 0, NULL, NULL);
                    e->comps[j] = e->comps[--e->ncomp];
                    c->stats.drops++;
                    break;
                }
            break;
        }
        default: break;
        }
    }
}

static void apply_delta(keel_net_client *c, const keel__wire_msg *m, uint64_t seq)
{
    if (c->nrx < 4096) { /* more before an ack: those go unacked and are sent again */
        if (c->nrx == c->rx_cap) {
            c->rx_cap = c->rx_cap ? c->rx_cap * 2 : 64;
            c->rx = keel__xrealloc(c->rx, c->rx_cap * sizeof *c->rx);
        }
        c->rx[c->nrx++] = seq;
    }
    for (size_t i = 0; i < m->nrec; i++) {
        const keel__wire_rec *x = &m->recs[i];
        cent *e = cent_of(c, x->lid);
        /* an id no longer held, or a delta from before this incarnation's snapshot: stale */
        if (!e || m->tick < e->born || !c->kinds[x->kind].id) {
            c->stats.ignored++;
            continue;
        }
        ccomp *cc = ccomp_of(e, x->kind, x->slot);
        keel_comp comp;
        const skind *k = &c->kinds[x->kind];
        if (!cc || !keel_get_comp(c->w, e->e, k->id, k->w.many ? x->slot : 0, &comp)) {
            c->stats.ignored++;
            continue;
        }
        apply_values(c, comp, k, cc, m, x, m->tick, false);
        c->stats.deltas++;
    }
}

/* One packet from the server: decoded whole and checked before anything changes. */
static void client_receive(keel_net_client *c, int channel, const uint8_t *p, size_t n)
{
    c->stats.bytes += n;
    c->stats.packets++;
    keel__wire_msg m;
    char err[160];
    if (!keel__wire_decode(p, n, c->joined ? &c->schema : NULL, &m, err, sizeof err)) {
        client_leave(c, err);
        return;
    }
    bool chan_ok = (m.type == KEEL__PK_DELTA) == (channel == CH_DELTA);
    if (!chan_ok) client_leave(c, "malformed packet: on the wrong channel");
    else if (m.type == KEEL__PK_KINDS) {
        if (m.protocol != KEEL__WIRE_PROTOCOL) client_leave(c, "refused: the server speaks another protocol");
        else on_kinds(c, &m);
    } else if (m.type == KEEL__PK_REFUSE) {
        char why[KEEL__WIRE_MAX_NAME + 32];
        snprintf(why, sizeof why, "%s", m.text ? m.text : "refused");
        set_reason(c, why);
        c->joined = false;
    } else if (m.type == KEEL__PK_STATE && c->joined) {
        const char *bad = state_check(c, &m);
        if (bad) {
            char why[200];
            snprintf(why, sizeof why, "malformed packet: %s", bad);
            client_leave(c, why);
        } else apply_state(c, &m);
    } else if (m.type == KEEL__PK_DELTA && c->joined) apply_delta(c, &m, m.seq);
    else client_leave(c, "malformed packet: unexpected packet type");
    keel__wire_msg_free(&m);
}

static void client_step_hook(keel_world *w, void *user, double dt)
{
    (void)w;
    (void)dt;
    keel_net_client_service(user, NULL);
}

keel_status keel_net_connect(const char *addr, uint16_t port, const char *name, keel_net_client **out,
                             keel_diags *d)
{
    *out = NULL;
    if (!addr) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no address");
    if (name && strlen(name) > 256)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "name", "a client name is at most 256 bytes");
    if (!net_up()) return KEEL_ERROR(d, KEEL_IO_ERROR, "", "ENet failed to start");
    ENetAddress a;
    if (enet_address_set_host(&a, addr) != 0) {
        net_down();
        return KEEL_ERROR(d, KEEL_IO_ERROR, "", "cannot resolve '%s'", addr);
    }
    a.port = port;
    ENetHost *eh = enet_host_create(NULL, 1, 2, 0, 0);
    if (!eh) {
        net_down();
        return KEEL_ERROR(d, KEEL_IO_ERROR, "", "ENet could not open a socket");
    }
    ENetPeer *peer = enet_host_connect(eh, &a, 2, 0);
    if (!peer) {
        enet_host_destroy(eh);
        net_down();
        return KEEL_ERROR(d, KEEL_IO_ERROR, "", "ENet could not start a connection");
    }
    keel_net_client *c = keel__xcalloc(1, sizeof *c);
    c->enet = eh;
    c->peer = peer;
    c->name = keel__strdup(name ? name : "client");
    char wname[300];
    snprintf(wname, sizeof wname, "%s", c->name);
    c->w = keel_world_new(wname);
    keel__world_set_mirror(c->w, true);
    keel__ext_add(c->w, &client_ext, c);
    *out = c;
    return KEEL_OK;
}

void keel_net_client_free(keel_net_client *c)
{
    if (!c) return;
    if (c->enet) net_close(c->enet);
    for (uint32_t i = 0; i < c->entp.n; i++) free(c->ents[i].comps);
    pool_free(&c->entp);
    map_free(&c->by_lid);
    keel_world_free(c->w);
    free(c->kinds);
    free(c->wk);
    free(c->name);
    free(c->reason);
    free(c->mismatch);
    free(c->rx);
    free(c);
}

static void client_pump(keel_net_client *c)
{
    ENetEvent ev;
    while (c->enet && enet_host_service(c->enet, &ev, 0) > 0) {
        switch (ev.type) {
        case ENET_EVENT_TYPE_CONNECT: {
            c->connected = true;
            keel__wire_buf b = { 0 };
            keel__wire_u8(&b, KEEL__PK_HELLO);
            keel__wire_varint(&b, KEEL__WIRE_PROTOCOL);
            keel__wire_str(&b, c->name);
            client_send(c, CH_RELIABLE, &b);
            keel__wire_buf_free(&b);
            break;
        }
        case ENET_EVENT_TYPE_RECEIVE:
            if (!c->reason) client_receive(c, ev.channelID, ev.packet->data, ev.packet->dataLength);
            enet_packet_destroy(ev.packet);
            break;
        case ENET_EVENT_TYPE_DISCONNECT:
            set_reason(
                c, c->connected ? "dropped: the server closed the connection" : "could not connect to the server");
            c->connected = false;
            c->joined = false;
            c->peer = NULL;
            break;
        default: break;
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The delta packets received since the last ack, as runs of sequence numbers. */
static void send_acks(keel_net_client *c)
{
    qsort(c->rx, c->nrx, sizeof *c->rx, cmp_u64);
    keel__wire_buf b = { 0 }, body = { 0 };
    size_t i = 0;
    while (i < c->nrx) {
        uint32_t n = 0;
        body.len = 0;
        while (i < c->nrx && n < KEEL__WIRE_MAX_ACKS) {
            size_t j = i + 1;
            while (j < c->nrx && c->rx[j] <= c->rx[j - 1] + 1) j++;
            keel__wire_varint(&body, c->rx[i]);
            keel__wire_varint(&body, c->rx[j - 1] - c->rx[i] + 1);
            n++;
            i = j;
        }
        b.len = 0;
        keel__wire_u8(&b, KEEL__PK_ACK);
        keel__wire_varint(&b, n);
        keel__wire_bytes(&b, body.p, body.len);
        client_send(c, CH_DELTA, &b);
    }
    keel__wire_buf_free(&b);
    keel__wire_buf_free(&body);
    c->nrx = 0;
}

keel_status keel_net_client_service(keel_net_client *c, keel_diags *d)
{
    if (!c) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no client");
    client_pump(c);
    if (c->nrx && c->joined && c->peer) send_acks(c);
    if (c->enet) enet_host_flush(c->enet);
    if (c->reason) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s", c->reason);
    return KEEL_OK;
}

keel_status keel__net_client_inject(keel_net_client *c, int channel, const void *data, size_t len, keel_diags *d)
{
    client_receive(c, channel, data, len);
    if (c->reason) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s", c->reason);
    return KEEL_OK;
}

keel_world *keel_net_client_world(const keel_net_client *c)
{
    return c ? c->w : NULL;
}
bool keel_net_client_connected(const keel_net_client *c)
{
    return c && c->connected;
}
bool keel_net_client_joined(const keel_net_client *c)
{
    return c && c->joined;
}
const char *keel_net_client_reason(const keel_net_client *c)
{
    return c ? c->reason : NULL;
}
keel__net_stats keel__net_client_stats(const keel_net_client *c)
{
    return c->stats;
}
