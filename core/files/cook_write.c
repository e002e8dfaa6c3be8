/* cook_write.c — keel_cook: a world written as a cooked binary scene (see COOKED.md). */
#include "base/util.h"
#include "files/features.h"
#include "base/bytes.h"
#include "base/map.h"
#include "base/vec.h"
#include "model/entity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "files/cook.h"

/* ---------------------------------------------------------------- writing */

/* The string table: deduplicated by an open-addressing hash, indices in first-use order. */
typedef struct strtab {
    char **items;
    size_t count, cap;
    uint32_t *slots; /* index + 1; 0 = empty */
    size_t nslots;
} strtab;

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static void strtab_rehash(strtab *t, size_t nslots)
{
    free(t->slots);
    t->slots = keel__xcalloc(nslots, sizeof *t->slots);
    t->nslots = nslots;
    for (size_t i = 0; i < t->count; i++) {
        size_t h = (size_t)(str_hash(t->items[i]) & (nslots - 1));
        while (t->slots[h]) h = (h + 1) & (nslots - 1);
        t->slots[h] = (uint32_t)(i + 1);
    }
}

static uint32_t strtab_intern(strtab *t, const char *s)
{
    if (!s) s = "";
    if ((t->count + 1) * 2 > t->nslots) strtab_rehash(t, t->nslots ? t->nslots * 2 : 1024);
    size_t h = (size_t)(str_hash(s) & (t->nslots - 1));
    while (t->slots[h]) {
        uint32_t i = t->slots[h] - 1;
        if (strcmp(t->items[i], s) == 0) return i;
        h = (h + 1) & (t->nslots - 1);
    }
    KEEL__VEC_RESERVE(t->items, t->count, t->cap, 1, 256);
    t->items[t->count] = keel__strdup(s);
    t->slots[h] = (uint32_t)(t->count + 1);
    return (uint32_t)t->count++;
}

static void strtab_free(strtab *t)
{
    for (size_t i = 0; i < t->count; i++) free(t->items[i]);
    free(t->items);
    free(t->slots);
}

static bool kind_cooked(keel_kind_id k)
{
    const keel_kind_desc *desc = keel_kind_describe(k);
    return desc && !(desc->flags & (KEEL_KIND_NOSAVE | KEEL_KIND_EDITOR_ONLY));
}

/* One component: header then its saved fields under field-key string indices. */
static void cook_component(const keel_world *w, keel_entity owner, uint32_t owner_ix,
                           const keel_member *m, const char *path, const keel_assets *assets,
                           strtab *st, keel__buf *b, keel_diags *d)
{
    const keel_kind_desc *desc = keel_kind_describe(m->kind);
    keel_comp c = { owner, m->kind, m->slot };
    keel__buf_u32(b, owner_ix);
    keel__buf_u32(b, strtab_intern(st, m->key));
    keel__buf_u32(b, (uint32_t)m->version);
    keel__buf_u32(b, m->slot);
    keel__buf_u8(b, m->enabled ? 1 : 0);
    size_t count_at = b->len;
    keel__buf_u32(b, 0);
    uint32_t nfields = 0;
    for (size_t f = 0; f < desc->field_count; f++) {
        const keel_field_desc *fd = &desc->fields[f];
        if (fd->flags & (KEEL_FIELD_TRANSIENT | KEEL_FIELD_RUNTIME)) continue; /* not part of a scene */
        keel_value v;
        if (keel_get(w, c, (int)f, &v, d) != KEEL_OK) continue;
        keel__buf_u32(b, strtab_intern(st, fd->key));
        keel__buf_u8(b, (uint8_t)fd->type);
        nfields++;
        switch (fd->type) {
        case KEEL_T_BOOL: keel__buf_u8(b, v.as.b ? 1 : 0); break;
        case KEEL_T_INT: keel__buf_u64(b, (uint64_t)v.as.i); break;
        case KEEL_T_FLOAT: keel__buf_f64(b, v.as.f); break;
        case KEEL_T_VEC2: case KEEL_T_VEC3: case KEEL_T_VEC4: case KEEL_T_QUAT: case KEEL_T_COLOR:
            for (int i = 0; i < keel_type_width(fd->type); i++) keel__buf_f64(b, v.as.v[i]);
            break;
        case KEEL_T_ENUM: {
            const char *name = (v.as.i >= 0 && (size_t)v.as.i < fd->choice_count) ? fd->choices[v.as.i] : "";
            keel__buf_u32(b, strtab_intern(st, name));
            break;
        }
        case KEEL_T_STRING: keel__buf_u32(b, strtab_intern(st, v.as.s)); break;
        case KEEL_T_ASSET:
        case KEEL_T_ENTITY: {
            keel_uuid u = v.nil ? (keel_uuid){ { 0 } } : v.as.u;
            keel__buf_bytes(b, u.bytes, 16);
            if (keel_uuid_is_nil(u)) break;
            char text[37];
            keel_uuid_format(u, text);
            if (fd->type == KEEL_T_ENTITY && !keel_find(w, u))
                KEEL_ERROR(d, KEEL_NOT_FOUND, path, "%s.%s refers to entity %s, which is not in the scene",
                           m->key, fd->key, text);
            else if (fd->type == KEEL_T_ASSET && !assets)
                KEEL_ERROR(d, KEEL_NOT_FOUND, path,
                           "%s.%s refers to asset %s but no asset manifest was given", m->key, fd->key, text);
            else if (fd->type == KEEL_T_ASSET && !keel_assets_has(assets, u))
                KEEL_ERROR(d, KEEL_NOT_FOUND, path, "%s.%s refers to asset %s, which is not in the manifest",
                           m->key, fd->key, text);
            break;
        }
        default: break;
        }
    }
    keel__put_u32(b->p + count_at, nfields);
}

