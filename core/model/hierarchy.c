/* hierarchy.c — parent/child links, sibling order, reparenting and world matrices. */
#include "model/world.h"
#include "model/hierarchy.h"
#include "model/txn.h"
#include "base/vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

keel_entity keel_entity_parent(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    if (!en || en->parent == KEEL__NONE || en->parent == 0) return KEEL_NO_ENTITY;
    return keel__handle(w, en->parent);
}

size_t keel_entity_child_count(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e ? e : keel_world_root(w));
    return en ? keel__child_count(w, (uint32_t)(en - w->ents)) : 0;
}

/* Starts from the nearest of the first child, the last child and the previous answer
 * (cached per world until the next structural change): loops by index run in O(1) a step. */
keel_entity keel_entity_child(const keel_world *w, keel_entity e, size_t n)
{
    keel__ent *en = keel__ent_get(w, e ? e : keel_world_root(w));
    uint32_t p = en ? (uint32_t)(en - w->ents) : 0;
    size_t count = en ? keel__child_count(w, p) : 0;
    if (n >= count) return KEEL_NO_ENTITY;
    uint32_t c = keel__first_child(w, p);
    size_t at = 0;
    if (count - 1 - n < n) {
        c = keel__last_child(w, p);
        at = count - 1;
    }
    bool cached = w->child_structure == w->structure + 1 && w->child_parent == p;
    if (cached) {
        size_t dc = w->child_pos > n ? w->child_pos - n : n - w->child_pos, db = at > n ? at - n : n - at;
        if (dc < db) {
            c = w->child_at;
            at = w->child_pos;
        }
    }
    for (; at < n; at++) c = w->ents[c].next;
    for (; at > n; at--) c = w->ents[c].prev;
    keel_world *mw = (keel_world *)w; /* a cache only: nothing observable changes */
    mw->child_parent = p;
    mw->child_at = c;
    mw->child_pos = n;
    mw->child_structure = w->structure + 1;
    return keel__handle(w, c);
}

keel_entity keel_entity_first_child(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e ? e : keel_world_root(w));
    uint32_t c = en ? keel__first_child(w, (uint32_t)(en - w->ents)) : KEEL__NONE;
    return c != KEEL__NONE ? keel__handle(w, c) : KEEL_NO_ENTITY;
}

keel_entity keel_entity_next_sibling(const keel_world *w, keel_entity e)
{
    keel__ent *en = keel__ent_get(w, e);
    if (!en || (uint32_t)e == 0 || en->next == KEEL__NONE) return KEEL_NO_ENTITY;
    return keel__handle(w, en->next);
}

keel_entity keel__next_after_subtree(const keel_world *w, uint32_t i)
{
    for (; i != 0 && i != KEEL__NONE; i = w->ents[i].parent)
        if (w->ents[i].next != KEEL__NONE) return keel__handle(w, w->ents[i].next);
    return KEEL_NO_ENTITY;
}

static void kids_map_put(keel_world *w, uint32_t k)
{
    uint32_t mask = w->kids_map_cap - 1, p = keel__kids_home(w->kids[k].owner) & mask;
    while (w->kids_map[p]) p = (p + 1) & mask;
    w->kids_map[p] = k + 1;
}

/* Room for one more parent in the map (at most half full). */
static void kids_map_room(keel_world *w)
{
    if ((w->kids_map_used + 1) * 2 <= w->kids_map_cap) return;
    free(w->kids_map);
    w->kids_map_cap = w->kids_map_cap ? w->kids_map_cap * 2 : 16;
    w->kids_map = keel__xcalloc(w->kids_map_cap, sizeof *w->kids_map);
    for (uint32_t k = 0; k < w->kids_count; k++)
        if (w->kids[k].owner != KEEL__NONE && w->kids[k].owner != 0) kids_map_put(w, k);
}

