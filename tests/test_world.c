/* test_world.c — worlds, entity handles, UUID lookup, the hierarchy, destroy, duplicate and the root protections. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "keel_test.h"
#include "keel.h"

#include "world_fixture.h"

static void world_new_has_root_and_no_entities(void **state)
{
    fx *f = *state;
    assert_string_equal(keel_world_name(f->w), "Test");
    assert_int_equal(keel_world_entity_count(f->w), 0);
    keel_entity root = keel_world_root(f->w);
    assert_true(root != KEEL_NO_ENTITY);
    assert_false(keel_alive(f->w, root)); /* never listed as an entity */
    assert_int_equal(keel_next(f->w, 0), KEEL_NO_ENTITY);
    keel_world *other = keel_world_new("Other");
    assert_true(keel_world_epoch(other) != keel_world_epoch(f->w));
    assert_false(keel_uuid_equal(keel_world_uuid(other), keel_world_uuid(f->w)));
    keel_world_free(other);
    keel_world_free(NULL);
}

/* Names are written to scene files: NULL and malformed UTF-8 are refused where a name comes in. */
static void world_names_must_be_utf8(void **state)
{
    fx *f = *state;
    keel_entity e;
    keel_status st = keel_spawn(f->w, "\xff\xfe", KEEL_NO_ENTITY, NULL, &e, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "an entity name must be valid UTF-8");
    assert_int_equal(keel_world_entity_count(f->w), 0);
    keel_entity a = spawn(f, "caf\xc3\xa9", 0);
    st = keel_rename(f->w, a, "\xc3", NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "an entity name must be valid UTF-8");
    assert_string_equal(keel_entity_name(f->w, a), "caf\xc3\xa9");
    st = keel_world_set_name(f->w, "\xe2\x9c", &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "a scene name must be valid UTF-8");
    assert_string_equal(keel_world_name(f->w), "Test");
    st = keel_world_set_grid(f->w, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "no grid given");
    assert_int_equal(keel_find_name(f->w, NULL), KEEL_NO_ENTITY);
}

static void world_spawn_and_find(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "Player", 0);
    assert_true(keel_alive(f->w, a));
    assert_string_equal(keel_entity_name(f->w, a), "Player");
    keel_uuid u = keel_entity_uuid(f->w, a);
    assert_int_equal(u.bytes[6] >> 4, 4);
    assert_int_equal(keel_find(f->w, u), a);
    assert_int_equal(keel_find_name(f->w, "Player"), a);
    assert_int_equal(keel_find_name(f->w, "Nobody"), KEEL_NO_ENTITY);
    assert_int_equal(keel_world_entity_count(f->w), 1);
    assert_int_equal(keel_find(f->w, keel_world_uuid(f->w)), KEEL_NO_ENTITY);
}

