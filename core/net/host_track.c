/* host_track.c — what changed in a hosted world, found once a tick for every client.
 *
 * A tick's look (keel__net_scan) walks every entity only when the world's structure or a synced
 * kind's rows moved (model/track.h's counters): then entities and components come and go here
 * (a component known by its serial, so one removed and added again is a new one), and the run
 * order and each component's storage row are noted. Otherwise it walks the same list and looks
 * at the rows it knows. Per component, each synced field keeps its value as last seen and the
 * tick it last changed: plain values are compared with the record itself every tick (a C hook
 * may write a record directly, past the write counter), strings and references only when the
 * row's write counter moved. A component that changed is encoded once for every client: each
 * field's value, then the delta body (kind, slot, mask, values) of the fields changed at that
 * tick, which host_send.c copies to every client that holds what came before.
 * With an interest radius, entities are also listed in the grid cell their world position falls in.
 * An entity in an open lift (w:lift) keeps its tracking and its place on every client, and nothing
 * is sent about it: a restore resumes its deltas, a discard is the destroy that removes it. */
#include "net/net_internal.h"
#include "base/vec.h"

#include "base/util.h"
#include "model/track.h"
#include "model/value.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void value_keep(keel_value *dst, const keel_value *src)
{
    if (dst->type == KEEL_T_STRING) free((char *)dst->as.s);
    *dst = *src;
    if (src->type == KEEL_T_STRING) dst->as.s = keel__strdup(src->as.s ? src->as.s : "");
}

void keel__net_tcomp_fini(tcomp *tc)
{
    for (uint32_t f = 0; f < tc->nsync; f++)
        if (tc->vals[f].type == KEEL_T_STRING) free((char *)tc->vals[f].as.s);
    free(tc->enc);
    free(tc->changed);
}

static void tcomp_free(keel_net_host *h, uint32_t i)
{
    tcomp *tc = &h->comps[i];
    keel__net_tcomp_fini(tc);
    memset(tc, 0, sizeof *tc);
    for (uint32_t k = 0; k < h->nclients; k++)
        if (i < h->clients[k]->comp_cap) h->clients[k]->confirmed[i] = 0;
    keel__pool_give(&h->compp, i);
}

static void grid_unlink(keel_net_host *h, uint32_t ti);

/* An entity gone (or its tracking dropped): each client holding it gets a removal. */
static void tent_free(keel_net_host *h, uint32_t ti)
{
    tent *t = &h->ents[ti];
    keel__wire_buf rec = { 0 };
    for (uint32_t k = 0; k < h->nclients; k++) {
        hclient *c = h->clients[k];
        if (ti < c->ent_cap && c->lid[ti]) {
            keel__wire_u8(&rec, KEEL__REC_REMOVE);
            keel__wire_varint(&rec, c->lid[ti]);
            keel__net_state_add(h, c, &rec);
            keel__net_forget_ent(c, ti);
        }
    }
    keel__wire_buf_free(&rec);
    grid_unlink(h, ti);
    for (uint32_t j = 0; j < t->ncomp; j++) tcomp_free(h, t->comps[j]);
    keel__map_remove(&h->by_entity, t->e);
    free(t->name);
    free(t->comps);
    memset(t, 0, sizeof *t);
    keel__pool_give(&h->entp, ti);
}

static void tent_add_comp(tent *t, uint32_t ci)
{
    KEEL__VEC_RESERVE(t->comps, t->ncomp, t->comp_cap, 1, 4);
    t->comps[t->ncomp++] = ci;
}

/* The bytes of a plain value of type t inside a keel_value (what the record holds at the field). */
static void *value_bytes(keel_value *v, keel_type t)
{
    return t == KEEL_T_BOOL                     ? (void *)&v->as.b
        : t == KEEL_T_INT || t == KEEL_T_ENUM ? (void *)&v->as.i
        : t == KEEL_T_FLOAT                   ? (void *)&v->as.f
                                              : (void *)v->as.v;
}

