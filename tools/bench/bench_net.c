/* bench_net.c — replication: 10k entities each moving every tick, 8 clients over loopback, all
 * in interest. Rows: bytes on the wire per moving entity per tick (ENet and UDP-payload headers
 * included; baseline: the 16-byte target) and the server's network time per client per tick
 * against the world's own step (moving every entity through keel_set, then keel_step). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "keel.h"
#include "keel_net.h"
#include "bind.h" /* keel__net_host_stats */

static int N = 10000;
#define CLIENTS 8
#define TICKS 40

/* The two measured regions, kept out of line so that `valgrind --tool=callgrind
 * --toggle-collect=net_tick` (or world_tick) counts each one's instructions alone. */
__attribute__((noinline)) static void net_tick(keel_net_host *h)
{
    keel_net_host_service(h, NULL);
}

__attribute__((noinline)) static void world_tick(keel_world *w, const keel_entity *es, keel_kind_id tr, int t)
{
    for (int i = 0; i < N; i++) {
        keel_comp cp = { es[i], tr, 0 };
        keel_value v = { .type = KEEL_T_VEC3, .as.v = { i * 0.5 + t * 0.125, 2, 0 } };
        keel_set(w, cp, 0, &v, NULL, NULL);
    }
    keel_step(w, 1.0 / 60, NULL);
}

int main(void)
{
    if (getenv("KEEL_BENCH_N")) N = atoi(getenv("KEEL_BENCH_N"));
    keel_init();
    keel_registry_freeze(NULL);
    keel_world *w = keel_world_new("Bench");
    keel_kind_id tr = keel_kind_find("core:transform");
    keel_entity *es = malloc(N * sizeof *es);
    for (int i = 0; i < N; i++) {
        keel_spawn(w, "e", 0, NULL, &es[i], NULL, NULL);
        keel_add(w, es[i], tr, NULL, NULL, NULL, NULL);
    }
    keel_net_host_opts o = KEEL_NET_HOST_OPTS_INIT;
    o.port = 0;
    o.max_clients = CLIENTS;
    o.budget = 4u << 20; /* everything every tick: this measures bytes, not the budget */
    o.tick = 1.0 / 60; /* one network tick per keel_step below: the rows are per tick */
    keel_net_host *h = NULL;
    if (keel_net_host_new(w, &o, &h, NULL)) return 1;
    keel_net_client *c[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) { /* names are unique per host: a second "c" is refused */
        char name[8];
        snprintf(name, sizeof name, "c%d", i);
        keel_net_connect("127.0.0.1", keel_net_host_port(h), name, &c[i], NULL);
    }
    for (int r = 0; r < 400; r++) { /* join and take the snapshots */
        keel_net_host_service(h, NULL);
        for (int i = 0; i < CLIENTS; i++) keel_net_client_service(c[i], NULL);
    }
    for (int i = 0; i < CLIENTS; i++)
        if (!keel_net_client_joined(c[i])) {
            fprintf(stderr, "bench_net: client %d did not join: %s\n", i,
                    keel_net_client_reason(c[i]) ? keel_net_client_reason(c[i]) : "no reason");
            return 1;
        }
    double t_world = 0, t_net = 0;
    uint64_t wire0 = keel__net_host_stats(h).wire;
    for (int t = 0; t < TICKS; t++) {
        double t0 = now();
        for (int i = 0; i < N; i++) {
            keel_comp cp = { es[i], tr, 0 };
            keel_value v = { .type = KEEL_T_VEC3, .as.v = { i * 0.5 + t * 0.25, 1, -(double)t } };
            keel_set(w, cp, 0, &v, NULL, NULL);
        }
        keel_step(w, 1.0 / 60, NULL); /* a hosted world's step also runs its network tick: timed apart below */
        double t1 = now();
        t_world += t1 - t0;
        for (int i = 0; i < CLIENTS; i++) keel_net_client_service(c[i], NULL);
    }
    /* the network tick alone, on the same moving world */
    uint64_t wire1 = keel__net_host_stats(h).wire;
    double t_step_only = 0;
    for (int t = 0; t < TICKS; t++) {
        for (int i = 0; i < N; i++) {
            keel_comp cp = { es[i], tr, 0 };
            keel_value v = { .type = KEEL_T_VEC3, .as.v = { i * 0.5 + (t + TICKS) * 0.25, 1, 0 } };
            keel_set(w, cp, 0, &v, NULL, NULL);
        }
        double t0 = now();
        net_tick(h);
        t_net += now() - t0;
        for (int i = 0; i < CLIENTS; i++) keel_net_client_service(c[i], NULL);
    }
    keel__net_stats st = keel__net_host_stats(h);
    if (getenv("KEEL_BENCH_DEBUG"))
        fprintf(stderr, "resnapshots %llu packets %llu reason %s joined %d\n", (unsigned long long)st.resnapshots,
                (unsigned long long)st.packets, keel_net_client_reason(c[0]) ? keel_net_client_reason(c[0]) : "-",
                (int)keel_net_client_joined(c[0]));
    /* the world's own step without a host */
    keel_net_host_free(h);
    for (int t = 0; t < TICKS; t++) {
        double t0 = now();
        world_tick(w, es, tr, t);
        t_step_only += now() - t0;
    }
    (void)t_world;
    double bytes = (double)(wire1 - wire0) / TICKS / CLIENTS / N;
    row("net bytes/entity", bytes, 16, "bytes/entity/tick");
    row("net time/client", t_net / TICKS / CLIENTS * 1e3, t_step_only / TICKS * 1e3, "ms/tick");
    for (int i = 0; i < CLIENTS; i++) keel_net_client_free(c[i]);
    keel_world_free(w);
    free(es);
    keel_shutdown();
    return 0;
}