static void world_spawn_uuid_rules(void **state)
{
    fx *f = *state;
    keel_uuid u;
    assert_true(keel_uuid_parse("11111111-1111-1111-1111-111111111111", &u));
    keel_entity e;
    assert_int_equal(keel_spawn(f->w, "A", 0, &u, &e, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_find(f->w, u), e);
    keel_status st = keel_spawn(f->w, "B", 0, &u, &e, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "entity 11111111-1111-1111-1111-111111111111 already exists");
    keel_uuid nil = { { 0 } };
    st = keel_spawn(f->w, "C", 0, &nil, &e, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "an entity UUID cannot be nil");
    assert_int_equal(keel_world_entity_count(f->w), 1);
}

static void world_uuid_index_survives_many_removals(void **state)
{
    fx *f = *state;
    enum { N = 2000 };
    keel_entity *es = calloc(N, sizeof *es);
    for (int i = 0; i < N; i++) es[i] = spawn(f, "E", 0);
    for (int i = 0; i < N; i += 3) assert_int_equal(keel_destroy(f->w, es[i], NULL, &f->d), KEEL_OK);
    for (int i = 0; i < N; i++) {
        if (i % 3 == 0) continue;
        assert_int_equal(keel_find(f->w, keel_entity_uuid(f->w, es[i])), es[i]);
    }
    assert_int_equal(keel_world_entity_count(f->w), N - (N + 2) / 3);
    free(es);
}

/* The UUID index keeps finding every entity while the entity table grows past the widths its
 * slots were laid out for (no reserve: 20,000 spawns), after removals, and for UUIDs given
 * explicitly; a destroyed entity's UUID is not found and can be spawned again. */
static void world_uuid_index_survives_table_growth(void **state)
{
    fx *f = *state;
    enum { N = 20000 };
    keel_entity *es = calloc(N, sizeof *es);
    keel_uuid *us = calloc(N, sizeof *us);
    for (int i = 0; i < N; i++) {
        us[i] = keel_uuid_v4();
        if (i % 2) assert_int_equal(keel_spawn(f->w, "E", 0, &us[i], &es[i], NULL, &f->d), KEEL_OK);
        else es[i] = spawn(f, "E", 0), us[i] = keel_entity_uuid(f->w, es[i]);
    }
    for (int i = 0; i < N; i++) assert_int_equal(keel_find(f->w, us[i]), es[i]);
    for (int i = 0; i < N; i += 5) assert_int_equal(keel_destroy(f->w, es[i], NULL, &f->d), KEEL_OK);
    for (int i = 0; i < N; i++) assert_int_equal(keel_find(f->w, us[i]), i % 5 ? es[i] : KEEL_NO_ENTITY);
    for (int i = 0; i < N; i += 5) {
        assert_int_equal(keel_spawn(f->w, "E", 0, &us[i], &es[i], NULL, &f->d), KEEL_OK);
        assert_int_equal(keel_find(f->w, us[i]), es[i]);
    }
    keel_entity dup;
    assert_int_equal(keel_spawn(f->w, "E", 0, &us[7], &dup, NULL, &f->d), KEEL_INVALID_OPERATION);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    free(es);
    free(us);
}

static void world_hierarchy_preorder(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0);
    keel_entity a1 = spawn(f, "A1", a), a2 = spawn(f, "A2", a), a11 = spawn(f, "A11", a1);
    keel_entity want[] = { a, a1, a11, a2, b };
    size_t n = 0;
    for (keel_entity e = keel_next(f->w, 0); e; e = keel_next(f->w, e)) assert_int_equal(e, want[n++]);
    assert_int_equal(n, 5);
    assert_int_equal(keel_entity_parent(f->w, a1), a);
    assert_int_equal(keel_entity_parent(f->w, a), KEEL_NO_ENTITY);
    assert_int_equal(keel_entity_child_count(f->w, a), 2);
    assert_int_equal(keel_entity_child(f->w, a, 1), a2);
    assert_int_equal(keel_entity_child_count(f->w, keel_world_root(f->w)), 2);
    assert_int_equal(keel_entity_child(f->w, 0, 1), b);
}

