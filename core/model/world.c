/* world.c — the world object: creation and freeing, name, UUID, grid, revision, epoch, and the list of live worlds. */
#include "model/world.h"
#include "model/txn.h"
#include "model/capture.h"
#include "bind.h" /* keel__world_structure */

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static keel_world *g_worlds;   /* every live world, for registry changes */
static uint64_t g_epoch;

/* ---------------------------------------------------------------- worlds */

void keel__touch(keel_world *w)
{
    w->structure++;
    w->revision++;
}

uint64_t keel__world_structure(const keel_world *w) { return w->structure; }

uint64_t keel__world_visibility(const keel_world *w) { return w->structure + w->enabling; }

keel_world *keel_world_new(const char *name)
{
    keel_world *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->uuid = keel_uuid_v4();
    w->name = keel__strdup(name && keel__name_check(name, "a scene", NULL) == KEEL_OK ? name : ""); /* what a scene file can hold */
    w->grid = keel_grid_default();
    w->epoch = ++g_epoch;
    w->tag = keel__tag_next();
    w->fixed_dt = 1.0 / 60.0;
    w->reuse_index = KEEL__NONE;
    uint32_t r = keel__ent_alloc(w); /* the root: index 0, generation 1 */
    keel__ent *root = &w->ents[r];
    root->alive = root->enabled = true;
    root->name = keel__name_intern(w, "");
    root->parent = root->next = root->prev = KEEL__NONE; /* no children yet (has_kids false) */
    w->next_world = g_worlds;
    if (g_worlds) g_worlds->prev_world = w;
    g_worlds = w;
    return w;
}

/* Frees everything w holds, not w itself nor its place in the list of live worlds. */
static void world_contents_free(keel_world *w)
{
    keel__lifts_free(w); /* closing a world with lifts open discards them */
    keel__capture_home_drop(w); /* its spare capture goes; a pending job's frees itself when done */
    keel__ext_free_all(w); /* timers end, queued messages drop, systems and what else attached go */
    for (uint32_t i = 0; i < w->ent_count; i++) {
        keel__ent *en = &w->ents[i];
        if (!en->alive) continue;
        keel__entry *ms = keel__members(w, en);
        for (uint32_t m = 0; m < en->member_count; m++) {
            if (!ms[m].kind) keel__unknown_free(keel__entry_unk(&ms[m]));
        }
    }
    keel__entry_pools_free(w); /* every membership array at once */
    keel__names_free(w);
    keel__store_free_all(w);
    keel__runs_free(w);
    keel__faults_free(w);
    keel__txn_free(w);
    keel__kept_free_all(w);
    free(w->pending);
    free(w->ents);
    free(w->kids);
    free(w->kids_map);
    free(w->free_idx);
    free(w->held);
    free(w->dying);
    free(w->hash);
    free(w->name);
}

void keel_world_free(keel_world *w)
{
    if (!w || keel_world_in_callback(w)) return; /* its hooks' callers go on using it */
    if (w->played) keel__world_discard(w->played);
    world_contents_free(w);
    if (w->prev_world) w->prev_world->next_world = w->next_world;
    else g_worlds = w->next_world;
    if (w->next_world) w->next_world->prev_world = w->prev_world;
    free(w);
}

void keel__world_copy_settings(keel_world *c, const keel_world *w)
{
    c->uuid = w->uuid;
    c->grid = w->grid;
    c->revision = w->revision;
    c->epoch = w->epoch;
    c->tag = w->tag;
    c->frame = w->frame;
    c->structure = w->structure;
    c->fixed_dt = w->fixed_dt;
    c->acc = w->acc;
    c->time = w->time;
    memcpy(c->rng, w->rng, sizeof c->rng); /* play's stop puts the random state back too */
    c->seed = w->seed;
    c->seeded = w->seeded;
    c->features = w->features; /* the scene header's: a stop or a save of the copy writes them back */
}

keel_world *keel__world_copy(const keel_world *w)
{
    keel_world *c = keel__xcalloc(1, sizeof *c);
    keel__world_copy_settings(c, w);
    c->name = keel__strdup(w->name);
    keel__entities_copy(c, w);
    keel__members_copy(c, w);
    keel__stores_copy(c, w);
    return c;
}

void keel__world_discard(keel_world *c)
{
    world_contents_free(c);
    free(c);
}

uint64_t keel__epoch_next(void) { return ++g_epoch; }

bool keel__world_earlier_epoch(const keel_world *w, keel_entity e)
{
    return e && ((uint32_t)(e >> 32) & ~KEEL__GEN_COUNT) != KEEL__GEN(w->tag, 0);
}

keel_uuid keel_world_uuid(const keel_world *w) { return w->uuid; }
keel_status keel_world_set_uuid(keel_world *w, keel_uuid u, keel_diags *d)
{
    if (keel_uuid_is_nil(u)) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "a scene UUID cannot be nil");
    w->uuid = u;
    w->revision++;
    return KEEL_OK;
}

const char *keel_world_name(const keel_world *w) { return w->name; }

keel_status keel_world_set_name(keel_world *w, const char *name, keel_diags *d)
{
    keel_status st = keel__name_check(name, "a scene", d);
    if (st) return st;
    char *n = keel__strdup(name);
    free(w->name);
    w->name = n;
    w->revision++;
    return KEEL_OK;
}

const keel_grid *keel_world_grid(const keel_world *w) { return &w->grid; }

