/* net.h — replication over ENet (net.c): what the tests use beyond keel.h and bind.h. */
#ifndef KEEL_NET_H
#define KEEL_NET_H

#include "keel.h"

/* Test seam: feeds one packet to a client as if it came from the server on `channel`. */
keel_status keel__net_client_inject(keel_net_client *c, int channel, const void *data, size_t len, keel_diags *d);
#include "bind.h" /* keel__net_stats */

#endif