static void world_reparent_and_cycles(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", a), c = spawn(f, "C", b);
    keel_status st = keel_reparent(f->w, a, c, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "reparenting would create a cycle");
    st = keel_reparent(f->w, a, a, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "reparenting would create a cycle");
    assert_int_equal(keel_reparent(f->w, c, 0, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_entity_parent(f->w, c), KEEL_NO_ENTITY);
    assert_int_equal(keel_entity_child(f->w, 0, 1), c);
    st = keel_reparent(f->w, keel_world_root(f->w), a, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_PROTECTED_ENTITY, "the scene root cannot be reparented");
}

static void world_depth_limit(void **state)
{
    fx *f = *state;
    keel_entity p = 0;
    for (int i = 0; i < 256; i++) p = spawn(f, "D", p);
    keel_entity e;
    keel_status st = keel_spawn(f->w, "deep", p, NULL, &e, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_LIMIT_EXCEEDED, "hierarchy depth limit (256) exceeded");
    keel_entity x = spawn(f, "X", 0), y = spawn(f, "Y", x);
    (void)y;
    st = keel_reparent(f->w, x, keel_entity_parent(f->w, p), NULL, &f->d);
    assert_diag(st, &f->d, KEEL_LIMIT_EXCEEDED, "hierarchy depth limit (256) exceeded");
}

static void world_destroy_reparents_children_to_top(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", a), c = spawn(f, "C", a), d = spawn(f, "D", b);
    add(f, a, "core:transform");
    assert_int_equal(keel_destroy(f->w, a, NULL, &f->d), KEEL_OK);
    assert_false(keel_alive(f->w, a));
    assert_null(keel_entity_name(f->w, a));
    assert_true(keel_alive(f->w, b));
    assert_int_equal(keel_entity_parent(f->w, b), KEEL_NO_ENTITY);
    assert_int_equal(keel_entity_parent(f->w, c), KEEL_NO_ENTITY);
    assert_int_equal(keel_entity_parent(f->w, d), b);
    assert_int_equal(keel_world_entity_count(f->w), 3);
    assert_int_equal(keel_storage_count(f->w, K("core:transform")), 0);
    keel_status st = keel_destroy(f->w, a, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "entity not found");
}

static void world_root_is_protected(void **state)
{
    fx *f = *state;
    keel_entity root = keel_world_root(f->w), e;
    keel_status st = keel_destroy(f->w, root, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_PROTECTED_ENTITY, "the scene root cannot be destroyed");
    st = keel_duplicate(f->w, root, 0, &e, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_PROTECTED_ENTITY, "the scene root cannot be duplicated");
    st = keel_rename(f->w, root, "x", NULL, &f->d);
    assert_diag(st, &f->d, KEEL_PROTECTED_ENTITY, "the scene root cannot be renamed");
    st = keel_set_enabled(f->w, root, false, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_PROTECTED_ENTITY, "the scene root cannot be disabled");
    assert_int_equal(keel_world_entity_count(f->w), 0);
}

static void world_rename_and_enable(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", a);
    assert_int_equal(keel_rename(f->w, a, "Renamed", NULL, &f->d), KEEL_OK);
    assert_string_equal(keel_entity_name(f->w, a), "Renamed");
    assert_int_equal(keel_set_enabled(f->w, a, false, NULL, &f->d), KEEL_OK);
    assert_false(keel_entity_enabled(f->w, a));
    assert_true(keel_entity_enabled(f->w, b));
    assert_false(keel_entity_active(f->w, b));
}

static const keel_field_desc link_fields[] = { { .key = "target", .type = KEEL_T_ENTITY } };

static void world_duplicate_copies_slots_unknowns_and_remaps(void **state)
{
    fx *f = *state;
    keel_kind_desc kd = { 0 };
    kd.key = "test:link";
    kd.version = 1;
    kd.fields = link_fields;
    kd.field_count = 1;
    assert_int_equal(keel_kind_declare(&kd, NULL, &f->d), KEEL_OK);
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", a), outside = spawn(f, "Out", 0);
    add(f, a, "core:transform");
    add(f, a, "core:audio_source");
    add(f, a, "core:audio_source");
    add(f, a, "core:audio_source");
    assert_int_equal(keel_remove(f->w, a, "core:audio_source", 1, NULL, &f->d), KEEL_OK);
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "pull", keel_node_new_scalar("3", KEEL_STYLE_PLAIN));
    assert_int_equal(keel_add_unknown(f->w, a, "mod:winch", 1, 7, body, &f->d), KEEL_OK);
    keel_comp la = add(f, a, "test:link"), lb = add(f, b, "test:link");
    keel_value v = { .type = KEEL_T_ENTITY, .as.u = keel_entity_uuid(f->w, b) };
    assert_int_equal(keel_set(f->w, la, 0, &v, NULL, &f->d), KEEL_OK);
    v.as.u = keel_entity_uuid(f->w, outside);
    assert_int_equal(keel_set(f->w, lb, 0, &v, NULL, &f->d), KEEL_OK);

    keel_entity copy;
    assert_int_equal(keel_duplicate(f->w, a, 0, &copy, NULL, &f->d), KEEL_OK);
    assert_true(copy != a);
    assert_false(keel_uuid_equal(keel_entity_uuid(f->w, copy), keel_entity_uuid(f->w, a)));
    assert_int_equal(keel_world_entity_count(f->w), 5);
    assert_int_equal(keel_member_count(f->w, copy), keel_member_count(f->w, a));
    for (size_t i = 0; i < keel_member_count(f->w, a); i++) {
        keel_member m1, m2;
        keel_member_at(f->w, a, i, &m1);
        keel_member_at(f->w, copy, i, &m2);
        assert_string_equal(m1.key, m2.key);
        assert_int_equal(m1.slot, m2.slot);
        assert_int_equal(m1.loaded, m2.loaded);
        if (!m1.loaded) assert_true(keel_node_equal(m1.preserved, m2.preserved));
    }
    keel_entity bcopy = keel_entity_child(f->w, copy, 0);
    assert_string_equal(keel_entity_name(f->w, bcopy), "B");
    keel_comp cl;
    assert_true(keel_get_comp(f->w, copy, K("test:link"), KEEL_SLOT_AUTO, &cl));
    assert_int_equal(keel_get(f->w, cl, 0, &v, &f->d), KEEL_OK);
    assert_true(keel_uuid_equal(v.as.u, keel_entity_uuid(f->w, bcopy))); /* inside: remapped */
    assert_true(keel_get_comp(f->w, bcopy, K("test:link"), KEEL_SLOT_AUTO, &cl));
    assert_int_equal(keel_get(f->w, cl, 0, &v, &f->d), KEEL_OK);
    assert_true(keel_uuid_equal(v.as.u, keel_entity_uuid(f->w, outside))); /* outside: kept */
    keel_node_free(body);
}