/* Backward-shift deletion of parent p's slot (as the UUID index's). */
static void kids_map_remove(keel_world *w, uint32_t p)
{
    uint32_t mask = w->kids_map_cap - 1, at = keel__kids_home(p) & mask;
    while (w->kids[w->kids_map[at] - 1].owner != p) at = (at + 1) & mask;
    w->kids_map[at] = 0;
    for (uint32_t q = at;;) {
        q = (q + 1) & mask;
        if (!w->kids_map[q]) break;
        uint32_t home = keel__kids_home(w->kids[w->kids_map[q] - 1].owner) & mask;
        bool between = at <= q ? (home > at && home <= q) : (home > at || home <= q);
        if (!between) {
            w->kids_map[at] = w->kids_map[q];
            w->kids_map[q] = 0;
            at = q;
        }
    }
    w->kids_map_used--;
}

/* Entity p's children record, made when it gets its first child. */
static keel__kids *kids_of(keel_world *w, uint32_t p)
{
    if (w->ents[p].has_kids) {
        if (p != 0 && p == w->kids_hot_owner) return &w->kids[w->kids_hot];
        keel__kids *pk = keel__kids_get(w, p);
        w->kids_hot_owner = p;
        w->kids_hot = (uint32_t)(pk - w->kids);
        return pk;
    }
    uint32_t k;
    if (w->kids_free) {
        k = w->kids_free - 1;
        w->kids_free = w->kids[k].first;
    } else {
        KEEL__VEC_RESERVE(w->kids, w->kids_count, w->kids_cap, 1, 16);
        k = w->kids_count++;
    }
    w->kids[k] = (keel__kids){ KEEL__NONE, KEEL__NONE, 0, p };
    if (p == 0) {
        w->kids_root = k;
    } else {
        kids_map_room(w);
        kids_map_put(w, k);
        w->kids_map_used++;
    }
    w->ents[p].has_kids = true;
    return &w->kids[k];
}

void keel__unlink_child(keel_world *w, uint32_t c)
{
    keel__ent *en = &w->ents[c];
    uint32_t p = en->parent;
    keel__kids *pk = keel__kids_get(w, p);
    if (en->prev != KEEL__NONE) w->ents[en->prev].next = en->next;
    else pk->first = en->next;
    if (en->next != KEEL__NONE) w->ents[en->next].prev = en->prev;
    else pk->last = en->prev;
    if (--pk->count == 0) { /* a leaf again: the record goes back */
        if (p != 0) kids_map_remove(w, p);
        if (p == w->kids_hot_owner) w->kids_hot_owner = 0;
        pk->owner = KEEL__NONE;
        pk->first = w->kids_free;
        w->kids_free = (uint32_t)(pk - w->kids) + 1;
        w->ents[p].has_kids = false;
    }
    en->parent = en->next = en->prev = KEEL__NONE;
}

/* Inserts c among p's children at `index` (SIZE_MAX or past the end: last). */
void keel__link_child(keel_world *w, uint32_t p, uint32_t c, size_t index)
{
    keel__kids *pk = kids_of(w, p);
    keel__ent *en = &w->ents[c];
    en->parent = p;
    uint32_t at = KEEL__NONE; /* the sibling c goes before */
    if (index < pk->count) {
        at = pk->first;
        while (index--) at = w->ents[at].next;
    }
    if (at == KEEL__NONE) {
        en->prev = pk->last;
        en->next = KEEL__NONE;
        if (pk->last != KEEL__NONE) w->ents[pk->last].next = c;
        else pk->first = c;
        pk->last = c;
    } else {
        en->next = at;
        en->prev = w->ents[at].prev;
        if (en->prev != KEEL__NONE) w->ents[en->prev].next = c;
        else pk->first = c;
        w->ents[at].prev = c;
    }
    pk->count++;
}

size_t keel__sibling_index(const keel_world *w, uint32_t i)
{
    size_t n = 0;
    for (uint32_t s = w->ents[i].prev; s != KEEL__NONE; s = w->ents[s].prev) n++;
    return n;
}

size_t keel__depth_of(const keel_world *w, uint32_t i) /* root 0, top level 1 */
{
    size_t d = 0;
    while (i != 0) { i = w->ents[i].parent; d++; }
    return d;
}

