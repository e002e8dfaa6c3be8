/* host.c — a replication host's life: it serves one world (an extension of it, model/ext.h, whose
 * step end adds up dt and sends a network tick once `tick` seconds have passed), keeps ENet's
 * events coming (a connection is a client; its hello is answered with the synced kinds table,
 * its join starts the sending, its acks go to host_send.c), and each tick looks at the world
 * once (host_track.c) and then sends every joined client its structure and deltas. */
#include "net/net_internal.h"

#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        keel__net_send_packet(h, c, CH_RELIABLE, b.p, b.len);
    } while (i < h->nkinds);
    keel__wire_buf_free(&b);
}

static void refuse(keel_net_host *h, hclient *c, const char *reason)
{
    keel__wire_buf b = { 0 };
    keel__wire_u8(&b, KEEL__PK_REFUSE);
    keel__wire_str(&b, reason);
    keel__net_send_packet(h, c, CH_RELIABLE, b.p, b.len);
    keel__wire_buf_free(&b);
    c->state = C_REFUSED;
    enet_peer_disconnect_later(c->peer, 1);
}

/* Clients past their hello (taking kinds or joined), c aside: what max_clients counts. */
static uint32_t players(const keel_net_host *h, const hclient *c)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < h->nclients; k++)
        n += h->clients[k] != c && (h->clients[k]->state == C_KINDS || h->clients[k]->state == C_JOINED);
    return n;
}

/* Whether a client other than c, past its hello, goes by this name: the host's log and focus
 * name clients, so two may not share one. */
