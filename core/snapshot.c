/* snapshot.c — the immutable renderer snapshot: drawables, lights, camera, ambient. */
#include "world_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct kinds {
    keel_kind_id mesh, point, spot, dir, camera, settings;
} kinds;

static bool field(keel_kind_id k, const void *rec, const char *name, keel_value *out)
{
    int f = keel_kind_field(k, name);
    if (f < 0) return false;
    keel__record_get(k, rec, f, out);
    return true;
}

static double num(keel_kind_id k, const void *rec, const char *name, double def)
{
    keel_value v;
    if (!field(k, rec, name, &v)) return def;
    return v.type == KEEL_T_INT || v.type == KEEL_T_ENUM ? (double)v.as.i : v.as.f;
}

static void vec4(keel_kind_id k, const void *rec, const char *name, double out[4])
{
    keel_value v;
    if (field(k, rec, name, &v)) memcpy(out, v.as.v, 4 * sizeof *out);
}

/* The live, enabled, loaded component of kind k on entity i, or NULL. */
static const void *comp(const keel_world *w, uint32_t i, keel_kind_id k)
{
    if (!k) return NULL;
    keel__entry *m = keel__entry_find(&w->ents[i], k, KEEL_SLOT_AUTO);
    return m && m->enabled ? keel__store_rec(&w->stores[k], m->row) : NULL;
}

static void push_light(keel_snapshot *s, size_t *cap, const keel_snap_light *l)
{
    if (s->light_count == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        s->lights = keel__xrealloc(s->lights, *cap * sizeof *s->lights);
    }
    s->lights[s->light_count++] = *l;
}

static void light(const keel_world *w, keel_entity e, keel_kind_id k, keel_light_type t, keel_snapshot *s,
                  size_t *cap)
{
    const void *rec = comp(w, (uint32_t)e, k);
    if (!rec) return;
    keel_snap_light l;
    memset(&l, 0, sizeof l);
    l.entity = w->ents[(uint32_t)e].uuid;
    l.type = t;
    keel_world_matrix(w, e, l.world);
    vec4(k, rec, "color", l.color);
    l.intensity = num(k, rec, "intensity", 0);
    l.range = num(k, rec, "range", 0);
    l.inner_angle = num(k, rec, "inner_angle", 0);
    l.outer_angle = num(k, rec, "outer_angle", 0);
    push_light(s, cap, &l);
}

keel_snapshot *keel_snapshot_extract(const keel_world *w)
{
    keel_snapshot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    kinds k = { keel_kind_find("core:mesh_renderer"), keel_kind_find("core:point_light"),
                keel_kind_find("core:spot_light"), keel_kind_find("core:directional_light"),
                keel_kind_find("core:camera"), keel_kind_find("core:world_settings") };
    const void *ws = comp(w, 0, k.settings);
    if (ws) {
        vec4(k.settings, ws, "ambient", s->ambient);
    } else if (k.settings) {
        /* no settings on the root: the kind's declared default */
        size_t size = keel_kind_record_size(k.settings);
        void *def = calloc(1, size ? size : 1);
        if (def) {
            keel__record_init(k.settings, def);
            vec4(k.settings, def, "ambient", s->ambient);
            keel__record_fini(k.settings, def);
            free(def);
        }
    }
    size_t dcap = 0, lcap = 0;
    /* pre-order, skipping a disabled entity's whole subtree */
    keel_entity e = keel_next(w, 0);
    while (e) {
        uint32_t i = (uint32_t)e;
        if (!w->ents[i].enabled) {
            e = keel__next_after_subtree(w, i);
            continue;
        }
        const void *mr = comp(w, i, k.mesh);
        keel_value v;
        if (mr && field(k.mesh, mr, "visible", &v) && v.as.b) {
            if (s->drawable_count == dcap) {
                dcap = dcap ? dcap * 2 : 16;
                s->drawables = keel__xrealloc(s->drawables, dcap * sizeof *s->drawables);
            }
            keel_snap_drawable *dr = &s->drawables[s->drawable_count++];
            memset(dr, 0, sizeof *dr);
            dr->entity = w->ents[i].uuid;
            keel_world_matrix(w, e, dr->world);
            if (field(k.mesh, mr, "mesh", &v)) dr->mesh = v.as.u;
            if (field(k.mesh, mr, "material", &v)) dr->material = v.as.u;
            vec4(k.mesh, mr, "color", dr->color);
            dr->metallic = num(k.mesh, mr, "metallic", 0);
            dr->roughness = num(k.mesh, mr, "roughness", 0);
            if (field(k.mesh, mr, "casts_shadow", &v)) dr->casts_shadow = v.as.b;
        }
        light(w, e, k.point, KEEL_LIGHT_POINT, s, &lcap);
        light(w, e, k.spot, KEEL_LIGHT_SPOT, s, &lcap);
        light(w, e, k.dir, KEEL_LIGHT_DIRECTIONAL, s, &lcap);
        const void *cam = comp(w, i, k.camera);
        if (cam && !s->has_camera) {
            s->has_camera = true;
            s->camera_entity = w->ents[i].uuid;
            keel_world_matrix(w, e, s->camera_world);
            s->camera_projection = (int)num(k.camera, cam, "projection", 0);
            s->fov = num(k.camera, cam, "fov", 60);
            s->near_plane = num(k.camera, cam, "near", 0.1);
            s->far_plane = num(k.camera, cam, "far", 1000);
        }
        e = keel_next(w, e);
    }
    return s;
}

void keel_snapshot_free(keel_snapshot *s)
{
    if (!s) return;
    free(s->drawables);
    free(s->lights);
    free(s);
}
