/* bench_save_async.c — saves off the frame (design/saving.md): the caller's stall in a save job
 * against the synchronous save of the same 100,000-entity scene, the job's whole time (call to
 * keel_job_wait), and a save game's stall after 20% of the entities moved. Each side runs three
 * times and keeps its best (the machine is noisy); the files are fsynced like any save. The
 * world keeps its capture's memory between saves (model/capture.c): `save stall 1st` is the
 * world's first save alone, which still pays for fresh pages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "keel.h"
#define BENCH_PROG "bench_save_async"
#include "bench.h"

#define N 100000
#define RUNS 3

static keel_world *make_scene(void)
{
    keel_world *w = keel_world_new("Bench");
    keel_kind_id tr = keel_kind_find("core:transform"), mr = keel_kind_find("core:mesh_renderer");
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    char name[32];
    for (int i = 0; i < N; i++) {
        keel_entity e;
        keel_comp c = { 0 };
        snprintf(name, sizeof name, "Entity %d", i);
        keel_status s = keel_spawn(w, name, KEEL_NO_ENTITY, NULL, &e, NULL, NULL);
        if (!s) s = keel_add(w, e, tr, &o, &c, NULL, NULL);
        if (s) die("spawn", s, NULL);
        set(w, c, "position", (keel_value){ .as.v = { i * 0.5, (i % 7) * 1.25, -i * 0.1 } });
        if ((s = keel_add(w, e, mr, &o, &c, NULL, NULL))) die("add", s, NULL);
    }
    return w;
}

static double min2(double a, double b)
{
    return a < b ? a : b;
}

int main(void)
{
    keel_status s = keel_init();
    if (s) die("keel_init", s, NULL);
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = make_scene();
    char sync_path[64], async_path[64];
    snprintf(sync_path, sizeof sync_path, "/tmp/keel_bench_sync_%d.yaml", (int)getpid());
    snprintf(async_path, sizeof async_path, "/tmp/keel_bench_async_%d.yaml", (int)getpid());
    double t_sync = 1e30, t_stall = 1e30, t_job = 1e30, t_first = 0;
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        if ((s = keel_scene_save(w, sync_path, &d))) die("keel_scene_save", s, &d);
        t_sync = min2(t_sync, now() - t0);
        keel_job *job = NULL;
        t0 = now();
        if ((s = keel_save_async(w, async_path, &job, &d))) die("keel_save_async", s, &d);
        double t1 = now();
        if ((s = keel_job_wait(job, &d))) die("keel_job_wait", s, &d);
        double t2 = now();
        t_stall = min2(t_stall, t1 - t0);
        if (r == 0) t_first = t1 - t0;
        t_job = min2(t_job, t2 - t0);
        keel_job_free(job);
    }
    row("save stall", t_stall * 1e3, t_sync * 1e3, "ms");
    row("save stall 1st", t_first * 1e3, t_sync * 1e3, "ms");
    row("save async", t_job * 1e3, t_sync * 1e3, "ms");

    /* a save game after 20% of the entities moved */
    keel_baseline *base = keel_baseline_capture(w);
    keel_kind_id tr = keel_kind_find("core:transform");
    int i = 0;
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e), i++) {
        keel_comp c;
        if (i % 5 == 0 && keel_get_comp(w, e, tr, 0, &c))
            set(w, c, "position", (keel_value){ .as.v = { i, 2, 3 } });
    }
    char slot_sync[64], slot_async[64];
    snprintf(slot_sync, sizeof slot_sync, "/tmp/keel_bench_sync_%d.sav", (int)getpid());
    snprintf(slot_async, sizeof slot_async, "/tmp/keel_bench_async_%d.sav", (int)getpid());
    keel_slot_info info = { .title = "bench" };
    double p_sync = 1e30, p_stall = 1e30;
    for (int r = 0; r < RUNS; r++) {
        double t0 = now();
        if ((s = keel_persist_save(w, base, slot_sync, &info, &d))) die("keel_persist_save", s, &d);
        p_sync = min2(p_sync, now() - t0);
        keel_job *job = NULL;
        t0 = now();
        if ((s = keel_persist_save_async(w, base, slot_async, &info, &job, &d)))
            die("keel_persist_save_async", s, &d);
        p_stall = min2(p_stall, now() - t0);
        if ((s = keel_job_wait(job, &d))) die("keel_job_wait", s, &d);
        keel_job_free(job);
    }
    row("persist stall", p_stall * 1e3, p_sync * 1e3, "ms");
    unlink(sync_path);
    unlink(async_path);
    unlink(slot_sync);
    unlink(slot_async);
    keel_baseline_free(base);
    keel_world_free(w);
    keel_diags_free(&d);
    keel_shutdown();
    return 0;
}