static bool named(const keel_net_host *h, const hclient *c, const char *name)
{
    for (uint32_t k = 0; k < h->nclients; k++) {
        const hclient *o = h->clients[k];
        if (o != c && (o->state == C_KINDS || o->state == C_JOINED) && o->name && strcmp(o->name, name) == 0)
            return true;
    }
    return false;
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
        else if (players(h, c) >= h->o.max_clients) {
            char why[64];
            snprintf(why, sizeof why, "server full (%u clients)", (unsigned)h->o.max_clients);
            refuse(h, c, why);
        } else if (named(h, c, m.text && *m.text ? m.text : "client")) {
            char why[200];
            snprintf(why, sizeof why, "a client named '%.120s' is connected already", m.text && *m.text ? m.text : "client");
            refuse(h, c, why);
        } else if (m.protocol != KEEL__WIRE_PROTOCOL) {
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
            for (uint64_t s = first; s < first + n; s++) keel__net_on_ack(c, s);
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
            c->connected_ms = enet_time_get();
            c->name = keel__strdup("");
            h->clients = keel__xrealloc(h->clients, (h->nclients + 1) * sizeof *h->clients);
            h->clients[h->nclients++] = c;
            keel__net_grow_client(h, c);
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
    /* peers that connected and never said hello: dropped at the deadline (forged connects) */
    uint32_t now = enet_time_get();
    for (uint32_t k = 0; k < h->nclients;) {
        hclient *c = h->clients[k];
        if (c->state == C_HELLO && now - c->connected_ms > KEEL__NET_HELLO_DEADLINE_MS) {
            enet_peer_reset(c->peer); /* no disconnect handshake: it never made one of its own */
            client_free(c);
            h->clients[k] = h->clients[--h->nclients];
            h->stats.dropped_slow++;
            continue;
        }
        k++;
    }
}

static void host_tick(keel_net_host *h);

/* A step adds its dt; a tick goes out once `tick` seconds have added up. A step longer than several
 * ticks sends one, not a burst: the next tick carries everything changed meanwhile anyway. */
static void host_step_hook(keel_world *w, void *user, double dt);
/* the world went before its host: the host serves nothing more */
static void host_world_gone(keel_world *w, void *user) { ((keel_net_host *)user)->w = NULL; }
const keel__ext_type keel__net_host_ext = { .name = "net host", .order = 40, .step_end = host_step_hook, .free = host_world_gone };

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
    if (keel__ext_get(w, &keel__net_client_ext))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "a client's mirror world cannot be hosted");
    if (keel__ext_get(w, &keel__net_host_ext))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "world '%s' is hosted already", keel_world_name(w));
    if (opts.max_clients < 1 || opts.max_clients > 4095)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "max_clients", "max_clients must be in 1..4095, got %u",
                          (unsigned)opts.max_clients);
    if (!isfinite(opts.interest_radius) || opts.interest_radius < 0)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "interest", "interest radius must be a finite number >= 0");
    if (opts.max_radius == 0) opts.max_radius = KEEL_SYNC_RADIUS_MAX;
    if (!isfinite(opts.max_radius) || !(opts.max_radius > 0))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "max_radius", "max_radius must be a finite number > 0");
    if (opts.interest_radius > opts.max_radius)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "interest",
                          "interest radius %g is over the host's max_radius %g", opts.interest_radius,
                          opts.max_radius);
    for (size_t i = 0; i < keel_kind_count(); i++) {
        const keel_kind_desc *kd = keel_kind_describe(keel_kind_at(i));
        if (kd && kd->sync_radius > opts.max_radius)
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "max_radius",
                              "%s: sync radius %g is over the host's max_radius %g", kd->key, kd->sync_radius,
                              opts.max_radius);
    }
    if (!isfinite(opts.tick) || !(opts.tick > 0))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "tick", "tick must be a positive number of seconds");
    if (opts.budget < KEEL__WIRE_MTU)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "budget", "budget must be at least %d bytes a tick",
                          KEEL__WIRE_MTU);
    if (!keel__net_up()) return KEEL_ERROR(d, KEEL_IO_ERROR, "", "ENet failed to start");
    ENetAddress a;
    a.host = ENET_HOST_ANY;
    a.port = opts.port;
    if (opts.bind && enet_address_set_host(&a, opts.bind) != 0) {
        keel__net_down();
        return KEEL_ERROR(d, KEEL_IO_ERROR, "bind", "cannot resolve '%s'", opts.bind);
    }
    ENetHost *eh = enet_host_create(&a, opts.max_clients + KEEL__NET_HANDSHAKE_SLOTS, 2, 0, 0);
    if (!eh) {
        keel__net_down();
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
        if (!kd || !keel__net_kind_synced(kd)) continue;
        if (!keel__net_skind_fill(id, &h->kinds[h->nkinds])) {
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
    keel__ext_add(w, &keel__net_host_ext, h);
    *out = h;
    return KEEL_OK;
}

void keel_net_host_free(keel_net_host *h)
{
    if (!h) return;
    if (h->w && keel__ext_get(h->w, &keel__net_host_ext) == h) keel__ext_remove(h->w, &keel__net_host_ext);
    if (h->held) enet_packet_destroy(h->held);
    if (h->enet) keel__net_close(h->enet);
    for (uint32_t k = 0; k < h->nclients; k++) client_free(h->clients[k]);
    free(h->clients);
    for (uint32_t i = 0; i < h->entp.n; i++)
        if (h->ents[i].live) {
            free(h->ents[i].name);
            free(h->ents[i].comps);
        }
    for (uint32_t i = 0; i < h->compp.n; i++) keel__net_tcomp_fini(&h->comps[i]);
    keel__pool_free(&h->entp);
    keel__pool_free(&h->compp);
    keel__wire_buf_free(&h->scratch);
    keel__wire_buf_free(&h->scratch2);
    free(h->order);
    free(h->kinds);
    free(h->kind_of);
    keel__map_free(&h->by_entity);
    keel__map_free(&h->cells);
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
    keel__net_scan(h);
    for (uint32_t k = 0; k < h->nclients; k++) {
        hclient *c = h->clients[k];
        c->spent = 0;
        if (c->state != C_JOINED) continue;
        keel__net_send_structure(h, c);
        keel__net_state_flush(h, c);
        keel__net_send_deltas(h, c);
    }
    for (uint32_t k = 0; k < h->nclients; k++) keel__net_state_flush(h, h->clients[k]); /* removals of dead ones */
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
    for (uint32_t k = 0; k < h->nclients; k++) s.handshaking += h->clients[k]->state == C_HELLO;
    return s;
}