/* Each synced kind's fields as the registry lays them out now (a kind redeclared since the host
 * started keeps only the fields of the same type), and whether its interval falls on this tick. */
static void kinds_refresh(keel_net_host *h)
{
    for (uint32_t i = 0; i < h->nkinds; i++) {
        skind *k = &h->kinds[i];
        const keel_kind_desc *kd = keel_kind_describe(k->id);
        k->due = h->tick % k->interval == 0;
        for (uint32_t f = 0; f < k->w.nsync; f++) {
            keel_type ty = k->w.types[f];
            int fi = k->fields[f];
            k->how[f] = HOW_SKIP;
            if (!kd || (size_t)fi >= kd->field_count || kd->fields[fi].type != ty) continue;
            if (ty == KEEL_T_STRING || ty == KEEL_T_ASSET || ty == KEEL_T_ENTITY) {
                k->how[f] = HOW_GET;
                continue;
            }
            k->how[f] = HOW_PLAIN;
            k->off[f] = (uint32_t)keel_kind_field_offset(k->id, fi);
            k->size[f] = ty == KEEL_T_BOOL                                      ? (uint32_t)sizeof(bool)
                : ty == KEEL_T_FLOAT || ty == KEEL_T_INT || ty == KEEL_T_ENUM ? 8u
                                                                              : 8u * (uint32_t)keel_type_width(ty);
        }
    }
}

/* Each field's value encoded again (the first time, or when one changed its encoded length). */
static void comp_encode_all(keel_net_host *h, tcomp *tc, const skind *k)
{
    keel__wire_buf *v = &h->scratch;
    v->len = 0;
    tc->wide = 0;
    for (uint32_t f = 0; f < k->w.nsync; f++) {
        tc->enc_off[f] = (uint32_t)v->len;
        bool wide = keel__wire_needs_wide(k->w.types[f], &tc->vals[f]);
        if (wide) tc->wide |= 2ull << (2 * f);
        keel__wire_value(v, k->w.types[f], &tc->vals[f], wide);
    }
    tc->enc_off[k->w.nsync] = (uint32_t)v->len;
    if (v->len > tc->enc_cap) {
        tc->enc_cap = (uint32_t)v->len;
        tc->enc = keel__xrealloc(tc->enc, tc->enc_cap);
    }
    memcpy(tc->enc, v->p, v->len);
}

/* memcpy of a float value's few bytes, constant lengths for the compiler to inline. */
static inline void copy_small(uint8_t *dst, const uint8_t *src, size_t n)
{
    switch (n) {
    case 4: memcpy(dst, src, 4); break;
    case 8: memcpy(dst, src, 8); break;
    case 12: memcpy(dst, src, 12); break;
    case 16: memcpy(dst, src, 16); break;
    case 24: memcpy(dst, src, 24); break;
    case 32: memcpy(dst, src, 32); break;
    default: memcpy(dst, src, n); break;
    }
}

/* Encodes a component that changed this tick, once for every client: the values of the fields
 * changed now (in place), then the delta body of those fields after every field's value. */