static void world_duplicate_under_own_child(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", a), copy;
    assert_int_equal(keel_duplicate(f->w, a, b, &copy, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_entity_parent(f->w, copy), b);
    assert_int_equal(keel_world_entity_count(f->w), 4);
}

static void world_matrix_composes_parent_and_local(void **state)
{
    fx *f = *state;
    keel_entity p = spawn(f, "P", 0), c = spawn(f, "C", p);
    keel_comp pt = add(f, p, "core:transform"), ct = add(f, c, "core:transform");
    keel_value v = { .type = KEEL_T_VEC3, .as.v = { 10, 0, 0 } };
    assert_int_equal(keel_set(f->w, pt, 0, &v, NULL, &f->d), KEEL_OK);
    keel_value q = { .type = KEEL_T_QUAT, .as.v = { 0, 0, 0.70710678118654752, 0.70710678118654752 } };
    assert_int_equal(keel_set(f->w, pt, 1, &q, NULL, &f->d), KEEL_OK); /* 90 degrees about z */
    keel_value s = { .type = KEEL_T_VEC3, .as.v = { 2, 2, 2 } };
    assert_int_equal(keel_set(f->w, pt, 2, &s, NULL, &f->d), KEEL_OK);
    v.as.v[0] = 1;
    assert_int_equal(keel_set(f->w, ct, 0, &v, NULL, &f->d), KEEL_OK);
    double m[16];
    assert_int_equal(keel_world_matrix(f->w, c, m), KEEL_OK);
    /* child's origin: parent (10,0,0) + R(90z) * 2 * (1,0,0) = (10, 2, 0) */
    assert_true(fabs(m[12] - 10) < 1e-9);
    assert_true(fabs(m[13] - 2) < 1e-9);
    assert_true(fabs(m[14]) < 1e-9);
    keel_entity bare = spawn(f, "Bare", 0);
    assert_int_equal(keel_world_matrix(f->w, bare, m), KEEL_OK);
    assert_true(m[0] == 1 && m[5] == 1 && m[10] == 1 && m[15] == 1 && m[12] == 0);
}

static void world_grid_and_name(void **state)
{
    fx *f = *state;
    keel_grid g = *keel_world_grid(f->w);
    assert_true(g.enabled);
    g.base_spacing = 0;
    keel_status st = keel_world_set_grid(f->w, &g, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "grid base_spacing must be > 0");
    g.base_spacing = 2;
    assert_int_equal(keel_world_set_grid(f->w, &g, &f->d), KEEL_OK);
    assert_true(keel_world_grid(f->w)->base_spacing == 2);
    assert_int_equal(keel_world_set_name(f->w, "Arena", &f->d), KEEL_OK);
    assert_string_equal(keel_world_name(f->w), "Arena");
}

/* The scene's name and grid as one undoable command (registry.md's settings, editing.md's reload):
 * checked whole before anything changes, its inverse puts both back, and it applies as a command
 * inside a batch that rolls back as one. */
static void world_settings_command(void **state)
{
    fx *f = *state;
    keel_grid def = keel_grid_default(), g = def;
    assert_true(def.display == KEEL_GRID_LINES && def.fade == 0 && def.major_color[3] > 0);
    g.major_color[0] = 1.5; /* out of [0, 1]: nothing changes, the name neither */
    keel_cmd inv = { 0 };
    assert_diag(keel_world_set_settings(f->w, "Renamed", &g, &inv, &f->d), &f->d, KEEL_INVALID_ARGUMENT,
                "must each be in [0, 1]");
    assert_int_equal(inv.type, KEEL_CMD_NONE);
    assert_string_equal(keel_world_name(f->w), "Test");
    g = def;
    g.display = (keel_grid_display)7;
    assert_diag(keel_world_set_grid(f->w, &g, &f->d), &f->d, KEEL_INVALID_ARGUMENT, "lines, dots or none");
    g = def;
    g.fade = -1;
    assert_diag(keel_world_set_grid(f->w, &g, &f->d), &f->d, KEEL_INVALID_ARGUMENT, "fade");

    g = def;
    g.display = KEEL_GRID_DOTS;
    g.fade = 25;
    g.u_color[1] = 1;
    uint64_t rev = keel_world_revision(f->w);
    assert_int_equal(keel_world_set_settings(f->w, "Renamed", &g, &inv, &f->d), KEEL_OK);
    assert_true(keel_world_revision(f->w) > rev);
    assert_string_equal(keel_world_name(f->w), "Renamed");
    assert_true(keel_world_grid(f->w)->display == KEEL_GRID_DOTS && keel_world_grid(f->w)->u_color[1] == 1);
    assert_int_equal(inv.type, KEEL_CMD_SETTINGS);

    keel_cmd redo = { 0 };
    assert_int_equal(keel_cmd_apply(f->w, &inv, &redo, &f->d), KEEL_OK);
    assert_string_equal(keel_world_name(f->w), "Test");
    assert_true(keel_world_grid(f->w)->display == KEEL_GRID_LINES && keel_world_grid(f->w)->fade == 0);

    /* in a batch whose second item fails, the settings roll back too */
    keel_cmd items[2];
    memset(items, 0, sizeof items);
    char renamed[] = "Renamed";
    items[0].type = KEEL_CMD_SETTINGS;
    items[0].name = renamed;
    items[0].grid = &g;
    items[1].type = KEEL_CMD_DESTROY; /* a UUID not in the world: NotFound */
    items[1].entity = keel_uuid_v4();
    keel_cmd batch = { .type = KEEL_CMD_BATCH, .items = items, .item_count = 2 };
    keel_cmd none = { 0 };
    assert_int_equal(keel_cmd_apply(f->w, &batch, &none, &f->d), KEEL_NOT_FOUND);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    assert_string_equal(keel_world_name(f->w), "Test");
    assert_true(keel_world_grid(f->w)->display == KEEL_GRID_LINES);
    keel_cmd_free(&redo);
    keel_cmd_free(&inv);
    keel_cmd_free(&inv); /* twice is safe */
}

static void world_names_are_shared_and_recycled(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "Bullet", 0), b = spawn(f, "Bullet", 0);
    assert_ptr_equal(keel_entity_name(f->w, a), keel_entity_name(f->w, b));
    char name[32];
    for (int round = 0; round < 4; round++) {
        keel_entity es[500];
        for (int i = 0; i < 500; i++) {
            snprintf(name, sizeof name, "Enemy %d", round * 500 + i);
            es[i] = spawn(f, name, 0);
        }
        for (int i = 0; i < 500; i += 7) {
            snprintf(name, sizeof name, "Enemy %d", round * 500 + i);
            assert_int_equal(keel_find_name(f->w, name), es[i]);
            assert_string_equal(keel_entity_name(f->w, es[i]), name);
        }
        for (int i = 0; i < 500; i++) assert_int_equal(keel_destroy(f->w, es[i], NULL, &f->d), KEEL_OK);
    }
    assert_int_equal(keel_rename(f->w, a, "Bullet", NULL, &f->d), KEEL_OK);
    assert_string_equal(keel_entity_name(f->w, a), "Bullet");
    assert_int_equal(keel_rename(f->w, b, "Shell", NULL, &f->d), KEEL_OK);
    assert_string_equal(keel_entity_name(f->w, a), "Bullet");
    assert_string_equal(keel_entity_name(f->w, b), "Shell");
    assert_int_equal(keel_find_name(f->w, "Shell"), b);
}