size_t keel__height_of(const keel_world *w, uint32_t i) /* 1 for a leaf */
{
    size_t h = 1;
    for (uint32_t c = keel__first_child(w, i); c != KEEL__NONE; c = w->ents[c].next) {
        size_t ch = keel__height_of(w, c) + 1;
        if (ch > h) h = ch;
    }
    return h;
}

/* Resolves a parent argument: KEEL_NO_ENTITY and the root both mean top level. */
keel_status keel__parent_index(const keel_world *w, keel_entity parent, uint32_t *out, keel_diags *d)
{
    if (!parent) { *out = 0; return KEEL_OK; }
    if (!keel__ent_get(w, parent)) return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "parent entity not found");
    *out = (uint32_t)parent;
    return KEEL_OK;
}

/* Moves live entity i under p at `index`, or says why not. */
static keel_status move_under(keel_world *w, uint32_t i, uint32_t p, size_t index, keel_diags *d)
{
    for (uint32_t a = p; a != 0; a = w->ents[a].parent)
        if (a == i) return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "reparenting would create a cycle");
    if (keel__depth_of(w, p) + keel__height_of(w, i) > KEEL__MAX_DEPTH)
        return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "hierarchy depth limit (%d) exceeded", KEEL__MAX_DEPTH);
    keel__unlink_child(w, i);
    keel__link_child(w, p, i, index);
    keel__touch(w);
    return KEEL_OK;
}

keel_status keel__reparent_at(keel_world *w, keel_entity e, keel_entity parent, size_t index, keel_cmd *inverse,
                              keel_diags *d)
{
    keel_cmd tmp;
    if (w->frozen) return keel__refuse_frozen(d);
    keel_cmd *inv = keel__cmd_begin(w, inverse, &tmp);
    uint32_t i, p = 0;
    keel_status st = keel__ent_target(w, e, "reparented", &i, d);
    if (st == KEEL_OK) st = keel__parent_index(w, parent, &p, d);
    if (st == KEEL_OK) {
        uint32_t op = w->ents[i].parent;
        keel_uuid old_parent = op == 0 ? (keel_uuid){ { 0 } } : w->ents[op].uuid;
        size_t old_index = keel__sibling_index(w, i);
        st = move_under(w, i, p, index, d);
        if (st == KEEL_OK && inv) {
            inv->type = KEEL_CMD_REPARENT;
            inv->entity = w->ents[i].uuid;
            inv->parent = old_parent;
            inv->index = old_index;
        }
    }
    return keel__cmd_end(w, st, inv, &tmp);
}

keel_status keel_reparent(keel_world *w, keel_entity e, keel_entity parent, keel_cmd *inverse, keel_diags *d)
{
    return keel__reparent_at(w, e, parent, SIZE_MAX, inverse, d);
}

static void trs_matrix(const keel_transform *t, double m[16])
{
    double x = t->rotation[0], y = t->rotation[1], z = t->rotation[2], q = t->rotation[3];
    double r[9] = {
        1 - 2 * (y * y + z * z), 2 * (x * y + z * q), 2 * (x * z - y * q),
        2 * (x * y - z * q), 1 - 2 * (x * x + z * z), 2 * (y * z + x * q),
        2 * (x * z + y * q), 2 * (y * z - x * q), 1 - 2 * (x * x + y * y),
    }; /* column-major 3x3 */
    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < 3; k++) m[c * 4 + k] = r[c * 3 + k] * t->scale[c];
        m[c * 4 + 3] = 0;
    }
    m[12] = t->position[0];
    m[13] = t->position[1];
    m[14] = t->position[2];
    m[15] = 1;
}

static void mat_mul(const double a[16], const double b[16], double out[16])
{
    double r[16];
    for (int c = 0; c < 4; c++)
        for (int k = 0; k < 4; k++) {
            double s = 0;
            for (int j = 0; j < 4; j++) s += a[j * 4 + k] * b[c * 4 + j];
            r[c * 4 + k] = s;
        }
    memcpy(out, r, sizeof r);
}

static void identity(double m[16])
{
    memset(m, 0, 16 * sizeof *m);
    m[0] = m[5] = m[10] = m[15] = 1;
}