/* A cooked kind that requires a kind cooking drops would make a file keel_cook_read refuses. */
static bool requires_dropped(const keel_world *w, keel_entity e, keel_kind_id k, const char *path, keel_diags *d)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    for (size_t r = 0; r < kd->requires_count; r++) {
        keel_kind_id rk = keel_kind_find(kd->requires[r]);
        if (!rk || kind_cooked(rk)) continue;
        const char *why = (keel_kind_describe(rk)->flags & KEEL_KIND_EDITOR_ONLY) ? "editor_only" : "nosave";
        char *who = keel__entity_label(w, (uint32_t)e);
        KEEL_ERROR(d, KEEL_INVALID_OPERATION, path, "%s: %s requires %s, which is %s: cooking drops it", who, kd->key,
                   kd->requires[r], why);
        free(who);
        return true;
    }
    return false;
}

static void cook_members(const keel_world *w, keel_entity e, uint32_t owner_ix, const char *prefix,
                         const keel_assets *assets, strtab *st, keel__buf *b, uint32_t *ncomp, keel_diags *d)
{
    size_t n = keel_member_count(w, e);
    for (size_t i = 0; i < n; i++) {
        keel_member m;
        if (!keel_member_at(w, e, i, &m)) continue;
        char path[96];
        snprintf(path, sizeof path, "%s.components[%zu]", prefix, i);
        if (!m.loaded) {
            keel_kind_id k = keel_kind_find(m.key); /* declared, but the file's version is newer */
            if (k)
                KEEL_ERROR(d, KEEL_UNSUPPORTED, path, "%s is written in version %d, newer than the declared %d: "
                           "it is kept unknown and cannot be cooked", m.key, m.version, keel_kind_describe(k)->version);
            else
                KEEL_ERROR(d, KEEL_UNSUPPORTED, path,
                           "%s is not declared: an unknown component cannot be cooked", m.key);
            continue;
        }
        if (!kind_cooked(m.kind)) continue;
        if (requires_dropped(w, e, m.kind, path, d)) continue;
        cook_component(w, e, owner_ix, &m, path, assets, st, b, d);
        (*ncomp)++;
    }
}