/* A random run of spawns, destroys (some undone), reparents, renames and world copies, checked
 * after every step against a model kept by UUID: every entity's parent, children in order and
 * name, and every handle of a destroyed entity refused even once its index is reused. The
 * children records live in a side map with the last-linked parent cached, so this walks
 * records being freed, reused by other parents and the map growing and shrinking. */
enum { HM = 400 };
typedef struct hnode {
    keel_uuid u;
    bool alive;
    int parent;        /* model index, -1: top level */
    uint64_t stamp;    /* order among siblings */
    int name;
} hnode;
typedef struct hmodel {
    hnode n[HM];
    int count;
    uint64_t clock;
} hmodel;

static const char *hname(int k)
{
    static const char *names[] = { "Crate", "Enemy", "Light", "", "Crate 2" };
    return names[k % 5];
}

static keel_entity hfind(keel_world *w, const hmodel *m, int i) { return keel_find(w, m->n[i].u); }

static void hcheck(keel_world *w, const hmodel *m)
{
    size_t live = 0;
    for (int i = 0; i < m->count; i++) {
        const hnode *n = &m->n[i];
        keel_entity e = hfind(w, m, i);
        if (!n->alive) {
            assert_int_equal(e, KEEL_NO_ENTITY);
            continue;
        }
        live++;
        assert_true(e != KEEL_NO_ENTITY);
        assert_string_equal(keel_entity_name(w, e), hname(n->name));
        keel_entity p = keel_entity_parent(w, e);
        if (n->parent < 0) assert_int_equal(p, KEEL_NO_ENTITY);
        else assert_int_equal(p, hfind(w, m, n->parent));
        /* children, in stamp order */
        size_t want = 0;
        uint64_t last = 0;
        keel_entity c = keel_entity_first_child(w, e);
        for (; c; c = keel_entity_next_sibling(w, c)) {
            int ci = -1;
            for (int k = 0; k < m->count && ci < 0; k++)
                if (m->n[k].alive && keel_uuid_equal(m->n[k].u, keel_entity_uuid(w, c))) ci = k;
            assert_true(ci >= 0);
            assert_int_equal(m->n[ci].parent, i);
            assert_true(m->n[ci].stamp > last);
            last = m->n[ci].stamp;
            want++;
        }
        size_t kids = 0;
        for (int k = 0; k < m->count; k++) kids += m->n[k].alive && m->n[k].parent == i;
        assert_int_equal(want, kids);
        assert_int_equal(keel_entity_child_count(w, e), kids);
    }
    assert_int_equal(keel_world_entity_count(w), live);
}

