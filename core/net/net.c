/* net.c — replication over ENet: a host serving one world's synced state to client worlds, and
 * the clients mirroring it. The work is in four files:
 *   host_track.c  what changed: each tick one look at the world, per synced component each field's
 *                 last change tick, encoded once for every client; the interest grid
 *   host_send.c   each client: what it holds (connection-local ids, the tick each component is
 *                 confirmed at), reliable structure records, unreliable deltas, acks
 *   host.c        the host's life: ENet events, the handshake, the tick's pacing on keel_step
 *   client.c      the client: checks the handshake's kinds, applies records to its mirror world
 * The bytes are net_wire.c's. This file holds what host and client share: ENet's start and stop
 * (counted: several hosts and clients in one process) and the synced kinds table. */
#include "net/net_internal.h"

#include <string.h>

bool keel__net_kind_synced(const keel_kind_desc *kd)
{
    if (kd->sync_interval) return true;
    for (size_t i = 0; i < kd->field_count; i++)
        if (kd->fields[i].flags & KEEL_FIELD_SYNC) return true;
    return false;
}

bool keel__net_skind_fill(keel_kind_id id, skind *k)
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

static int enet_users;
bool keel__net_up(void)
{
    if (enet_users == 0 && enet_initialize() != 0) return false;
    enet_users++;
    return true;
}
void keel__net_down(void)
{
    if (--enet_users == 0) enet_deinitialize();
}

void keel__net_close(ENetHost *eh)
{
    for (size_t i = 0; i < eh->peerCount; i++)
        if (eh->peers[i].state != ENET_PEER_STATE_DISCONNECTED) enet_peer_disconnect_now(&eh->peers[i], 0);
    enet_host_flush(eh);
    enet_host_destroy(eh);
    keel__net_down();
}
