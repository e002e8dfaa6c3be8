/* bench_merge.c — `keel merge` of three N-entity scenes, 1% of fields changed on each side,
 * against loading one of them (design/merge.md's row; target: at most 3x). */
#include <stdio.h>
#include <stdlib.h>

#include "keel_merge.h"
#define BENCH_PROG "bench_merge"
#include "bench.h"

#ifndef N
#define N 100000
#endif

static char *dump(const keel_world *w, size_t *len)
{
    char *text = NULL;
    keel_status s = keel_scene_dump(w, &text, len, NULL);
    if (s) die("dump", s, NULL);
    return text;
}

static keel_world *base_scene(void)
{
    keel_world *w = keel_world_new("Bench");
    keel_kind_id tr = keel_kind_find("core:transform"), mr = keel_kind_find("core:mesh_renderer");
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    char name[32];
    for (int i = 0; i < N; i++) {
        keel_entity e;
        snprintf(name, sizeof name, "Entity %d", i);
        keel_status s = keel_spawn(w, name, KEEL_NO_ENTITY, NULL, &e, NULL, NULL);
        keel_comp c = { 0 };
        if (!s) s = keel_add(w, e, tr, &o, &c, NULL, NULL);
        if (s) die("spawn", s, NULL);
        set(w, c, "position", (keel_value){ .as.v = { i * 0.5, (i % 7) * 1.25, 0 } });
        if ((s = keel_add(w, e, mr, &o, &c, NULL, NULL))) die("add", s, NULL);
        set(w, c, "metallic", (keel_value){ .as.f = (i % 10) * 0.1 });
    }
    return w;
}

/* A side: the base with every 100th entity's `field` of `kind` changed (from entity `offset`). */
static char *side(const char *base, size_t blen, const keel_load_opts *lo, const char *kind, const char *field,
                  int offset, size_t *len)
{
    keel_world *w = NULL;
    keel_status s = keel_scene_parse(base, blen, lo, &w, NULL);
    if (s) die("parse", s, NULL);
    keel_kind_id k = keel_kind_find(kind);
    int i = 0;
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e), i++) {
        keel_comp c;
        if (i % 100 != offset || !keel_get_comp(w, e, k, 0, &c)) continue;
        if (k == keel_kind_find("core:transform")) set(w, c, field, (keel_value){ .as.v = { 1, 2, 3 } });
        else set(w, c, field, (keel_value){ .as.f = 0.75 });
    }
    char *text = dump(w, len);
    keel_world_free(w);
    return text;
}

int main(void)
{
    keel_init();
    keel_limits lim = keel_limits_default();
    lim.document_size = (size_t)1 << 30;
    keel_load_opts lo = keel_load_opts_default();
    lo.limits = lim;
    size_t lens[3];
    char *texts[3];
    keel_world *base = base_scene();
    texts[0] = dump(base, &lens[0]);
    keel_world_free(base);
    texts[1] = side(texts[0], lens[0], &lo, "core:transform", "position", 3, &lens[1]);
    texts[2] = side(texts[0], lens[0], &lo, "core:mesh_renderer", "metallic", 7, &lens[2]);
    keel_diags d;
    keel_diags_init(&d);
    keel_world *w = NULL;
    double t0 = now();
    keel_status st = keel_scene_parse(texts[0], lens[0], &lo, &w, &d);
    double t_load = now() - t0;
    if (st) die("load", st, &d);
    keel_world_free(w);
    const char *names[3] = { "base", "ours", "theirs" };
    char *out = NULL;
    size_t olen = 0, nconf = 0;
    t0 = now();
    st = keel_merge_scenes((const char *const *)texts, lens, names, &lim, &out, &olen, &nconf, &d);
    double t_merge = now() - t0;
    if (st || nconf) die("merge", st ? st : KEEL_CONFLICT, &d);
    row("merge", t_merge * 1e3, t_load * 1e3, "ms");
    free(out);
    for (int s = 0; s < 3; s++) free(texts[s]);
    keel_diags_free(&d);
    keel_shutdown();
    return 0;
}
