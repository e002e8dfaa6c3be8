/* reload.c — a kind redeclared under live worlds: relayout records, refit values to new bounds, adopt unknown entries, check the new rules. */
#include "model/world.h"
#include "model/body.h"
#include "model/record.h"
#include "model/reload.h"
#include "model/field.h"

#include <stdlib.h>
#include <string.h>

static void world_relayout(keel_world *w, keel_kind_id k, const keel_kind_desc *old_desc, keel_diags *d)
{
    if (k >= w->store_count || !w->stores[k].cap) return;
    keel__store *s = &w->stores[k];
    const keel_kind_desc *nd = keel_kind_describe(k);
    size_t nsize = keel_kind_record_size(k);
    /* the old records are laid out by the old description, which the registry no longer holds */
    size_t *old_off = keel__xrealloc(NULL, (old_desc->field_count + 1) * sizeof *old_off);
    for (size_t f = 0; f < old_desc->field_count; f++) old_off[f] = keel__layout_offset(old_desc, (int)f);
    int *from = keel__xrealloc(NULL, (nd->field_count + 1) * sizeof *from); /* new field <- old field */
    bool *moved = keel__xcalloc(old_desc->field_count + 1, sizeof *moved);
    for (size_t f = 0; f < nd->field_count; f++) {
        from[f] = -1;
        for (size_t o = 0; o < old_desc->field_count; o++)
            if (strcmp(nd->fields[f].key, old_desc->fields[o].key) == 0 &&
                nd->fields[f].type == old_desc->fields[o].type) {
                from[f] = (int)o;
                moved[o] = true;
            }
    }
    size_t pages = s->npages;
    unsigned char **np = keel__xrealloc(NULL, (pages ? pages : 1) * sizeof *np);
    for (size_t p = 0; p < pages; p++)
        np[p] = keel__xrealloc(NULL, ((size_t)KEEL__PAGE << p) * (nsize ? nsize : 1));
    keel__store ns = *s;
    ns.pages = np;
    ns.record_size = nsize;
    for (size_t r = 0; r < s->count; r++) {
        unsigned char *orec = keel__store_rec(s, r), *nrec = keel__store_rec(&ns, r);
        memset(nrec, 0, nsize);
        keel__record_init(k, nrec);
        for (size_t f = 0; f < nd->field_count; f++) {
            if (from[f] < 0) continue;
            unsigned char *dst = nrec + keel_kind_field_offset(k, (int)f), *src = orec + old_off[from[f]];
            if (nd->fields[f].type == KEEL_T_ENUM) { /* by choice name; a vanished one takes the default */
                const keel_field_desc *of = &old_desc->fields[from[f]];
                int64_t ix;
                memcpy(&ix, src, sizeof ix);
                int64_t to = -1;
                for (size_t c = 0; ix >= 0 && (uint64_t)ix < of->choice_count && c < nd->fields[f].choice_count; c++)
                    if (strcmp(nd->fields[f].choices[c], of->choices[ix]) == 0) { to = (int64_t)c; break; }
                if (to < 0 && s->rows[r].owner == KEEL__NONE) {
                    to = nd->fields[f].def.as.i; /* a row freed at the phase boundary: nobody to tell */
                } else if (to < 0) { /* its choice is gone: the default, and say so */
                    to = nd->fields[f].def.as.i;
                    char *who = keel__entity_label(w, s->rows[r].owner);
                    keel_diag_add(d, KEEL_SEV_WARNING, KEEL_INVALID_ARGUMENT, "", NULL, 0, 0,
                                  "%s in world '%s': %s slot %u: %s: '%s' is no longer a choice; reset to its default",
                                  who, w->name, nd->key, keel__row_slot(w, k, (uint32_t)r), nd->fields[f].key,
                                  ix >= 0 && (uint64_t)ix < of->choice_count ? of->choices[ix] : "?");
                    free(who);
                }
                memcpy(dst, &to, sizeof to);
                continue;
            }
            if (nd->fields[f].get) continue; /* derived: shown from what was carried over, below */
            if (nd->fields[f].type == KEEL_T_STRING) free(*(char **)dst);
            memcpy(dst, src, keel_type_size(nd->fields[f].type));
        }
        keel__record_derive(k, nrec);
        for (size_t o = 0; o < old_desc->field_count; o++)
            if (!moved[o] && old_desc->fields[o].type == KEEL_T_STRING) free(*(char **)(orec + old_off[o]));
    }
    for (size_t p = 0; p < pages; p++) free(s->pages[p]);
    free(s->pages);
    *s = ns;
    s->changes++;
    free(old_off);
    free(from);
    free(moved);
    keel__touch(w);
}

/* Would entry m (unknown, about to become kind k) break a rule of k on entity i? */
static keel_status adopt_rules(keel_world *w, uint32_t i, keel_kind_id k, const keel__entry *m, keel_diags *d)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    keel__ent *en = &w->ents[i];
    if (kd->multiplicity == KEEL_ONE && m->slotted)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s is a one kind: only slot 0, not slot %u", kd->key,
                          keel__entry_slot(w, m));
    uint32_t live = 0;
    for (uint32_t a = 0; a < en->member_count; a++) live += keel__members(w, en)[a].kind == k;
    if (kd->multiplicity == KEEL_ONE && live)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s is already present (multiplicity one)", kd->key);
    if (kd->multiplicity == KEEL_MANY && kd->max && live >= kd->max)
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s allows at most %u components", kd->key, kd->max);
    return keel__check_add_rules(w, i, k, d);
}

