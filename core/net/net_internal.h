/* net_internal.h — what the replication files share (core/net/): the synced kinds table, the
 * host's tracked entities and components (host_track.c fills them), its per-client state
 * (host_send.c writes from it), and the functions each file offers the others.
 *
 * Tracked entities (tent) and components (tcomp) live in pools: an element keeps its index, and
 * every per-client table (local ids, confirmed ticks) and the ring's notes are by that index.
 * Nothing here is public: keel_net.h is the API, net.h its counters and test seam. */
#ifndef KEEL_NET_INTERNAL_H
#define KEEL_NET_INTERNAL_H

#include "net/net.h"

#include "base/pool.h"
#include "base/map.h"
#include "model/ext.h"
#include "net/net_wire.h"

#include <enet/enet.h>

#define RING 32
#define BODY_COPY 32 /* delta bodies up to this long are copied with one fixed-size copy */
#define CH_RELIABLE 0
#define CH_DELTA 1

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
    bool lifted;           /* in an open lift: kept for a restore, nothing sent about it */
    double wpos[3];        /* its world position (through its parents), with an interest radius */
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
/* A peer that has not said hello within this many milliseconds of connecting is dropped; peers in
 * their handshake have ENet places of their own beyond max_clients, so forged connects can hold
 * only those, never a player's. */
#define KEEL__NET_HELLO_DEADLINE_MS 2000
#define KEEL__NET_HANDSHAKE_SLOTS 16

typedef struct hclient {
    ENetPeer *peer;
    char *name;
    int state;
    uint32_t connected_ms; /* enet_time_get() at its connect: the hello's deadline runs from it */
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
    keel__pool entp, compp;
    tent *ents;   /* entp's items */
    tcomp *comps; /* compp's items */
    uint64_t structure;   /* the world's structure when last walked */
    uint64_t struct_tick; /* the last tick an entity came, went, or changed name, flags or parent */
    uint64_t shape;       /* counts full walks (the only place entities and components come and go) */
    uint64_t xform_tick;  /* the last tick a tracked core:transform changed (world positions move) */
    keel__wire_buf scratch, scratch2;
    keel__map by_entity;
    keel__map cells; /* interest grid (radius > 0): cell key -> first tent + 1 */
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

/* the interest grid's cell of an entity with no position, and the bias that makes a cell's
 * coordinates (21 bits each in its key) non-negative */
#define CELL_NOWHERE UINT64_MAX
#define CELL_BIAS (1 << 20)

/* ---- net.c: ENet's start and stop, the synced kinds ---- */
bool keel__net_up(void); /* false: ENet failed to start */
void keel__net_down(void);
/* Tells every peer still there goodbye now, and closes the socket. */
void keel__net_close(ENetHost *eh);
bool keel__net_kind_synced(const keel_kind_desc *kd);
/* Fills k from the registry's kind; false when it has more synced fields than the wire carries. */
bool keel__net_skind_fill(keel_kind_id id, skind *k);

/* ---- host_track.c: what changed in the world ---- */
/* The tick's look at the world, once for every client. */
void keel__net_scan(keel_net_host *h);
uint64_t keel__net_cell_of(const keel_net_host *h, const tent *t);
void keel__net_tcomp_fini(tcomp *tc);

/* ---- host_send.c: each client's records, deltas and acks ---- */
void keel__net_send_packet(keel_net_host *h, hclient *c, int ch, const uint8_t *p, size_t n);
/* Appends the record in rec to the client's reliable packet, starting a new one past the MTU. */
void keel__net_state_add(keel_net_host *h, hclient *c, keel__wire_buf *rec);
void keel__net_state_flush(keel_net_host *h, hclient *c);
void keel__net_grow_client(keel_net_host *h, hclient *c);
void keel__net_forget_ent(hclient *c, uint32_t ti);
void keel__net_send_structure(keel_net_host *h, hclient *c);
void keel__net_send_deltas(keel_net_host *h, hclient *c);
void keel__net_on_ack(hclient *c, uint64_t seq);

/* ---- the step's extensions (host.c, client.c) ---- */
extern const keel__ext_type keel__net_host_ext;
extern const keel__ext_type keel__net_client_ext;

#endif