keel_status keel_world_matrix(const keel_world *w, keel_entity e, double out[16])
{
    identity(out);
    if (!keel__ent_get(w, e)) return KEEL_NOT_FOUND;
    keel_kind_id tk = keel_kind_find("core:transform");
    for (uint32_t i = (uint32_t)e; i != 0 && i != KEEL__NONE; i = w->ents[i].parent) {
        keel__entry *m = tk ? keel__entry_find(w, &w->ents[i], tk, 0) : NULL;
        if (!m) continue;
        double local[16];
        trs_matrix(keel__store_rec(&w->stores[tk], m->row), local);
        mat_mul(local, out, out);
    }
    return KEEL_OK;
}

/* The unit quaternion (x y z w, w >= 0) of the rotation whose columns are c[0..2] (Shepperd's
 * method: the largest of the four candidates is divided by, so none divides by near zero). */
static void quat_of(const double c[3][3], double q[4])
{
    double r00 = c[0][0], r11 = c[1][1], r22 = c[2][2];
    double r01 = c[1][0], r10 = c[0][1], r02 = c[2][0], r20 = c[0][2], r12 = c[2][1], r21 = c[1][2];
    double t = r00 + r11 + r22, s;
    if (t > 0) {
        s = sqrt(t + 1) * 2;
        q[0] = (r21 - r12) / s, q[1] = (r02 - r20) / s, q[2] = (r10 - r01) / s, q[3] = s / 4;
    } else if (r00 > r11 && r00 > r22) {
        s = sqrt(1 + r00 - r11 - r22) * 2;
        q[0] = s / 4, q[1] = (r01 + r10) / s, q[2] = (r02 + r20) / s, q[3] = (r21 - r12) / s;
    } else if (r11 > r22) {
        s = sqrt(1 + r11 - r00 - r22) * 2;
        q[0] = (r01 + r10) / s, q[1] = s / 4, q[2] = (r12 + r21) / s, q[3] = (r02 - r20) / s;
    } else {
        s = sqrt(1 + r22 - r00 - r11) * 2;
        q[0] = (r02 + r20) / s, q[1] = (r12 + r21) / s, q[2] = s / 4, q[3] = (r10 - r01) / s;
    }
    double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    double k = !(n > 0) ? 0 : q[3] < 0 ? -1 / n : 1 / n;
    if (k == 0) q[0] = q[1] = q[2] = 0, q[3] = 1;
    else
        for (int i = 0; i < 4; i++) q[i] *= k;
}

keel_status keel_world_transform(const keel_world *w, keel_entity e, double position[3], double rotation[4],
                                 double scale[3])
{
    double m[16];
    keel_status st = keel_world_matrix(w, e, m);
    double c[3][3];
    for (int i = 0; i < 3; i++) {
        position[i] = m[12 + i];
        for (int k = 0; k < 3; k++) c[i][k] = m[i * 4 + k];
        scale[i] = sqrt(c[i][0] * c[i][0] + c[i][1] * c[i][1] + c[i][2] * c[i][2]);
    }
    double det = c[0][0] * (c[1][1] * c[2][2] - c[1][2] * c[2][1]) - c[1][0] * (c[0][1] * c[2][2] - c[0][2] * c[2][1]) +
        c[2][0] * (c[0][1] * c[1][2] - c[0][2] * c[1][1]);
    if (det < 0) scale[0] = -scale[0]; /* a mirror: x carries the sign, the rest is a rotation */
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            c[i][k] = scale[i] != 0 ? c[i][k] / scale[i] : i == k; /* a flat axis: its own */
    quat_of(c, rotation);
    return st;
}

void keel__subtree_collect(const keel_world *w, uint32_t i, uint32_t **list, size_t *n, size_t *cap)
{
    KEEL__VEC_RESERVE(*list, *n, *cap, 1, 16);
    (*list)[(*n)++] = i;
    for (uint32_t c = keel__first_child(w, i); c != KEEL__NONE; c = w->ents[c].next)
        keel__subtree_collect(w, c, list, n, cap);
}