static void comp_encode(keel_net_host *h, tcomp *tc, const skind *k)
{
    uint64_t now = 0; /* bit 2f: field f changed now */
    bool again = !tc->enc;
    tc->older = 0;
    tc->last = h->tick;
    for (uint32_t f = 0; f < k->w.nsync; f++) {
        if (tc->changed[f] != h->tick) {
            if (tc->changed[f] > tc->older) tc->older = tc->changed[f];
            continue;
        }
        now |= 1ull << (2 * f);
        if (again) continue;
        uint8_t tmp[32];
        bool wide = false;
        const uint8_t *src = tmp;
        size_t n = keel__wire_float_value(tmp, k->w.types[f], &tc->vals[f], &wide);
        if (!n) {
            keel__wire_buf *v = &h->scratch;
            v->len = 0;
            keel__wire_value(v, k->w.types[f], &tc->vals[f], false);
            src = v->p;
            n = v->len;
        }
        if (n != tc->enc_off[f + 1] - tc->enc_off[f]) again = true; /* its length changed */
        else {
            copy_small(tc->enc + tc->enc_off[f], src, n);
            tc->wide = (tc->wide & ~(2ull << (2 * f))) | (wide ? 2ull << (2 * f) : 0);
        }
    }
    if (again) comp_encode_all(h, tc, k);
    uint8_t head[BODY_COPY];
    size_t hl = keel__wire_varint_to(head, tc->kind);
    if (k->w.many) hl += keel__wire_varint_to(head + hl, tc->slot);
    hl += keel__wire_varint_to(head + hl, now | (tc->wide & now << 1));
    size_t at = tc->enc_off[k->w.nsync], len = hl;
    for (uint64_t m = now; m; m &= m - 1) {
        unsigned f = (unsigned)__builtin_ctzll(m) / 2;
        len += tc->enc_off[f + 1] - tc->enc_off[f];
    }
    if (at + len + BODY_COPY > tc->enc_cap) {
        tc->enc_cap = (uint32_t)(at + len + BODY_COPY);
        tc->enc = keel__xrealloc(tc->enc, tc->enc_cap);
    }
    tc->body = (uint32_t)at;
    tc->body_len = (uint32_t)len;
    /* fixed-size copies into the body (enc has BODY_COPY of slack past it, and each copy's tail
     * is overwritten by the next); a field's value longer than that is copied as it is */
    memcpy(tc->enc + at, head, BODY_COPY);
    at += hl;
    for (uint64_t m = now; m; m &= m - 1) {
        unsigned f = (unsigned)__builtin_ctzll(m) / 2;
        uint32_t sz = tc->enc_off[f + 1] - tc->enc_off[f];
        if (sz <= BODY_COPY) {
            uint8_t t[BODY_COPY];
            memcpy(t, tc->enc + tc->enc_off[f], BODY_COPY);
            memcpy(tc->enc + at, t, BODY_COPY);
        } else memcpy(tc->enc + at, tc->enc + tc->enc_off[f], sz);
        at += sz;
    }
}

/* memcmp's answer for the few bytes of a plain value (8-byte words but for a bool); the common
 * widths get loops of a constant length, which the compiler unrolls. */
static inline __attribute__((always_inline)) bool same_words(const unsigned char *p, const unsigned char *q, size_t n)
{
    uint64_t d = 0;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x, y;
        memcpy(&x, p + i, 8);
        memcpy(&y, q + i, 8);
        d |= x ^ y;
    }
    return d == 0;
}

static inline bool same_bytes(const void *a, const void *b, size_t n)
{
    switch (n) {
    case 8: return same_words(a, b, 8);
    case 16: return same_words(a, b, 16);
    case 24: return same_words(a, b, 24);
    case 32: return same_words(a, b, 32);
    default: break;
    }
    if (n % 8) return memcmp(a, b, n) == 0;
    return same_words(a, b, n);
}

static inline __attribute__((always_inline)) void copy_words(unsigned char *dst, const unsigned char *src, size_t n)
{
    for (size_t i = 0; i < n; i += 8) memcpy(dst + i, src + i, 8);
}

static inline void copy_bytes(void *dst, const void *src, size_t n)
{
    switch (n) {
    case 8: copy_words(dst, src, 8); return;
    case 16: copy_words(dst, src, 16); return;
    case 24: copy_words(dst, src, 24); return;
    case 32: copy_words(dst, src, 32); return;
    default: break;
    }
    if (n % 8) {
        memcpy(dst, src, n);
        return;
    }
    copy_words(dst, src, n);
}

/* Compares a component's synced fields with what was last seen: plain values with the record
 * itself every tick (a C hook or system may write its record directly, past the write counter),
 * strings and references when the counter moved (they change only through the write path). */
