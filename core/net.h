/* net.h — replication over ENet (net.c): what the Lua binding and the tests use beyond keel.h. */
#ifndef KEEL_NET_H
#define KEEL_NET_H

#include "keel.h"

/* Test seam: feeds one packet to a client as if it came from the server on `channel`. */
keel_status keel__net_client_inject(keel_net_client *c, int channel, const void *data, size_t len, keel_diags *d);
/* Counters a test or bench reads. */
typedef struct keel__net_stats {
    uint64_t spawns, removals, adds, drops, deltas, ignored; /* client: records applied / ignored */
    uint64_t resnapshots;                                    /* host: full resnapshots sent */
    uint64_t bytes;                                          /* host: payload bytes sent; client: received */
    uint64_t packets;
    uint64_t wire; /* host: bytes ENet put on the wire (headers too) */
} keel__net_stats;
keel__net_stats keel__net_client_stats(const keel_net_client *c);
keel__net_stats keel__net_host_stats(const keel_net_host *h);

#endif