static void world_adopt(keel_world *w, keel_kind_id k, keel_diags *d)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    w->runs_valid = false; /* hooks may have changed */
    if (!kd) return;
    bool any = false;
    for (uint32_t i = 0; i < w->ent_count; i++) {
        if (!w->ents[i].alive) continue;
        for (uint32_t a = 0; a < w->ents[i].member_count; a++) {
            keel__entry *m = &keel__members(w, &w->ents[i])[a];
            if (m->kind) continue;
            const keel__unknown *uk = keel__entry_unk(m);
            if (strcmp(uk->key, kd->key) != 0 || uk->version > kd->version) continue;
            keel_diags why;
            keel_diags_init(&why);
            keel_status rs = adopt_rules(w, i, k, m, &why);
            if (rs) { /* kept unknown, body and slot untouched: the file's stack stays as written */
                char u[37];
                keel_uuid_format(w->ents[i].uuid, u);
                keel_diag_add(d, KEEL_SEV_WARNING, rs, "", NULL, 0, 0, "%s slot %u on entity %s stays unknown: %s",
                              kd->key, keel__entry_slot(w, m), u, why.count ? why.items[0].message : "");
                keel_diags_free(&why);
                continue;
            }
            keel_diags_free(&why);
            uint32_t slot = keel__entry_slot(w, m);
            uint32_t row = keel__store_append(w, k, keel__handle(w, i), slot);
            keel__store *s = &w->stores[k];
            void *rec = keel__store_rec(s, row);
            keel__record_init(k, rec);
            if (keel__body_decode(k, uk->preserved, uk->version, false, rec, "", NULL, NULL)) {
                keel__record_fini(k, rec);
                s->count--;
                continue; /* stays unknown, body kept */
            }
            m = &keel__members(w, &w->ents[i])[a];
            uint64_t serial = keel__entry_unk(m)->serial; /* adopted in place: the same entry */
            keel__unknown_free(keel__entry_unk(m));
            m->kind = k;
            keel__entry_set_serial(m, serial);
            m->row = row;
            m->slotted = false;
            if (slot) keel__entry_set_slot(w, m, slot); /* from the side record into the slot map */
            keel__entry_born(w, i, m);
            m->awoken = false;
            any = true;
        }
    }
    if (!any) return;
    keel__touch(w);
    keel__awake_in_run_order(w, k);
}

/* Why entry m of entity i breaks kind rules `nd` (NULL: it does not); `count` is how many
 * loaded entries of its kind the entity holds. */
static char *rule_broken(const keel_world *w, uint32_t i, const keel__entry *m, uint32_t count, bool first,
                         const keel_kind_desc *nd)
{
    keel__ent *en = &w->ents[i];
    if (nd->multiplicity == KEEL_ONE && m->slotted)
        return keel__strfmt("holds %s in slot %u, and it is now a one kind", nd->key, keel__entry_slot(w, m));
    if (!first) return NULL; /* the rest: once per entity */
    if (nd->multiplicity == KEEL_MANY && nd->max && count > nd->max)
        return keel__strfmt("holds %u %s components, and it now allows at most %u", count, nd->key, nd->max);
    keel_diags place;
    keel_diags_init(&place);
    if (keel__root_rules(i, nd, "", &place)) {
        char *why = keel__strfmt("holds %s, and now %s", nd->key, place.items[0].message);
        keel_diags_free(&place);
        return why;
    }
    for (size_t r = 0; r < nd->requires_count; r++)
        if (!keel__entry_by_key(w, en, nd->requires[r], KEEL_SLOT_AUTO))
            return keel__strfmt("holds %s without %s, which it now requires", nd->key, nd->requires[r]);
    for (size_t r = 0; r < nd->rejects_count; r++)
        if (strcmp(nd->rejects[r], nd->key) && keel__entry_by_key(w, en, nd->rejects[r], KEEL_SLOT_AUTO))
            return keel__strfmt("holds %s beside %s, which it now rejects", nd->key, nd->rejects[r]);
    return NULL;
}

static keel_status world_check_kind(keel_world *w, keel_kind_id k, const keel_kind_desc *nd, keel_diags *d)
{
    enum { SHOWN = 8 }; /* a long list says no more than its first lines */
    size_t broken = 0;
    if (k >= w->store_count || !w->stores[k].count) return KEEL_OK;
    for (uint32_t i = 0; i < w->ent_count; i++) {
        keel__ent *en = &w->ents[i];
        if (!en->alive) continue;
        uint32_t count = 0;
        for (uint32_t a = 0; a < en->member_count; a++) count += keel__members(w, en)[a].kind == k;
        bool first = true;
        for (uint32_t a = 0; count && a < en->member_count; a++) {
            if (keel__members(w, en)[a].kind != k) continue;
            char *why = rule_broken(w, i, &keel__members(w, en)[a], count, first, nd);
            first = false;
            if (!why) continue;
            if (broken++ < SHOWN) {
                char *who = keel__entity_label(w, i);
                KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "redeclaring %s would break a live component: %s in world '%s' %s",
                           nd->key, who, w->name, why);
                free(who);
            }
            free(why);
        }
    }
    if (broken > SHOWN)
        KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "redeclaring %s would break %zu more live components in world '%s'",
                   nd->key, broken - SHOWN, w->name);
    return broken ? KEEL_INVALID_OPERATION : KEEL_OK;
}