static void comp_look(keel_net_host *h, tcomp *tc, const skind *k, keel_entity e)
{
    const unsigned char *rec = keel__track_rec(h->w, k->id, tc->row);
    uint64_t counter = keel__track_counter(h->w, k->id, tc->row);
    bool counted = tc->counter != counter;
    tc->counter = counter;
    bool dirty = false;
    for (uint32_t f = 0; f < k->w.nsync; f++) {
        keel_type ty = k->w.types[f];
        keel_value *sh = &tc->vals[f];
        if (k->how[f] == HOW_PLAIN) {
            void *dst = value_bytes(sh, ty);
            if (tc->changed[f] && same_bytes(rec + k->off[f], dst, k->size[f])) continue;
            copy_bytes(dst, rec + k->off[f], k->size[f]);
            sh->type = ty;
        } else if (k->how[f] == HOW_GET && counted) {
            keel_value v;
            keel_comp comp = { e, k->id, tc->slot };
            if (keel_get(h->w, comp, k->fields[f], &v, NULL) != KEEL_OK || v.type != ty) continue;
            if (tc->changed[f] && keel__value_equal(sh, &v)) continue;
            value_keep(sh, &v);
        } else continue;
        tc->changed[f] = h->tick;
        dirty = true;
    }
    if (dirty) {
        comp_encode(h, tc, k);
        if (k->id == h->transform) h->xform_tick = h->tick; /* world positions below it moved */
    }
    tc->send_last = k->due ? tc->last : 0;
}

/* One component of a live entity in a walk: found by its serial, or new (every field changed). */
static void scan_comp(keel_net_host *h, uint32_t ti, const keel_member *mb, uint32_t sk)
{
    tent *t = &h->ents[ti];
    tcomp *tc = NULL;
    for (uint32_t j = 0; j < t->ncomp && !tc; j++)
        if (h->comps[t->comps[j]].serial == mb->serial) tc = &h->comps[t->comps[j]];
    const skind *k = &h->kinds[sk];
    if (!tc) {
        uint32_t ci = keel__pool_take(&h->compp, sizeof *h->comps);
        h->comps = h->compp.items;
        tc = &h->comps[ci];
        tc->ent = ti;
        tc->kind = sk;
        tc->slot = mb->slot;
        tc->serial = mb->serial;
        tc->born = h->tick;
        tc->live = true;
        tc->counter = mb->counter - 1; /* read below: every field counts as changed */
        tc->nsync = k->w.nsync;
        size_t n = tc->nsync ? tc->nsync : 1;
        unsigned char *blk = keel__xcalloc(
            1, n * (sizeof *tc->changed + sizeof *tc->vals) + (n + 1) * sizeof *tc->enc_off);
        tc->changed = (uint64_t *)blk;
        tc->vals = (keel_value *)(blk + n * sizeof *tc->changed);
        tc->enc_off = (uint32_t *)(blk + n * (sizeof *tc->changed + sizeof *tc->vals));
        for (uint32_t f = 0; f < k->w.nsync; f++) tc->vals[f].type = k->w.types[f];
        tent_add_comp(t, ci);
        t->comp_tick = h->tick;
        if (mb->kind == h->transform) t->pos_comp = ci + 1;
    }
    tc->seen = h->tick;
    keel_comp comp = { t->e, mb->kind, mb->slot };
    tc->row = keel__track_row(h->w, comp);
    comp_look(h, tc, k, t->e);
}

/* ---- the interest grid: cells of the radius's size, an entity listed in the one its world
 * position falls in (entities with no position in one cell of their own kind): a client's
 * candidates are the 27 cells around its focus, not every entity ---- */