static bool hunder(const hmodel *m, int i, int anc) /* whether i is anc or under it */
{
    for (; i >= 0; i = m->n[i].parent)
        if (i == anc) return true;
    return false;
}

static void world_random_hierarchy_matches_a_model(void **state)
{
    fx *f = *state;
    static hmodel m, saved;
    memset(&m, 0, sizeof m);
    keel_entity stale[64];
    int nstale = 0;
    unsigned seed = 12345;
#define HR() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    for (int step = 0; step < 2000; step++) {
        int op = (int)(HR() % 10), i = m.count ? (int)(HR() % (unsigned)m.count) : 0;
        if (op < 4 && m.count < HM) { /* spawn under a random live entity or at top level */
            int p = (m.count && HR() % 3) ? (int)(HR() % (unsigned)m.count) : -1;
            if (p >= 0 && !m.n[p].alive) p = -1;
            int depth = 0;
            for (int q = p; q >= 0; q = m.n[q].parent) depth++;
            if (depth > 200) p = -1;
            hnode *n = &m.n[m.count];
            n->name = (int)(HR() % 5);
            keel_entity e = spawn(f, hname(n->name), p < 0 ? KEEL_NO_ENTITY : hfind(f->w, &m, p));
            n->u = keel_entity_uuid(f->w, e);
            n->alive = true;
            n->parent = p;
            n->stamp = ++m.clock;
            m.count++;
        } else if (op < 6 && m.count && m.n[i].alive) { /* destroy: children to the top level */
            bool undo = HR() % 3 == 0;
            keel_entity e = hfind(f->w, &m, i);
            if (undo) saved = m;
            keel_cmd inv;
            assert_int_equal(keel_destroy(f->w, e, undo ? &inv : NULL, &f->d), KEEL_OK);
            if (nstale < 64) stale[nstale++] = e;
            m.n[i].alive = false;
            for (int k = 0; k < m.count; k++) /* in sibling order */
                for (int j = 0; j < m.count; j++) {
                    (void)k;
                    int best = -1;
                    for (int c = 0; c < m.count; c++)
                        if (m.n[c].alive && m.n[c].parent == i && (best < 0 || m.n[c].stamp < m.n[best].stamp)) best = c;
                    if (best < 0) break;
                    m.n[best].parent = -1;
                    m.n[best].stamp = ++m.clock;
                }
            hcheck(f->w, &m);
            if (undo) {
                assert_int_equal(keel_cmd_apply(f->w, &inv, NULL, &f->d), KEEL_OK);
                keel_cmd_free(&inv);
                uint64_t clock = m.clock;
                m = saved;
                m.clock = clock;
            }
        } else if (op < 8 && m.count && m.n[i].alive) { /* reparent: a cycle is refused */
            int p = (int)(HR() % (unsigned)m.count);
            if (!m.n[p].alive || HR() % 4 == 0) p = -1;
            int depth = 0;
            for (int q = p; q >= 0; q = m.n[q].parent) depth++;
            int sub = 0; /* the moved subtree's height */
            for (int k = 0; k < m.count; k++)
                if (m.n[k].alive && hunder(&m, k, i)) {
                    int h = 0;
                    for (int q = k; q != i; q = m.n[q].parent) h++;
                    if (h > sub) sub = h;
                }
            keel_status st = keel_reparent(f->w, hfind(f->w, &m, i), p < 0 ? KEEL_NO_ENTITY : hfind(f->w, &m, p), NULL, NULL);
            if (p >= 0 && hunder(&m, p, i)) {
                assert_int_equal(st, KEEL_INVALID_OPERATION);
            } else if (depth + 1 + sub > 256) {
                assert_int_equal(st, KEEL_LIMIT_EXCEEDED);
            } else {
                assert_int_equal(st, KEEL_OK);
                m.n[i].parent = p;
                m.n[i].stamp = ++m.clock;
            }
        } else if (op == 8 && m.count && m.n[i].alive) {
            m.n[i].name = (int)(HR() % 5);
            assert_int_equal(keel_rename(f->w, hfind(f->w, &m, i), hname(m.n[i].name), NULL, &f->d), KEEL_OK);
        } else if (op == 9 && step % 50 == 0) { /* play then stop: a copy, then the world as it was */
            assert_int_equal(keel_world_play(f->w, &f->d), KEEL_OK);
            for (int k = 0; k < m.count; k++)
                if (m.n[k].alive) keel_destroy(f->w, hfind(f->w, &m, k), NULL, NULL);
            assert_int_equal(keel_world_stop(f->w, &f->d), KEEL_OK);
        }
        hcheck(f->w, &m);
        for (int s = 0; s < nstale; s++) { /* a destroyed entity's handle never reaches another */
            assert_null(keel_entity_name(f->w, stale[s]));
            assert_int_equal(keel_reparent(f->w, stale[s], KEEL_NO_ENTITY, NULL, NULL), KEEL_NOT_FOUND);
        }
    }
