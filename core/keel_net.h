/* keel_net.h — replication over ENet: a host serving one world's synced state to client worlds
 * that mirror it. Built when keel is (the KEEL_NET CMake option, on by default); a program
 * using it links ENet too (pkg-config libenet), as libkeel does. */
#ifndef KEEL_NET_H
#define KEEL_NET_H

#include "keel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* exported from libkeel like keel.h's declarations */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ======================================================================
 * Replication (core/net/, over ENet): a host sends a world's synced state to client worlds.
 *
 * A host serves one world. Every keel_net_host_service is one network tick: it reads what
 * changed since the last (fields marked KEEL_FIELD_SYNC of kinds with sync, entity name,
 * parent and enabled), sends spawns/removals/component adds reliably (channel 0) and field
 * deltas unreliably (channel 1) to each joined client within its budget, then services ENet.
 * keel_step on the host's world also calls it once per step. A client owns a mirror world
 * (keel_net_client_world): fixed_update and update (hooks and systems) do not run in it, and a
 * write to a synced field there is InvalidOperation. Handshake: a client whose kinds differ
 * from the server's synced kinds (missing, other version, other synced layout) is refused
 * before any entity is sent, with a reason naming them.
 * Example:
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_status st = keel_registry_freeze(&d);
 *     keel_world *w = keel_world_new("Server");
 *     keel_net_host_opts o = KEEL_NET_HOST_OPTS_INIT;
 *     o.port = 0; // any free port
 *     keel_net_host *h = NULL;
 *     keel_net_client *c = NULL;
 *     if (st == KEEL_OK) st = keel_net_host_new(w, &o, &h, &d);
 *     if (st == KEEL_OK) st = keel_net_connect("127.0.0.1", keel_net_host_port(h), "p1", &c, &d);
 *     for (int i = 0; st == KEEL_OK && i < 500 && !keel_net_client_joined(c); i++) {
 *         st = keel_net_host_service(h, &d);
 *         if (st == KEEL_OK) st = keel_net_client_service(c, &d);
 *     }
 *     bool joined = c && keel_net_client_joined(c);
 *     keel_net_client_free(c);
 *     keel_net_host_free(h);
 *     keel_world_free(w);
 *     keel_diags_free(&d);
 *     return !joined;
 * ====================================================================== */
typedef struct keel_net_host keel_net_host;
typedef struct keel_net_client keel_net_client;
typedef struct keel_net_host_opts {
    uint16_t port;           /* 0: any free port (keel_net_host_port tells) */
    const char *bind;        /* NULL: every address */
    uint32_t max_clients;    /* 1..4095 */
    double interest_radius;  /* 0: everything; else around each client's focus entity */
    size_t budget;           /* payload bytes per client per tick (reliable and unreliable) */
    double tick;             /* > 0: world seconds (dt given to keel_step) between network ticks */
    double max_radius;       /* 0: KEEL_SYNC_RADIUS_MAX; caps interest_radius and every kind's
                              * sync_radius (over it: InvalidArgument) */
} keel_net_host_opts;
#define KEEL_NET_DEFAULT_PORT 27761
#define KEEL_NET_HOST_OPTS_INIT { KEEL_NET_DEFAULT_PORT, NULL, 32, 0, 64 * 1024, 1.0 / 30, 0 }
/* IOError: ENet could not start or bind (the port in use). InvalidArgument: tick not a positive number.
 * keel_step of the hosted world sends a network tick once `tick` seconds of dt have added up;
 * keel_net_host_service always sends one (the caller is the clock). */
keel_status keel_net_host_new(keel_world *w, const keel_net_host_opts *o, keel_net_host **out, keel_diags *d);
void keel_net_host_free(keel_net_host *h); /* NULL is a no-op; disconnects every client; before its world */
keel_status keel_net_host_service(keel_net_host *h, keel_diags *d);
uint16_t keel_net_host_port(const keel_net_host *h);
size_t keel_net_host_client_count(const keel_net_host *h); /* joined clients */
const char *keel_net_host_client_name(const keel_net_host *h, size_t i); /* NULL past the end */
/* The client named `name` follows e (interest radius). NotFound: no such client or entity. */
keel_status keel_net_host_focus(keel_net_host *h, const char *name, keel_entity e, keel_diags *d);
/* Drops, duplicates and reorders the given shares (0..1) of the host's unreliable packets: a test seam. */
void keel_net_host_set_loss(keel_net_host *h, double drop, double dup, double reorder, uint32_t seed);

/* Starts connecting (the handshake runs in keel_net_client_service). IOError: ENet failed or
 * the address does not resolve. */
keel_status keel_net_connect(const char *addr, uint16_t port, const char *name, keel_net_client **out,
                             keel_diags *d);
void keel_net_client_free(keel_net_client *c); /* NULL is a no-op; frees its world too */
/* KEEL_OK, or once refused or dropped InvalidOperation with keel_net_client_reason as message. */
keel_status keel_net_client_service(keel_net_client *c, keel_diags *d);
keel_world *keel_net_client_world(const keel_net_client *c);
bool keel_net_client_connected(const keel_net_client *c); /* transport up */
bool keel_net_client_joined(const keel_net_client *c);    /* handshake accepted */
const char *keel_net_client_reason(const keel_net_client *c); /* NULL until refused or dropped */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif /* KEEL_NET_H */