uint64_t keel__net_cell_of(const keel_net_host *h, const tent *t)
{
    if (!t->pos_comp) return CELL_NOWHERE;
    const double *p = t->wpos;
    uint64_t key = 0;
    for (int i = 0; i < 3; i++) {
        double q = floor(p[i] / h->o.interest_radius);
        if (!(q > -CELL_BIAS)) q = -CELL_BIAS; /* far away (or NaN): the edge cells */
        if (q > CELL_BIAS - 1) q = CELL_BIAS - 1;
        key = key << 21 | (uint64_t)((int64_t)q + CELL_BIAS);
    }
    return key;
}

static void grid_unlink(keel_net_host *h, uint32_t ti)
{
    tent *t = &h->ents[ti];
    if (!t->gridded) return;
    if (t->cprev) h->ents[t->cprev - 1].cnext = t->cnext;
    else if (t->cnext) keel__map_put(&h->cells, t->cell, t->cnext);
    else keel__map_remove(&h->cells, t->cell);
    if (t->cnext) h->ents[t->cnext - 1].cprev = t->cprev;
    t->gridded = false;
    t->cnext = t->cprev = 0;
}

/* Keeps t in the cell its position is in now (moves only when it changed cell). */
static void grid_place(keel_net_host *h, uint32_t ti)
{
    tent *t = &h->ents[ti];
    uint64_t cell = keel__net_cell_of(h, t);
    if (t->gridded && t->cell == cell) return;
    grid_unlink(h, ti);
    uint32_t head = 0;
    keel__map_get(&h->cells, cell, &head);
    t->cell = cell;
    t->cprev = 0;
    t->cnext = head;
    if (head) h->ents[head - 1].cprev = ti + 1;
    keel__map_put(&h->cells, cell, ti + 1);
    t->gridded = true;
}

/* t's world position: a top-level entity's is its own, as tracked; a child's is composed through
 * its parents (as the render snapshot composes it), again only when some tracked transform
 * changed this tick or the structure moved (`moved`): a parent's move moves its children. */
static void world_pos(keel_net_host *h, tent *t, bool moved)
{
    if (!t->pos_comp) return;
    if (!t->parent) {
        memcpy(t->wpos, h->comps[t->pos_comp - 1].vals[0].as.v, sizeof t->wpos);
        return;
    }
    if (!moved) return;
    double m[16];
    keel_world_matrix(h->w, t->e, m);
    memcpy(t->wpos, m + 12, sizeof t->wpos);
}

/* An entity gone from the walk because it was lifted: its tracking stays, out of the grid, and
 * its components send nothing until a walk finds it again (restored). */
static void tent_lift(keel_net_host *h, uint32_t ti)
{
    tent *t = &h->ents[ti];
    if (t->lifted) return;
    t->lifted = true;
    grid_unlink(h, ti);
    for (uint32_t j = 0; j < t->ncomp; j++) h->comps[t->comps[j]].send_last = 0;
}

/* Name and enabled flag as the world has them now; true when they changed. */
static bool meta_look(tent *t, const char *name, bool enabled)
{
    if (!name) name = "";
    if (t->meta_tick && enabled == t->enabled && !strcmp(name, t->name ? t->name : "")) return false;
    free(t->name);
    t->name = keel__strdup(name);
    t->enabled = enabled;
    return true;
}

