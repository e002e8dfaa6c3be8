/* bench_core.c — C API benchmarks (spawn, iterate, churn, memory: two vec3 kinds as issue 12 measured, and
 * core:transform + a vec3 kind as the spawn row) beside plain C arrays, same process run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "keel.h"
#include "bench.h"
#include "model/world.h" /* the memory breakdown reads the world's tables */

#define N 100000
#define PASSES 100

typedef struct velocity { double v[3]; } velocity;

static volatile double sink;

/* Peak resident bytes so far (getrusage) and resident bytes now (/proc/self/statm; 0 elsewhere). */
static double peak_rss(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss * 1024.0;
}

static double rss_now(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    if (f) fclose(f);
    return (double)resident * 4096.0;
}

/* Where world w's bytes go, per entity (what its tables hold in use, not the allocator's slack):
 * printed as "MEM<TAB>item<TAB>bytes/entity" lines beside the memory rows. */
static void memory_breakdown(const char *label, const keel_world *w, size_t n)
{
    double ents = (double)w->ent_count * sizeof(keel__ent), uuid = (double)w->hash_cap * sizeof *w->hash;
    double entries = 0, rows = 0, data = 0, counters = 0;
    for (uint32_t i = 0; i < w->ent_count; i++)
        if (w->ents[i].alive) entries += (double)keel__block_cap(w->ents[i].block) * sizeof(keel__entry);
    for (size_t k = 0; k < w->store_count; k++) {
        const keel__store *st = &w->stores[k];
        rows += (double)st->count * sizeof(keel__row);
        data += (double)st->count * (double)st->record_size;
        if (st->counters) counters += (double)st->count * sizeof(uint64_t);
    }
    printf("MEM\t%s\tentity records %.1f, membership %.1f, store rows %.1f, counters %.1f, UUID index %.1f, "
           "records %.1f (bytes/entity)\n",
           label, ents / (double)n, entries / (double)n, rows / (double)n, counters / (double)n, uuid / (double)n,
           data / (double)n);
}

/* The memory row as the issue measured it: N entities of two vec3 kinds, in a child process so
 * its peak is its own. Writes keel's and the plain arrays' bytes per entity to fd. */
static void memory_two_vec3(keel_kind_id ka, keel_kind_id kb, int fd)
{
    keel_world *w = keel_world_new("mem");
    keel_entity *es = malloc(N * sizeof *es);
    /* the bench's handles: resident before, as the spawn row's (a non-zero fill: the compiler folds
     * malloc + a zero fill into calloc, whose pages stay unmapped until the spawns write them) */
    memset(es, 0xff, N * sizeof *es);
    double peak0 = peak_rss();
    keel_world_reserve(w, N);
    for (int i = 0; i < N; i++) {
        keel_spawn(w, "e", 0, NULL, &es[i], NULL, NULL);
        keel_add(w, es[i], ka, NULL, NULL, NULL, NULL);
        keel_add(w, es[i], kb, NULL, NULL, NULL, NULL);
    }
    double r[2] = { (peak_rss() - peak0) / N, -1 };
    memory_breakdown("memory", w, N);
    fflush(stdout);
    double rss0 = rss_now();
    velocity *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    for (int i = 0; i < N; i++) a[i] = b[i] = (velocity){ { 0, 0, 0 } };
    if (rss0 > 0) r[1] = (rss_now() - rss0) / N;
    sink = a[N / 2].v[0] + b[N / 3].v[1];
    if (write(fd, r, sizeof r) != (ssize_t)sizeof r) _exit(1);
    free(a);
    free(b);
    free(es);
    keel_world_free(w);
}

