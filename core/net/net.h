/* net.h — replication's private side (core/net/): the tests' seam (its counters are in bind.h,
 * which the Lua binding reads them through). Not installed; keel_net.h is the public API. */
#ifndef KEEL_NET_PRIVATE_H
#define KEEL_NET_PRIVATE_H

#include "bind.h" /* keel__net_stats */
#include "keel_net.h"

/* Test seam: feeds one packet to a client as if it came from the server on `channel`. */
keel_status keel__net_client_inject(keel_net_client *c, int channel, const void *data, size_t len, keel_diags *d);

#endif
