/* bench_files.c — file benchmarks: cooked load against the YAML load, and save games of a played scene. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "keel.h"
#define BENCH_PROG "bench_files"
#include "bench.h"

#define N 100000

/* N entities, each with core:transform + core:mesh_renderer + core:audio_source, some fields authored. */
static keel_world *make_scene(void)
{
    keel_world *w = keel_world_new("Bench");
    keel_kind_id tr = keel_kind_find("core:transform"), mr = keel_kind_find("core:mesh_renderer"),
                 au = keel_kind_find("core:audio_source");
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    char name[32];
    for (int i = 0; i < N; i++) {
        keel_entity e;
        snprintf(name, sizeof name, "Entity %d", i);
        keel_status s = keel_spawn(w, name, KEEL_NO_ENTITY, NULL, &e, NULL, NULL);
        keel_comp c = { 0 };
        if (!s) s = keel_add(w, e, tr, &o, &c, NULL, NULL);
        if (s) die("spawn", s, NULL);
        set(w, c, "position", (keel_value){ .as.v = { i * 0.5, (i % 7) * 1.25, -i * 0.1 } });
        if ((s = keel_add(w, e, mr, &o, &c, NULL, NULL))) die("add", s, NULL);
        set(w, c, "metallic", (keel_value){ .as.f = (i % 10) * 0.1 });
        if ((s = keel_add(w, e, au, &o, &c, NULL, NULL))) die("add", s, NULL);
        set(w, c, "volume", (keel_value){ .as.f = 0.5 });
    }
    return w;
}

/* What a session of play does: moves 10%, destroys 1%, spawns 1% new, retunes 1%. */
static void play(keel_world *w)
{
    keel_kind_id tr = keel_kind_find("core:transform"), au = keel_kind_find("core:audio_source");
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    int i = 0;
    keel_entity next;
    for (keel_entity e = keel_next(w, 0); e; e = next, i++) {
        next = keel_next(w, e);
        keel_comp c;
        if (i % 10 == 0 && keel_get_comp(w, e, tr, 0, &c))
            set(w, c, "position", (keel_value){ .as.v = { i * 1.5, 2, 3 } });
        if (i % 100 == 1 && keel_get_comp(w, e, au, 0, &c)) set(w, c, "volume", (keel_value){ .as.f = 0.125 });
        if (i % 100 == 50) keel_destroy(w, e, NULL, NULL);
    }
    for (int k = 0; k < N / 100; k++) {
        keel_entity e;
        keel_comp c;
        keel_spawn(w, "Spawned", KEEL_NO_ENTITY, NULL, &e, NULL, NULL);
        keel_add(w, e, tr, &o, &c, NULL, NULL);
        set(w, c, "position", (keel_value){ .as.v = { k, k, k } });
    }
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

int main(void)
{
    keel_init();
    keel_diags d;
    keel_diags_init(&d);
    keel_load_opts lo = keel_load_opts_default();
    lo.limits.document_size = (size_t)1 << 30; /* the full scene is past the default limits */
    lo.limits.collection_length = (size_t)1 << 20;
    keel_world *src = make_scene();
    char *yaml = NULL;
    size_t ylen = 0;
    keel_status s = keel_scene_dump(src, &yaml, &ylen, &d);
    if (s) die("dump", s, &d);
    void *cooked = NULL;
    size_t clen = 0;
    if ((s = keel_cook(src, NULL, &cooked, &clen, &d))) die("cook", s, &d);
    keel_world_free(src);

    /* cooked load vs YAML load of the same scene */
    keel_world *w = NULL;
    double t0 = now();
    if ((s = keel_scene_parse(yaml, ylen, &lo, &w, &d))) die("parse", s, &d);
    double t_yaml = now() - t0;
    keel_world_free(w);
    t0 = now();
    if ((s = keel_cook_read(cooked, clen, &lo, &w, &d))) die("cook_read", s, &d);
    double t_cook = now() - t0;
    keel_world_free(w);
    printf("BENCH\tcooked load\t%.1f\t%.1f\tms\n", t_cook * 1e3, t_yaml * 1e3);
    printf("BENCH\tcooked size\t%zu\t%zu\tbytes\n", clen, ylen);

    /* save game of a played scene: the difference against writing the whole scene as YAML */
    if ((s = keel_scene_parse(yaml, ylen, &lo, &w, &d))) die("parse", s, &d);
    keel_baseline *base = keel_baseline_capture(w);
    play(w);
    char save_path[64], yaml_path[64];
    snprintf(save_path, sizeof save_path, "/tmp/keel_bench_%d.sav", (int)getpid());
    snprintf(yaml_path, sizeof yaml_path, "/tmp/keel_bench_%d.yaml", (int)getpid());
    keel_slot_info info = { .title = "bench", .play_seconds = 60 };
    t0 = now();
    if ((s = keel_persist_save(w, base, save_path, &info, &d))) die("persist_save", s, &d);
    double t_save = now() - t0;
    t0 = now();
    if ((s = keel_scene_save(w, yaml_path, &d))) die("scene_save", s, &d);
    double t_yaml_save = now() - t0;
    printf("BENCH\tsave game\t%.1f\t%.1f\tms\n", t_save * 1e3, t_yaml_save * 1e3);
    printf("BENCH\tsave game size\t%ld\t%ld\tbytes\n", file_size(save_path), file_size(yaml_path));
    keel_world_free(w);

    if ((s = keel_scene_parse(yaml, ylen, &lo, &w, &d))) die("parse", s, &d);
    t0 = now();
    if ((s = keel_persist_load(w, save_path, &d))) die("persist_load", s, &d);
    double t_load = now() - t0;
    printf("BENCH\tsave game load\t%.1f\t%.1f\tms\n", t_load * 1e3, t_yaml * 1e3);
    keel_world_free(w);

    /* play mode: play, the same play, stop; against what a game would do without it:
     * a baseline when play starts and a save-game apply to get back (both on the same scene) */
    if ((s = keel_scene_parse(yaml, ylen, &lo, &w, &d))) die("parse", s, &d);
    t0 = now();
    if ((s = keel_world_play(w, &d))) die("play", s, &d);
    double t_play = now() - t0;
    play(w);
    t0 = now();
    if ((s = keel_world_stop(w, &d))) die("stop", s, &d);
    t_play += now() - t0;
    keel_world_free(w);
    if ((s = keel_scene_parse(yaml, ylen, &lo, &w, &d))) die("parse", s, &d);
    t0 = now();
    keel_baseline *again = keel_baseline_capture(w);
    double t_base = now() - t0;
    keel_baseline_free(again);
    printf("BENCH\tplay+stop\t%.1f\t%.1f\tms\n", t_play * 1e3, (t_base + t_load) * 1e3);
    keel_world_free(w);

    unlink(save_path);
    unlink(yaml_path);
    keel_baseline_free(base);
    free(cooked);
    free(yaml);
    keel_diags_free(&d);
    keel_shutdown();
    return 0;
}