int main(void)
{
    if (keel_init()) return 2;
    static const keel_field_desc vel_fields[] = {
        { .key = "v", .type = KEEL_T_VEC3 },
    };
    static const keel_field_desc tag_fields[] = {
        { .key = "x", .type = KEEL_T_FLOAT },
    };
    keel_kind_desc kd = { 0 };
    kd.key = "bench:velocity";
    kd.version = 1;
    kd.fields = vel_fields;
    kd.field_count = 1;
    keel_kind_id kvel, ktag, ktr = keel_kind_find("core:transform");
    if (keel_kind_declare(&kd, &kvel, NULL)) return 2;
    kd.key = "bench:tag";
    kd.fields = tag_fields;
    if (keel_kind_declare(&kd, &ktag, NULL)) return 2;
    keel_kind_id kvel2;
    kd.key = "bench:velocity2";
    kd.fields = vel_fields;
    if (keel_kind_declare(&kd, &kvel2, NULL)) return 2;

    /* ---- memory, two vec3 kinds (the measure), before anything else grows the process ---- */
    double mem2[2] = { -1, -1 };
    {
        int fds[2];
        fflush(stdout);
        if (pipe(fds) == 0) {
            pid_t pid = fork();
            if (pid == 0) {
                close(fds[0]);
                memory_two_vec3(kvel, kvel2, fds[1]);
                _exit(0);
            }
            close(fds[1]);
            if (pid > 0 && read(fds[0], mem2, sizeof mem2) != (ssize_t)sizeof mem2) mem2[0] = mem2[1] = -1;
            close(fds[0]);
            if (pid > 0) waitpid(pid, NULL, 0);
        }
    }

    /* ---- spawn ---- */
    keel_world *w = keel_world_new("bench");
    keel_entity *es = malloc(N * sizeof *es);
    memset(es, 0xff, N * sizeof *es); /* the handles are the bench's, not the world's: resident before
                                        * (non-zero: a zero fill would be folded into calloc) */
    double peak0 = peak_rss();
    double t0 = now();
    keel_world_reserve(w, N); /* the baseline knows N too */
    for (int i = 0; i < N; i++) {
        keel_spawn(w, "e", 0, NULL, &es[i], NULL, NULL);
        keel_add(w, es[i], ktr, NULL, NULL, NULL, NULL);
        keel_add(w, es[i], kvel, NULL, NULL, NULL, NULL);
    }
    double keel_spawn_s = now() - t0;
    /* what the world grew by at its peak (the process's own start-up is not per entity) */
    double rss_per_entity = (peak_rss() - peak0) / N;
    memory_breakdown("memory (transform)", w, N);

    double rss0 = rss_now();
    t0 = now();
    keel_transform *ta = malloc(N * sizeof *ta);
    velocity *va = malloc(N * sizeof *va);
    for (int i = 0; i < N; i++) {
        ta[i] = (keel_transform){ { 0, 0, 0 }, { 0, 0, 0, 1 }, { 1, 1, 1 } };
        va[i] = (velocity){ { 0, 0, 0 } };
    }
    double base_spawn_s = now() - t0;
    double base_rss_per_entity = (rss_now() - rss0) / N; /* the same records in plain arrays */
    row("spawn (C)", keel_spawn_s * 1e9 / N, base_spawn_s * 1e9 / N, "ns/entity");

    /* ---- iterate ---- */
    for (int i = 0; i < N; i++) {
        keel_comp c;
        keel_get_comp(w, es[i], kvel, 0, &c);
        velocity *v = keel_record(w, c);
        v->v[0] = 1, v->v[1] = 2, v->v[2] = 3;
        va[i] = *v;
    }
    const double dt = 1.0 / 60.0;
    keel_kind_id qk[2] = { ktr, kvel };
    keel_query *q = keel_query_new(w, qk, 2);
    /* each side: one warm-up pass, then the best of three runs of PASSES passes (the machine is noisy).
     * Mode 0 runs over contiguous records when the storages are aligned (they are here); mode 1
     * over the record pointer columns, what a query over unaligned storages takes. */
    for (int mode = 0; mode < 2; mode++) {
        double keel_iter_s = 1e30, base_iter_s = 1e30;
        for (int rep = 0; rep < 4; rep++) {
            int passes = rep == 0 ? 1 : PASSES;
            t0 = now();
            for (int p = 0; p < passes; p++) {
                size_t n = keel_query_update(q);
                /* aligned: contiguous runs of records, like the plain arrays */
                if (mode == 0 && keel_query_aligned(q)) {
                    void *base[2];
                    size_t m;
                    for (size_t c = 0; (m = keel_query_chunk(q, c, base, NULL)) != 0; c++) {
                        keel_transform *restrict t = base[0];
                        const velocity *restrict vel = base[1];
                        for (size_t r = 0; r < m; r++) {
                            const velocity v = vel[r];
                            t[r].position[0] += v.v[0] * dt;
                            t[r].position[1] += v.v[1] * dt;
                            t[r].position[2] += v.v[2] * dt;
                        }
                    }
                    continue;
                }
                keel_transform **pos = (keel_transform **)keel_query_column(q, 0);
                velocity **vel = (velocity **)keel_query_column(q, 1);
                for (size_t r = 0; r < n; r++) {
                    keel_transform *t = pos[r];
                    const velocity v = *vel[r];
                    t->position[0] += v.v[0] * dt;
                    t->position[1] += v.v[1] * dt;
                    t->position[2] += v.v[2] * dt;
                }
            }
            double k = now() - t0;
            t0 = now();
            for (int p = 0; p < passes; p++) {
                /* a pass is a frame: without this barrier the compiler fuses the passes into
                 * one sweep (seen at -O3: half the time), which no real frame loop allows */
                __asm__ volatile("" ::: "memory");
                for (size_t r = 0; r < N; r++) {
                    const velocity v = va[r];
                    ta[r].position[0] += v.v[0] * dt;
                    ta[r].position[1] += v.v[1] * dt;
                    ta[r].position[2] += v.v[2] * dt;
                }
            }
            double b = now() - t0;
            if (rep > 0 && k < keel_iter_s) keel_iter_s = k;
            if (rep > 0 && b < base_iter_s) base_iter_s = b;
        }
        sink = ta[N / 2].position[0];
        row(mode == 0 ? "iterate (C)" : "iterate cols (C)", keel_iter_s * 1e9 / ((double)N * PASSES),
            base_iter_s * 1e9 / ((double)N * PASSES), "ns/entity-pass");
    }

    /* ---- churn ---- */
    t0 = now();
    for (int i = 0; i < N; i++) {
        keel_add(w, es[i], ktag, NULL, NULL, NULL, NULL);
        keel_remove(w, es[i], "bench:tag", KEEL_SLOT_AUTO, NULL, NULL);
    }
    double churn_s = now() - t0;
    row("churn (C)", churn_s * 1e9 / (2.0 * N), -1, "ns/op");
    row("memory", mem2[0], mem2[1], "bytes/entity");
    row("memory (transform)", rss_per_entity, rss0 > 0 ? base_rss_per_entity : -1, "bytes/entity");

    /* ---- transfer: a 10k-entity subtree (a root, 100 groups of 99) moved between two worlds,
     * against duplicating the same subtree (a move must cost no more than a copy) ---- */
    {
        enum { GROUPS = 100, PER = 99, SUB = 1 + GROUPS * (1 + PER), ROUNDS = 5 };
        keel_world *src = keel_world_new("src"), *dst = keel_world_new("dst");
        double best_move = 1e9, best_copy = 1e9;
        for (int r = 0; r < ROUNDS; r++) {
            keel_entity top;
            keel_spawn(src, "top", 0, NULL, &top, NULL, NULL);
            for (int g = 0; g < GROUPS; g++) {
                keel_entity grp;
                keel_spawn(src, "group", top, NULL, &grp, NULL, NULL);
                for (int i = 0; i < PER; i++) {
                    keel_entity e;
                    keel_spawn(src, "e", grp, NULL, &e, NULL, NULL);
                    keel_add(src, e, ktr, NULL, NULL, NULL, NULL);
                    keel_add(src, e, kvel, NULL, NULL, NULL, NULL);
                }
            }
            keel_entity copy, moved;
            t0 = now();
            keel_duplicate(src, top, 0, &copy, NULL, NULL);
            double c = now() - t0;
            keel_destroy(src, copy, NULL, NULL); /* only the copy's root: its subtree stays, off the clock */
            t0 = now();
            keel_transfer(src, top, dst, 0, &moved, NULL);
            double m = now() - t0;
            if (c < best_copy) best_copy = c;
            if (m < best_move) best_move = m;
            keel_world_free(dst);
            dst = keel_world_new("dst");
        }
        row("transfer", best_move * 1e9 / SUB, best_copy * 1e9 / SUB, "ns/entity");
        keel_world_free(src);
        keel_world_free(dst);
    }

    keel_query_free(q);
    keel_world_free(w);
    free(es);
    free(ta);
    free(va);
    keel_shutdown();
    return 0;
}
