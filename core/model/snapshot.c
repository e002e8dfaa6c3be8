/* snapshot.c — the immutable renderer snapshot: drawables, lights, camera, ambient. */
#include "model/world.h"
#include "model/hierarchy.h"
#include "model/record.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>

/* Field indices, resolved once per extract (-1: the kind has no such field). */
typedef struct light_kind {
    keel_kind_id k;
    keel_light_type type;
    int color, intensity, range, inner_angle, outer_angle;
} light_kind;

typedef struct kinds {
    keel_kind_id mesh, camera, settings;
    int visible, mesh_f, material, color, metallic, roughness, casts_shadow;
    int projection, fov, near_plane, far_plane;
    light_kind lights[3];
} kinds;

static bool field(keel_kind_id k, const void *rec, int f, keel_value *out)
{
    if (f < 0) return false;
    keel__record_get(k, rec, f, out);
    return true;
}

static double num(keel_kind_id k, const void *rec, int f, double def)
{
    keel_value v;
    if (!field(k, rec, f, &v)) return def;
    return v.type == KEEL_T_INT || v.type == KEEL_T_ENUM ? (double)v.as.i : v.as.f;
}

static void vec4(keel_kind_id k, const void *rec, int f, double out[4])
{
    keel_value v;
    if (field(k, rec, f, &v)) memcpy(out, v.as.v, 4 * sizeof *out);
}

/* The live, enabled, loaded component of kind k on entity i, or NULL. */
static const void *comp(const keel_world *w, uint32_t i, keel_kind_id k)
{
    if (!k) return NULL;
    keel__entry *m = keel__entry_find(w, &w->ents[i], k, KEEL_SLOT_AUTO);
    return m && m->enabled ? keel__store_rec(&w->stores[k], m->row) : NULL;
}

static void push_light(keel_snapshot *s, size_t *cap, const keel_snap_light *l)
{
    KEEL__VEC_RESERVE(s->lights, s->light_count, *cap, 1, 8);
    s->lights[s->light_count++] = *l;
}

static void light(const keel_world *w, keel_entity e, const light_kind *lk, keel_snapshot *s, size_t *cap)
{
    keel_kind_id k = lk->k;
    const void *rec = comp(w, (uint32_t)e, k);
    if (!rec) return;
    keel_snap_light l;
    memset(&l, 0, sizeof l);
    l.entity = w->ents[(uint32_t)e].uuid;
    l.type = lk->type;
    keel_world_matrix(w, e, l.world);
    vec4(k, rec, lk->color, l.color);
    l.intensity = num(k, rec, lk->intensity, 0);
    l.range = num(k, rec, lk->range, 0);
    l.inner_angle = num(k, rec, lk->inner_angle, 0);
    l.outer_angle = num(k, rec, lk->outer_angle, 0);
    push_light(s, cap, &l);
}

static light_kind light_kind_of(const char *key, keel_light_type type)
{
    keel_kind_id k = keel_kind_find(key);
    return (light_kind){ k, type, keel_kind_field(k, "color"), keel_kind_field(k, "intensity"),
                         keel_kind_field(k, "range"), keel_kind_field(k, "inner_angle"),
                         keel_kind_field(k, "outer_angle") };
}

static kinds kinds_resolve(void)
{
    kinds k;
    k.mesh = keel_kind_find("core:mesh_renderer");
    k.visible = keel_kind_field(k.mesh, "visible");
    k.mesh_f = keel_kind_field(k.mesh, "mesh");
    k.material = keel_kind_field(k.mesh, "material");
    k.color = keel_kind_field(k.mesh, "color");
    k.metallic = keel_kind_field(k.mesh, "metallic");
    k.roughness = keel_kind_field(k.mesh, "roughness");
    k.casts_shadow = keel_kind_field(k.mesh, "casts_shadow");
    k.camera = keel_kind_find("core:camera");
    k.projection = keel_kind_field(k.camera, "projection");
    k.fov = keel_kind_field(k.camera, "fov");
    k.near_plane = keel_kind_field(k.camera, "near");
    k.far_plane = keel_kind_field(k.camera, "far");
    k.settings = keel_kind_find("core:world_settings");
    k.lights[0] = light_kind_of("core:point_light", KEEL_LIGHT_POINT);
    k.lights[1] = light_kind_of("core:spot_light", KEEL_LIGHT_SPOT);
    k.lights[2] = light_kind_of("core:directional_light", KEEL_LIGHT_DIRECTIONAL);
    return k;
}

keel_snapshot *keel_snapshot_extract(const keel_world *w)
{
    keel_snapshot *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    kinds k = kinds_resolve();
    int ambient = keel_kind_field(k.settings, "ambient");
    const void *ws = comp(w, 0, k.settings);
    if (ws) {
        vec4(k.settings, ws, ambient, s->ambient);
    } else if (k.settings) {
        /* no settings on the root: the kind's declared default */
        size_t size = keel_kind_record_size(k.settings);
        void *def = calloc(1, size ? size : 1);
        if (def) {
            keel__record_init(k.settings, def);
            vec4(k.settings, def, ambient, s->ambient);
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
        if (mr && field(k.mesh, mr, k.visible, &v) && v.as.b) {
            KEEL__VEC_RESERVE(s->drawables, s->drawable_count, dcap, 1, 16);
            keel_snap_drawable *dr = &s->drawables[s->drawable_count++];
            memset(dr, 0, sizeof *dr);
            dr->entity = w->ents[i].uuid;
            keel_world_matrix(w, e, dr->world);
            if (field(k.mesh, mr, k.mesh_f, &v)) dr->mesh = v.as.u;
            if (field(k.mesh, mr, k.material, &v)) dr->material = v.as.u;
            vec4(k.mesh, mr, k.color, dr->color);
            dr->metallic = num(k.mesh, mr, k.metallic, 0);
            dr->roughness = num(k.mesh, mr, k.roughness, 0);
            if (field(k.mesh, mr, k.casts_shadow, &v)) dr->casts_shadow = v.as.b;
        }
        for (size_t l = 0; l < 3; l++) light(w, e, &k.lights[l], s, &lcap);
        const void *cam = comp(w, i, k.camera);
        if (cam && !s->has_camera) {
            s->has_camera = true;
            s->camera_entity = w->ents[i].uuid;
            keel_world_matrix(w, e, s->camera_world);
            s->camera_projection = (int)num(k.camera, cam, k.projection, 0);
            s->fov = num(k.camera, cam, k.fov, 60);
            s->near_plane = num(k.camera, cam, k.near_plane, 0.1);
            s->far_plane = num(k.camera, cam, k.far_plane, 1000);
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
