/* client.c — a replication client: it owns a mirror world (model/ext.h: fixed_update and update
 * do not run there, and synced fields take only the network's writes) and services its ENet
 * connection on that world's step. Handshake: hello, then the server's synced kinds, each
 * checked against this registry (key, version, layout hash); any difference refuses the server,
 * naming the kinds, before an entity comes. Then every packet is decoded whole and, for a
 * structure packet, checked against what the client holds before anything is applied.
 * Values go through the one field write path (keel__field_set between keel__world_mirror_apply
 * calls); each field keeps the tick of the value it holds, so an older delta arriving late is
 * ignored. The delta packets received are acked as runs of sequence numbers at each service. */
#include "net/net_internal.h"
#include "base/vec.h"

#include "base/util.h"
#include "bind.h"
#include "model/mirror.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    keel__map by_lid; /* lid -> cent index */
    keel__pool entp;
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
        if (!keel__net_kind_synced(kd) || !keel__net_skind_fill(id, &mine) || (uint32_t)mine.version != r->version ||
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
    return keel__map_get(&c->by_lid, lid, &i) ? &c->ents[i] : NULL;
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
    keel__map fresh = { 0 }; /* lids spawned (1) or removed (2) earlier in this packet */
    const char *bad = NULL;
    for (size_t i = 0; i < m->nrec && !bad; i++) {
        const keel__wire_rec *x = &m->recs[i];
        uint32_t st = 0;
        bool had = keel__map_get(&fresh, x->lid, &st);
        bool known = had ? st == 1 : cent_of(c, x->lid) != NULL;
        if (x->tag == KEEL__REC_SPAWN) {
            if (known) bad = "a spawn of an id in use";
            else {
                keel_entity other = keel_find(c->w, x->uuid);
                if (other && !had) {
                    /* the same UUID under another live id: refused (one entity, one id) */
                    bad = "a spawn of an entity held under another id";
                }
                keel__map_put(&fresh, x->lid, 1);
            }
        } else if (x->tag == KEEL__REC_REMOVE) {
            if (!known) bad = "a removal of an unknown id";
            keel__map_put(&fresh, x->lid, 2);
        } else if (!known) bad = "a record for an unknown id";
        else if ((x->tag == KEEL__REC_ADD || x->tag == KEEL__REC_DROP) && !c->kinds[x->kind].id)
            bad = "a component of an unusable kind";
    }
    keel__map_free(&fresh);
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
        KEEL__VEC_RESERVE(e->comps, e->ncomp, e->cap, 1, 4);
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
    if (!keel__map_get(&c->by_lid, lid, &i)) return;
    cent *e = &c->ents[i];
    if (keel_alive(c->w, e->e)) keel_destroy(c->w, e->e, NULL, NULL);
    free(e->comps);
    memset(e, 0, sizeof *e);
    keel__map_remove(&c->by_lid, lid);
    keel__pool_give(&c->entp, i);
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
            uint32_t ci = keel__pool_take(&c->entp, sizeof *c->ents);
            c->ents = c->entp.items;
            c->ents[ci].e = e;
            c->ents[ci].inc = x->inc;
            c->ents[ci].born = m->tick;
            keel__map_put(&c->by_lid, x->lid, ci);
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
        KEEL__VEC_RESERVE(c->rx, c->nrx, c->rx_cap, 1, 64);
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
const keel__ext_type keel__net_client_ext = { .name = "net client", .order = 40, .step_end = client_step_hook };

keel_status keel_net_connect(const char *addr, uint16_t port, const char *name, keel_net_client **out,
                             keel_diags *d)
{
    *out = NULL;
    if (!addr) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "no address");
    if (name && strlen(name) > 256)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "name", "a client name is at most 256 bytes");
    if (!keel__net_up()) return KEEL_ERROR(d, KEEL_IO_ERROR, "", "ENet failed to start");
    ENetAddress a;
    if (enet_address_set_host(&a, addr) != 0) {
        keel__net_down();
        return KEEL_ERROR(d, KEEL_IO_ERROR, "", "cannot resolve '%s'", addr);
    }
    a.port = port;
    ENetHost *eh = enet_host_create(NULL, 1, 2, 0, 0);
    if (!eh) {
        keel__net_down();
        return KEEL_ERROR(d, KEEL_IO_ERROR, "", "ENet could not open a socket");
    }
    ENetPeer *peer = enet_host_connect(eh, &a, 2, 0);
    if (!peer) {
        enet_host_destroy(eh);
        keel__net_down();
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
    keel__ext_add(c->w, &keel__net_client_ext, c);
    *out = c;
    return KEEL_OK;
}

void keel_net_client_free(keel_net_client *c)
{
    if (!c) return;
    if (c->enet) keel__net_close(c->enet);
    for (uint32_t i = 0; i < c->entp.n; i++) free(c->ents[i].comps);
    keel__pool_free(&c->entp);
    keel__map_free(&c->by_lid);
    keel_world_close(c->w, NULL); /* the mirrors retire as any world's components do */
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