static void world_refit(keel_world *w, keel_kind_id k, keel_diags *d)
{
    if (k >= w->store_count || !w->stores[k].count) return;
    keel__store *s = &w->stores[k];
    const keel_kind_desc *kd = keel_kind_describe(k);
    for (size_t r = 0; r < s->count; r++) {
        if (s->rows[r].owner == KEEL__NONE) continue;
        void *rec = keel__store_rec(s, r);
        for (size_t f = 0; f < kd->field_count; f++) {
            const keel_field_desc *fd = &kd->fields[f];
            if (!fd->has_min && !fd->has_max) continue; /* the type and choices are kept by relayout */
            keel_value v;
            keel__record_get(k, rec, (int)f, &v);
            keel_diags why;
            keel_diags_init(&why);
            if (keel_field_check(k, (int)f, &v, &why) != KEEL_OK) {
                char *who = keel__entity_label(w, s->rows[r].owner);
                keel_diag_add(d, KEEL_SEV_WARNING, KEEL_INVALID_ARGUMENT, "", NULL, 0, 0, "%s in world '%s': %s slot %u: %s; reset to its default", who, w->name, kd->key,
                             keel__row_slot(w, k, (uint32_t)r), why.count ? why.items[0].message : fd->key);
                free(who);
                keel_comp c = { keel__handle(w, s->rows[r].owner), k, keel__row_slot(w, k, (uint32_t)r) };
                int fi = (int)f;
                keel__field_store(w, c, 1, &fi, &fd->def, true);
            }
            keel_diags_free(&why);
        }
    }
}

void keel__worlds_relayout(keel_kind_id k, const keel_kind_desc *old_desc, keel_diags *d)
{
    for (keel_world *w = keel__world_list(); w; w = w->next_world) {
        world_relayout(w, k, old_desc, d);
        if (w->played) world_relayout(w->played, k, old_desc, d); /* what stop will put back */
    }
}

void keel__worlds_adopt(keel_kind_id k, keel_diags *d)
{
    for (keel_world *w = keel__world_list(); w; w = w->next_world) world_adopt(w, k, d);
}

/* Whether description nd keeps kind k's record layout (the same fields, names and types, in order). */
static bool same_layout(keel_kind_id k, const keel_kind_desc *nd)
{
    const keel_kind_desc *od = keel_kind_describe(k);
    if (!od || od->field_count != nd->field_count) return false;
    for (size_t f = 0; f < nd->field_count; f++)
        if (od->fields[f].type != nd->fields[f].type || strcmp(od->fields[f].key, nd->fields[f].key) != 0) return false;
    return true;
}

keel_status keel__worlds_check_kind(keel_kind_id k, const keel_kind_desc *nd, keel_diags *d)
{
    keel_status st = KEEL_OK;
    /* a lift holds records out of the stores, where a relayout cannot reach them */
    for (keel_world *w = keel__world_list(); w; w = w->next_world)
        if (w->lifts && !same_layout(k, nd) && keel__lifts_hold(w, k))
            st = KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                            "%s has components lifted in world '%s': restore or discard them before changing its fields",
                            nd->key, w->name);
    for (keel_world *w = keel__world_list(); w; w = w->next_world) {
        if (world_check_kind(w, k, nd, d)) st = KEEL_INVALID_OPERATION;
        if (w->played && world_check_kind(w->played, k, nd, d)) st = KEEL_INVALID_OPERATION;
    }
    return st;
}

void keel__worlds_refit(keel_kind_id k, keel_diags *d)
{
    for (keel_world *w = keel__world_list(); w; w = w->next_world) {
        world_refit(w, k, d);
        if (w->played) world_refit(w->played, k, d);
    }
}

/* A faulted component runs again once its kind is redeclared (the fix is in). */
static void world_unfault(keel_world *w, keel_kind_id k)
{
    for (uint32_t i = 0; i < w->ent_count; i++) {
        keel__ent *en = &w->ents[i]; /* dead entities hold no entries; lifted ones keep theirs */
        keel__entry *ms = keel__members(w, en);
        for (uint32_t m = 0; m < en->member_count; m++)
            if (ms[m].kind == k) ms[m].faulted = false;
    }
    w->relabels++;
}

void keel__worlds_unfault(keel_kind_id k)
{
    for (keel_world *w = keel__world_list(); w; w = w->next_world) {
        world_unfault(w, k);
        if (w->played) world_unfault(w->played, k);
    }
}
