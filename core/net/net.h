/* net.h — replication's private side (core/net/): the counters the Lua binding, the tests and
 * the benches read, and the tests' seam. Not installed; keel_net.h is the public API. */
#ifndef KEEL_NET_PRIVATE_H
#define KEEL_NET_PRIVATE_H

#include "keel_net.h"

/* Counters a test or bench reads. */
typedef struct keel__net_stats {
    uint64_t spawns, removals, adds, drops, deltas, ignored; /* client: records applied / ignored */
    uint64_t resnapshots;                                    /* host: full resnapshots sent */
    uint64_t bytes;                                          /* host: payload bytes sent; client: received */
    uint64_t packets;
    uint64_t wire; /* host: bytes ENet put on the wire (headers too) */
    uint64_t handshaking; /* host: peers connected that have not said hello yet */
    uint64_t dropped_slow; /* host: peers dropped for not saying hello within the deadline */
} keel__net_stats;
keel__net_stats keel__net_client_stats(const keel_net_client *c);
keel__net_stats keel__net_host_stats(const keel_net_host *h);

/* Test seam: feeds one packet to a client as if it came from the server on `channel`. */
keel_status keel__net_client_inject(keel_net_client *c, int channel, const void *data, size_t len, keel_diags *d);

#endif