/* The whole walk: what lives, what came, what changed, what went (any structural change). */
static void scan_full(keel_net_host *h)
{
    keel_world *w = h->w;
    h->norder = 0;
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) {
        uint32_t ti;
        if (!keel__map_get(&h->by_entity, e, &ti)) {
            ti = keel__pool_take(&h->entp, sizeof *h->ents);
            h->ents = h->entp.items;
            tent *t = &h->ents[ti];
            t->e = e;
            t->uuid = keel_entity_uuid(w, e);
            t->born = h->tick;
            t->live = true;
            keel__map_put(&h->by_entity, e, ti);
        }
        tent *t = &h->ents[ti];
        t->seen = h->tick;
        t->lifted = false; /* restored, if it was lifted */
        keel_entity parent = keel_entity_parent(w, e);
        bool meta = meta_look(t, keel_entity_name(w, e), keel_entity_enabled(w, e));
        if (meta || parent != t->parent) {
            t->parent = parent;
            t->meta_tick = h->tick;
        }
        size_t nm = keel_member_count(w, e);
        for (size_t i = 0; i < nm; i++) {
            keel_member mb;
            if (!keel_member_at(w, e, i, &mb) || !mb.loaded || mb.kind >= h->kind_of_cap || !h->kind_of[mb.kind])
                continue;
            scan_comp(h, ti, &mb, h->kind_of[mb.kind] - 1);
        }
        t = &h->ents[ti];
        /* components gone (removed, or re-added under a new serial) */
        for (uint32_t j = 0; j < t->ncomp;) {
            uint32_t ci = t->comps[j];
            if (h->comps[ci].seen == h->tick) {
                j++;
                continue;
            }
            keel__wire_buf rec = { 0 };
            for (uint32_t k = 0; k < h->nclients; k++) {
                hclient *c = h->clients[k];
                if (ci < c->comp_cap && c->confirmed[ci] && c->lid[ti]) {
                    keel__wire_u8(&rec, KEEL__REC_DROP);
                    keel__wire_varint(&rec, c->lid[ti]);
                    keel__wire_varint(&rec, h->comps[ci].kind);
                    keel__wire_varint(&rec, h->comps[ci].slot);
                    keel__net_state_add(h, c, &rec);
                }
            }
            keel__wire_buf_free(&rec);
            if (t->pos_comp == ci + 1) t->pos_comp = 0;
            tcomp_free(h, ci);
            t->comps[j] = t->comps[--t->ncomp];
        }
        KEEL__VEC_RESERVE(h->order, h->norder, h->order_cap, 1, 256);
        h->order[h->norder++] = ti;
    }
    for (uint32_t ti = 0; ti < h->entp.n; ti++) {
        if (!h->ents[ti].live || h->ents[ti].seen == h->tick) continue;
        if (keel__track_lifted(w, h->ents[ti].e)) tent_lift(h, ti);
        else tent_free(h, ti);
    }
}

/* No structural change since the last walk: the same entities and components in the same rows
 * (parents move only structurally), so only names, enabled flags and field values can differ. */
static void scan_quick(keel_net_host *h)
{
    for (uint32_t n = 0; n < h->norder; n++) {
        uint32_t ti = h->order[n];
        tent *t = &h->ents[ti];
        t->seen = h->tick;
        if (meta_look(t, keel_entity_name(h->w, t->e), keel_entity_enabled(h->w, t->e)))
            t->meta_tick = h->struct_tick = h->tick;
        for (uint32_t j = 0; j < t->ncomp; j++) {
            tcomp *tc = &h->comps[t->comps[j]];
            tc->seen = h->tick;
            comp_look(h, tc, &h->kinds[tc->kind], t->e);
        }
    }
}

void keel__net_scan(keel_net_host *h)
{
    kinds_refresh(h);
    bool same = h->structure == keel__track_structure(h->w);
    for (uint32_t i = 0; i < h->nkinds && same; i++) same = h->kinds[i].changes == keel__track_kind_changes(h->w, h->kinds[i].id);
    if (same) scan_quick(h);
    else {
        scan_full(h);
        h->struct_tick = h->tick;
        h->shape++;
    }
    if (h->o.interest_radius > 0) { /* after every component's look: parents' transforms are current */
        bool moved = !same || h->xform_tick == h->tick;
        for (uint32_t n = 0; n < h->norder; n++) {
            world_pos(h, &h->ents[h->order[n]], moved);
            grid_place(h, h->order[n]);
        }
    }
    h->structure = keel__track_structure(h->w);
    for (uint32_t i = 0; i < h->nkinds; i++) h->kinds[i].changes = keel__track_kind_changes(h->w, h->kinds[i].id);
    for (uint32_t k = 0; k < h->nclients; k++) keel__net_grow_client(h, h->clients[k]);
}

