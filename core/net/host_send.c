/* host_send.c — what a host sends each joined client, and what the client's acks confirm.
 *
 * A client holds entities under connection-local ids (lid), and for each component it holds the
 * tick it is confirmed at: the client is known to have every field as of that tick. Structure
 * goes reliably (channel 0): spawns with every component, removals (gone, or out of interest),
 * name/flag/parent changes and components added or dropped; a component sent so is confirmed
 * at the tick it was sent. Field values go unreliably (channel 1) as deltas: each tick, in
 * ascending ids, every held component whose fields changed after its confirmed tick gets the
 * fields changed since then. Usually the client holds what came before the component's latest
 * change, and gets the body host_track.c encoded at that change, copied as it is; one further
 * behind gets a body of its own. Each tick's delta packets and the components each carried are
 * noted in a ring of the last 32 ticks; an ack of a packet raises those components' confirmed
 * tick to the packet's (never lowering it, and never for a component freed or re-made since),
 * so a lost packet's fields are simply sent again while they stay newer than what was
 * confirmed. A client that acks nothing for the whole ring gets every component it holds again,
 * reliably (a resnapshot). A per-client byte budget bounds a tick: spawns past it wait, and the
 * delta pass resumes next tick at the id where it stopped. */
#include "net/net_internal.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* An uint8_t run of n bytes at the end of b (grown only when full). */
static inline uint8_t *put(keel__wire_buf *b, size_t n)
{
    if (b->len + n > b->cap) return keel__buf_grow(b, n);
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

void keel__net_send_packet(keel_net_host *h, hclient *c, int ch, const uint8_t *p, size_t n)
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

void keel__net_state_flush(keel_net_host *h, hclient *c)
{
    if (c->pend.len > c->pend_head) keel__net_send_packet(h, c, CH_RELIABLE, c->pend.p, c->pend.len);
    c->pend.len = 0;
}

static void state_head(keel_net_host *h, hclient *c)
{
    if (c->pend.len) return;
    keel__wire_u8(&c->pend, KEEL__PK_STATE);
    keel__wire_varint(&c->pend, h->tick);
    c->pend_head = c->pend.len;
}

void keel__net_state_add(keel_net_host *h, hclient *c, keel__wire_buf *rec)
{
    state_head(h, c);
    if (c->pend.len + rec->len > KEEL__WIRE_MTU && c->pend.len > c->pend_head) {
        keel__net_state_flush(h, c);
        state_head(h, c);
    }
    keel__wire_bytes(&c->pend, rec->p, rec->len);
    rec->len = 0;
}

void keel__net_grow_client(keel_net_host *h, hclient *c)
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

void keel__net_forget_ent(hclient *c, uint32_t ti)
{
    if (ti < c->ent_cap && c->lid[ti]) {
        c->ent_of_lid[c->lid[ti]] = 0;
        c->lid[ti] = 0;
        c->lid_gen++;
        c->meta_sent[ti] = 0;
        c->parent_sent[ti] = 0;
    }
}

static bool in_interest(keel_net_host *h, hclient *c, const tent *t)
{
    if (h->o.interest_radius <= 0) return true;
    if (!t->pos_comp) return true; /* no place in the world: everywhere */
    uint32_t fi;
    if (!c->focus || !keel__map_get(&h->by_entity, c->focus, &fi) || !h->ents[fi].pos_comp) return false;
    const double *a = t->wpos, *b = h->ents[fi].wpos; /* world positions (host_track.c) */
    double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    /* a kind's own sync.radius: the entity is followed as far as its widest kind asks (candidates
     * come from the cells around the focus, so at most the host's radius) */
    double r = 0;
    for (uint32_t j = 0; j < t->ncomp; j++) {
        const keel_kind_desc *kd = keel_kind_describe(h->kinds[h->comps[t->comps[j]].kind].id);
        if (kd && kd->sync_radius > r) r = kd->sync_radius;
    }
    if (r <= 0 || r > h->o.interest_radius) r = h->o.interest_radius;
    return dx * dx + dy * dy + dz * dz <= r * r;
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
    keel__net_state_add(h, c, rec);
    c->confirmed[ci] = h->tick;
}

static uint32_t parent_lid(keel_net_host *h, hclient *c, const tent *t)
{
    uint32_t pi;
    if (!t->parent || !keel__map_get(&h->by_entity, t->parent, &pi)) return 0;
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
        if (t->lifted) goto out; /* nothing about it, not even a removal, until restored */
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
            keel__net_state_add(h, c, &rec);
            c->meta_sent[ti] = h->tick;
            c->parent_sent[ti] = pl;
            for (uint32_t j = 0; j < t->ncomp; j++) put_add(h, c, &rec, ti, t->comps[j]);
            goto out;
        }
        if (!want) {
            keel__wire_u8(&rec, KEEL__REC_REMOVE);
            keel__wire_varint(&rec, c->lid[ti]);
            keel__net_state_add(h, c, &rec);
            for (uint32_t j = 0; j < t->ncomp; j++) c->confirmed[t->comps[j]] = 0;
            keel__net_forget_ent(c, ti);
            goto out;
        }
        uint32_t pl = parent_lid(h, c, t);
        if (t->meta_tick > c->meta_sent[ti] || pl != c->parent_sent[ti]) {
            keel__wire_u8(&rec, KEEL__REC_META);
            keel__wire_varint(&rec, c->lid[ti]);
            keel__wire_varint(&rec, pl ? pl + 1 : 0);
            keel__wire_u8(&rec, t->enabled ? 1 : 0);
            keel__wire_str(&rec, t->name);
            keel__net_state_add(h, c, &rec);
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

void keel__net_send_structure(keel_net_host *h, hclient *c)
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
        if (keel__map_get(&h->cells, CELL_NOWHERE, &head))
            for (uint32_t i = head; i; i = h->ents[i - 1].cnext)
                if (!c->lid[i - 1]) structure_one(h, c, i - 1, &rec);
        if (c->focus && keel__map_get(&h->by_entity, c->focus, &fi) && h->ents[fi].pos_comp) {
            uint64_t fc = keel__net_cell_of(h, &h->ents[fi]);
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
                        if (!keel__map_get(&h->cells, key, &head)) continue;
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
        if (t->lifted) continue; /* its records are in the lift; confirmed stays for the restore */
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
    if (d->pk->len > d->header) keel__net_send_packet(h, c, CH_DELTA, d->pk->p, d->pk->len);
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
void keel__net_send_deltas(keel_net_host *h, hclient *c)
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
void keel__net_on_ack(hclient *c, uint64_t seq)
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