#undef HR
}

/* keel_entity_child answers by index from any starting point, and after every kind of change. */
/* Many parents at once, children moved between them and parents emptied or destroyed in a
 * scattered order: every parent still lists exactly its children, in order. */
static void world_many_parents_keep_their_children(void **state)
{
    fx *f = *state;
    enum { P = 300, C = 3 };
    keel_entity parents[P], kids[P][C];
    for (int p = 0; p < P; p++) {
        parents[p] = spawn(f, "P", 0);
        for (int c = 0; c < C; c++) kids[p][c] = spawn(f, "C", parents[p]);
    }
    /* every third parent's children move to the next parent: the mover becomes a leaf */
    for (int p = 0; p + 1 < P; p += 3)
        for (int c = 0; c < C; c++)
            assert_int_equal(keel_reparent(f->w, kids[p][c], parents[p + 1], NULL, &f->d), KEEL_OK);
    /* every fifth parent is destroyed: its children go to the top level */
    for (int p = 4; p < P; p += 5) assert_int_equal(keel_destroy(f->w, parents[p], NULL, &f->d), KEEL_OK);
    for (int p = 0; p < P; p++) {
        if (p % 5 == 4) {
            assert_false(keel_alive(f->w, parents[p]));
            continue;
        }
        size_t want = p % 3 == 0 && p + 1 < P ? 0 : p % 3 == 1 ? 2 * C : C;
        assert_int_equal(keel_entity_child_count(f->w, parents[p]), want);
        keel_entity c = keel_entity_first_child(f->w, parents[p]);
        for (size_t k = 0; k < want; k++, c = keel_entity_next_sibling(f->w, c)) {
            keel_entity expect = p % 3 == 1 ? (k < C ? kids[p][k] : kids[p - 1][k - C]) : kids[p][k];
            assert_int_equal(c, expect);
            assert_int_equal(keel_entity_parent(f->w, c), parents[p]);
        }
        assert_int_equal(c, KEEL_NO_ENTITY);
    }
    /* a leaf again takes children again */
    keel_entity again = spawn(f, "C", parents[0]);
    assert_int_equal(keel_entity_child_count(f->w, parents[0]), 1);
    assert_int_equal(keel_entity_first_child(f->w, parents[0]), again);
}