keel_status keel_cook(const keel_world *w, const keel_assets *assets, void **out, size_t *len, keel_diags *d)
{
    if (out) *out = NULL;
    if (len) *len = 0;
    if (!w || !out || !len) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_cook: NULL argument");
    if (keel_world_in_callback(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "keel_cook refuses while a callback transaction is open");
    keel_diags local;
    keel_diags_init(&local);
    strtab st = { 0 };
    keel__buf scene = { 0 }, ents = { 0 }, comps = { 0 }, strs = { 0 };
    keel__map map = { 0 }; /* entity handle -> cooked index */
    keel__map_reserve(&map, keel_world_entity_count(w));

    /* scene */
    keel_uuid su = keel_world_uuid(w);
    keel__buf_bytes(&scene, su.bytes, 16);
    keel__buf_u32(&scene, strtab_intern(&st, keel_world_name(w)));
    const keel_grid *g = keel_world_grid(w);
    keel__buf_u8(&scene, g->enabled ? 1 : 0);
    for (int i = 0; i < 3; i++) keel__buf_f64(&scene, g->origin[i]);
    for (int i = 0; i < 4; i++) keel__buf_f64(&scene, g->orientation[i]);
    keel__buf_f64(&scene, g->base_spacing);
    keel__buf_u64(&scene, (uint64_t)g->major_line_every);
    const double *look[] = { g->minor_color, g->major_color, g->u_color, g->v_color };
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 4; i++) keel__buf_f64(&scene, look[c][i]);
    keel__buf_f64(&scene, g->fade);
    keel__buf_u8(&scene, (uint8_t)g->display);

    /* entities (hierarchy pre-order, so a parent always precedes its children) */
    uint32_t count = 0, ncomp = 0;
    cook_members(w, keel_world_root(w), 0, "root", assets, &st, &comps, &ncomp, &local);
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e), count++) {
        keel__map_put(&map, e, count);
        keel_uuid u = keel_entity_uuid(w, e);
        keel__buf_bytes(&ents, u.bytes, 16);
        keel__buf_u32(&ents, strtab_intern(&st, keel_entity_name(w, e)));
        keel_entity p = keel_entity_parent(w, e);
        keel__buf_u32(&ents, p ? keel__map_get_or(&map, p, COOK_NONE) : COOK_NONE);
        keel__buf_u8(&ents, keel_entity_enabled(w, e) ? 1 : 0);
        char prefix[40];
        snprintf(prefix, sizeof prefix, "entities[%u]", count);
        cook_members(w, e, count + 1, prefix, assets, &st, &comps, &ncomp, &local);
    }

    for (size_t i = 0; i < st.count; i++) {
        size_t n = strlen(st.items[i]);
        keel__buf_u32(&strs, (uint32_t)n);
        keel__buf_bytes(&strs, st.items[i], n);
    }

    keel_status s = keel_diags_status(&local);
    if (s == KEEL_OK) {
        keel__buf f = { 0 };
        keel__buf_bytes(&f, "KEELCOOK", 8);
        keel__buf_u32(&f, COOK_VERSION);
        keel__buf_u32(&f, COOK_ENDIAN);
        keel__buf_u32(&f, SEC_COUNT_);
        keel__buf_u32(&f, keel__world_features(w)); /* the scene's features (features.h bits) */
        const keel__buf *secs[SEC_COUNT_] = { &strs, &scene, &ents, &comps };
        const uint32_t counts[SEC_COUNT_] = { (uint32_t)st.count, 1, count, ncomp };
        uint64_t off = COOK_HEADER + SEC_COUNT_ * COOK_SECTION_ENTRY;
        for (int i = 0; i < SEC_COUNT_; i++) {
            keel__buf_u32(&f, (uint32_t)(i + 1));
            keel__buf_u32(&f, (uint32_t)off);
            keel__buf_u32(&f, (uint32_t)secs[i]->len);
            keel__buf_u32(&f, counts[i]);
            off += secs[i]->len;
        }
        if (off + 4 > UINT32_MAX) {
            s = KEEL_ERROR(&local, KEEL_LIMIT_EXCEEDED, "", "cooked scene would exceed 4 GiB");
            free(f.p);
        } else {
            for (int i = 0; i < SEC_COUNT_; i++) keel__buf_bytes(&f, secs[i]->p, secs[i]->len);
            keel__buf_u32(&f, (uint32_t)crc32_z(0L, f.p, f.len));
            *out = f.p;
            *len = f.len;
        }
    }
    keel_diags_append(d, &local, "");
    keel_diags_free(&local);
    strtab_free(&st);
    keel__map_free(&map);
    free(scene.p);
    free(ents.p);
    free(comps.p);
    free(strs.p);
    return s;
}