keel_grid keel_grid_default(void)
{
    return (keel_grid){ .enabled = true,
                        .orientation = { 0, 0, 0, 1 },
                        .base_spacing = 1.0,
                        .major_line_every = 10,
                        .minor_color = { 0.5, 0.5, 0.5, 0.25 },
                        .major_color = { 0.5, 0.5, 0.5, 0.6 },
                        .u_color = { 0.9, 0.3, 0.3, 0.9 },
                        .v_color = { 0.3, 0.5, 0.9, 0.9 },
                        .fade = 0,
                        .display = KEEL_GRID_LINES };
}

static keel_status check_color(const double c[4], const char *path, keel_diags *d)
{
    for (int k = 0; k < 4; k++)
        if (!(c[k] >= 0 && c[k] <= 1)) /* NaN fails too */
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, path, "a grid colour's r, g, b, a must each be in [0, 1]");
    return KEEL_OK;
}

/* Everything keel_world_set_grid refuses; nothing changes here. */
static keel_status check_grid(const keel_grid *g, double *len, keel_diags *d)
{
    if (!g) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "settings.grid", "no grid given");
    for (int k = 0; k < 3; k++)
        if (!isfinite(g->origin[k]))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "settings.grid.origin", "grid origin is not finite");
    *len = 0;
    for (int k = 0; k < 4; k++) {
        if (!isfinite(g->orientation[k]))
            return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "settings.grid.orientation",
                              "grid orientation is not finite");
        *len += g->orientation[k] * g->orientation[k];
    }
    if (*len <= 0)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "settings.grid.orientation",
                          "grid orientation must be a non-zero quaternion");
    if (!isfinite(g->base_spacing) || g->base_spacing <= 0)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "settings.grid.base_spacing",
                          "grid base_spacing must be > 0");
    if (g->major_line_every < 1)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "settings.grid.major_line_every",
                          "grid major_line_every must be >= 1");
    keel_status st;
    if ((st = check_color(g->minor_color, "settings.grid.minor_color", d)) ||
        (st = check_color(g->major_color, "settings.grid.major_color", d)) ||
        (st = check_color(g->u_color, "settings.grid.u_color", d)) ||
        (st = check_color(g->v_color, "settings.grid.v_color", d)))
        return st;
    if (!isfinite(g->fade) || g->fade < 0)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "settings.grid.fade", "grid fade must be a finite number >= 0");
    if (g->display != KEEL_GRID_LINES && g->display != KEEL_GRID_DOTS && g->display != KEEL_GRID_NONE)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "settings.grid.display",
                          "grid display must be lines, dots or none");
    return KEEL_OK;
}

keel_status keel_world_set_grid(keel_world *w, const keel_grid *g, keel_diags *d)
{
    double len;
    keel_status st = check_grid(g, &len, d);
    if (st) return st;
    w->grid = *g;
    len = sqrt(len);
    if (fabs(len - 1.0) > 4 * DBL_EPSILON) /* near-unit stays put: see keel_field_check */
        for (int k = 0; k < 4; k++) w->grid.orientation[k] /= len;
    w->revision++;
    return KEEL_OK;
}

keel_status keel_world_set_settings(keel_world *w, const char *name, const keel_grid *grid, keel_cmd *inverse,
                                    keel_diags *d)
{
    if (inverse) memset(inverse, 0, sizeof *inverse);
    double len;
    keel_status st = name ? keel__name_check(name, "a scene", d) : KEEL_OK;
    if (st == KEEL_OK && grid) st = check_grid(grid, &len, d);
    if (st) return st;
    if (inverse) {
        inverse->type = KEEL_CMD_SETTINGS;
        inverse->index = SIZE_MAX;
        if (name) inverse->name = keel__strdup(w->name);
        if (grid) {
            inverse->grid = keel__xcalloc(1, sizeof *inverse->grid);
            *inverse->grid = w->grid;
        }
    }
    if (name) keel_world_set_name(w, name, NULL);
    if (grid) keel_world_set_grid(w, grid, NULL);
    return KEEL_OK;
}

uint64_t keel_world_revision(const keel_world *w) { return w->revision; }
void keel__world_set_revision(keel_world *w, uint64_t revision)
{
    w->revision = revision;
    w->revision_sets++;
}
uint64_t keel__world_revision_sets(const keel_world *w) { return w->revision_sets; }
uint64_t keel_world_epoch(const keel_world *w) { return w->epoch; }
keel_entity keel_world_root(const keel_world *w) { return keel__handle(w, 0); }
size_t keel_world_entity_count(const keel_world *w) { return w->live; }

/* ---------------------------------------------------------------- registry changes */

keel_world *keel__world_list(void) { return g_worlds; }

uint16_t keel__tag_next(void)
{
    static uint16_t last;
    for (unsigned tries = 0; tries < KEEL__TAG_MAX; tries++) {
        last = (uint16_t)(last % KEEL__TAG_MAX + 1); /* 1..4095: 0 would allow a generation of 0 */
        bool used = false;
        for (const keel_world *w = g_worlds; w && !used; w = w->next_world) used = w->tag == last;
        if (!used) return last;
    }
    return last; /* more live worlds than tags: shared, as handles then cannot tell them apart */
}

keel_status keel__refuse_frozen(keel_diags *d)
{
    return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "a replay's world is read-only (branch it to change it)");
}

bool keel__world_frozen(const keel_world *w) { return w->frozen; }
void keel__world_freeze(keel_world *w, bool on) { w->frozen = on; }