static void world_child_by_index_and_sibling_walk(void **state)
{
    fx *f = *state;
    enum { N = 300 };
    keel_entity p = spawn(f, "P", 0), kids[N];
    for (int i = 0; i < N; i++) kids[i] = spawn(f, "K", p);
    for (int i = 0; i < N; i++) assert_int_equal(keel_entity_child(f->w, p, (size_t)i), kids[i]);
    for (int i = N - 1; i >= 0; i--) assert_int_equal(keel_entity_child(f->w, p, (size_t)i), kids[i]);
    for (int i = 0; i < N; i++) {
        size_t j = (size_t)(i * 7919) % N; /* jumping around */
        assert_int_equal(keel_entity_child(f->w, p, j), kids[j]);
    }
    assert_int_equal(keel_entity_child(f->w, p, N), KEEL_NO_ENTITY);
    assert_int_equal(keel_entity_child(f->w, 0, 0), p);
    assert_int_equal(keel_entity_child(f->w, 0, 1), KEEL_NO_ENTITY);
    /* the cache follows changes: destroy one, move one to the end, index again */
    assert_int_equal(keel_entity_child(f->w, p, 150), kids[150]);
    assert_int_equal(keel_destroy(f->w, kids[100], NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_entity_child(f->w, p, 150), kids[151]);
    assert_int_equal(keel_reparent(f->w, kids[0], p, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_entity_child(f->w, p, 149), kids[151]);
    assert_int_equal(keel_entity_child(f->w, p, N - 2), kids[0]);
    assert_int_equal(keel_entity_child(f->w, p, 0), kids[1]);
    /* a second parent does not read the first one's cache */
    keel_entity q = spawn(f, "Q", 0), q0 = spawn(f, "Q0", q);
    assert_int_equal(keel_entity_child(f->w, p, 5), kids[6]);
    assert_int_equal(keel_entity_child(f->w, q, 0), q0);
    assert_int_equal(keel_entity_child(f->w, q, 5), KEEL_NO_ENTITY);
    /* the sibling walk sees the same order */
    size_t n = 0;
    for (keel_entity c = keel_entity_first_child(f->w, p); c; c = keel_entity_next_sibling(f->w, c), n++)
        assert_int_equal(c, keel_entity_child(f->w, p, n));
    assert_int_equal(n, N - 1);
    assert_int_equal(keel_entity_first_child(f->w, 0), p);
    assert_int_equal(keel_entity_next_sibling(f->w, p), q);
    assert_int_equal(keel_entity_next_sibling(f->w, q), KEEL_NO_ENTITY);
    assert_int_equal(keel_entity_first_child(f->w, q0), KEEL_NO_ENTITY);
    assert_int_equal(keel_entity_next_sibling(f->w, keel_world_root(f->w)), KEEL_NO_ENTITY);
    assert_int_equal(keel_entity_next_sibling(f->w, kids[100]), KEEL_NO_ENTITY); /* stale */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(world_new_has_root_and_no_entities),
        T(world_child_by_index_and_sibling_walk),
        T(world_many_parents_keep_their_children),
        T(world_names_must_be_utf8),
        T(world_spawn_and_find),
        T(world_spawn_uuid_rules),
        T(world_uuid_index_survives_table_growth),
        T(world_uuid_index_survives_many_removals),
        T(world_hierarchy_preorder),
        T(world_reparent_and_cycles),
        T(world_depth_limit),
        T(world_destroy_reparents_children_to_top),
        T(world_root_is_protected),
        T(world_rename_and_enable),
        T(world_duplicate_copies_slots_unknowns_and_remaps),
        T(world_duplicate_under_own_child),
        T(world_matrix_composes_parent_and_local),
        T(world_grid_and_name),
        T(world_settings_command),
        T(world_names_are_shared_and_recycled),
        T(world_random_hierarchy_matches_a_model),
    };
    return KEEL_TEST_RUN(tests, group_setup, group_teardown);
}
