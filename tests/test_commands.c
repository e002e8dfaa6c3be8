/* test_commands.c — every authoring command returns an inverse that undoes it, and the inverse of that redoes it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keel_test.h"
#include "keel.h"
#include "model/world.h"
#include "model/command.h"

#include "world_fixture.h"

/* The whole world as one tree: the root's document, then every entity's in run order. */
static keel_node *snap(fx *f)
{
    keel_node *s = keel_node_new_seq();
    keel_node_push(s, keel__entity_tree(f->w, 0));
    for (keel_entity e = keel_next(f->w, 0); e; e = keel_next(f->w, e))
        keel_node_push(s, keel__entity_tree(f->w, (uint32_t)e));
    return s;
}

/* Undo with `inv`, redo with its inverse, undo again: the world alternates between the two states. */
static void undo_redo(fx *f, keel_node *before, keel_cmd *inv)
{
    keel_node *after = snap(f);
    assert_false(keel_node_equal(before, after));
    keel_cmd redo, undo2;
    assert_int_equal(keel_cmd_apply(f->w, inv, &redo, &f->d), KEEL_OK);
    keel_node *s = snap(f);
    assert_true(keel_node_equal(s, before));
    keel_node_free(s);
    assert_int_equal(keel_cmd_apply(f->w, &redo, &undo2, &f->d), KEEL_OK);
    s = snap(f);
    assert_true(keel_node_equal(s, after));
    keel_node_free(s);
    assert_int_equal(keel_cmd_apply(f->w, &undo2, NULL, &f->d), KEEL_OK);
    s = snap(f);
    assert_true(keel_node_equal(s, before));
    keel_node_free(s);
    keel_cmd_free(&redo);
    keel_cmd_free(&undo2);
    keel_cmd_free(inv);
    keel_node_free(after);
    keel_node_free(before);
}

static keel_entity rich(fx *f, const char *name, keel_entity parent)
{
    keel_entity e = spawn(f, name, parent);
    keel_comp t = add(f, e, "core:transform");
    keel_value v = { .type = KEEL_T_VEC3, .as.v = { 1, 2, 3 } };
    assert_int_equal(keel_set(f->w, t, 0, &v, NULL, &f->d), KEEL_OK);
    add(f, e, "core:audio_source");
    add(f, e, "core:audio_source");
    keel_comp a2 = add(f, e, "core:audio_source");
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 1, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_comp_set_enabled(f->w, a2, false, NULL, &f->d), KEEL_OK);
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "pull", keel_node_new_scalar("3.50", KEEL_STYLE_PLAIN));
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 3, 4, body, &f->d), KEEL_OK);
    keel_node_free(body);
    return e;
}

static void commands_spawn_inverse(void **state)
{
    fx *f = *state;
    rich(f, "First", 0);
    keel_node *before = snap(f);
    keel_cmd inv;
    keel_entity e;
    assert_int_equal(keel_spawn(f->w, "New", 0, NULL, &e, &inv, &f->d), KEEL_OK);
    assert_int_equal(inv.type, KEEL_CMD_DESTROY);
    undo_redo(f, before, &inv);
}

static void commands_destroy_inverse_restores_children_and_bodies(void **state)
{
    fx *f = *state;
    keel_entity a = rich(f, "A", 0);
    keel_entity b = rich(f, "B", a);
    rich(f, "C", a);
    rich(f, "D", b);
    rich(f, "After", 0);
    keel_entity mid = rich(f, "Mid", a);
    assert_int_equal(keel_set_enabled(f->w, mid, false, NULL, &f->d), KEEL_OK);
    keel_node *before = snap(f);
    keel_cmd inv;
    assert_int_equal(keel_destroy(f->w, a, &inv, &f->d), KEEL_OK);
    assert_int_equal(inv.type, KEEL_CMD_BATCH);
    assert_int_equal(inv.items[0].type, KEEL_CMD_SPAWN);
    assert_non_null(inv.items[0].tree);
    undo_redo(f, before, &inv);
}

static void commands_add_and_remove_inverse_same_slot(void **state)
{
    fx *f = *state;
    keel_entity e = rich(f, "A", 0);
    keel_node *before = snap(f);
    keel_cmd inv;
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 2, &inv, &f->d), KEEL_OK);
    assert_int_equal(inv.type, KEEL_CMD_BATCH); /* it was disabled: re-add, then disable */
    undo_redo(f, before, &inv);
    keel_comp c;
    assert_true(keel_get_comp(f->w, e, K("core:audio_source"), 2, &c));

    before = snap(f);
    assert_int_equal(keel_remove(f->w, e, "core:audio_source", 0, &inv, &f->d), KEEL_OK);
    assert_int_equal(inv.type, KEEL_CMD_ADD);
    assert_int_equal(inv.slot, 0);
    undo_redo(f, before, &inv);

    before = snap(f);
    assert_int_equal(keel_remove(f->w, e, "mod:winch", 4, &inv, &f->d), KEEL_OK);
    undo_redo(f, before, &inv);

    before = snap(f);
    assert_int_equal(keel_add(f->w, e, K("core:camera"), NULL, NULL, &inv, &f->d), KEEL_OK);
    assert_int_equal(inv.type, KEEL_CMD_REMOVE);
    undo_redo(f, before, &inv);
}

static void commands_set_inverse(void **state)
{
    fx *f = *state;
    keel_entity e = rich(f, "A", 0);
    keel_comp c;
    assert_true(keel_get_comp(f->w, e, K("core:transform"), 0, &c));
    keel_node *before = snap(f);
    keel_cmd inv;
    keel_value v = { .type = KEEL_T_VEC3, .as.v = { 9, 9, 9 } };
    assert_int_equal(keel_set(f->w, c, 0, &v, &inv, &f->d), KEEL_OK);
    assert_int_equal(inv.type, KEEL_CMD_SET);
    assert_string_equal(inv.field, "position");
    assert_true(inv.value.as.v[0] == 1);
    undo_redo(f, before, &inv);
}

static void commands_reparent_inverse_keeps_sibling_index(void **state)
{
    fx *f = *state;
    keel_entity p = spawn(f, "P", 0);
    spawn(f, "A", p);
    keel_entity b = spawn(f, "B", p);
    spawn(f, "C", p);
    keel_entity q = spawn(f, "Q", 0);
    keel_node *before = snap(f);
    keel_cmd inv;
    assert_int_equal(keel_reparent(f->w, b, q, &inv, &f->d), KEEL_OK);
    assert_int_equal(inv.index, 1);
    undo_redo(f, before, &inv);
}

static void commands_rename_enable_inverse(void **state)
{
    fx *f = *state;
    keel_entity e = rich(f, "A", 0);
    keel_node *before = snap(f);
    keel_cmd inv;
    assert_int_equal(keel_rename(f->w, e, "B", &inv, &f->d), KEEL_OK);
    undo_redo(f, before, &inv);
    before = snap(f);
    assert_int_equal(keel_set_enabled(f->w, e, false, &inv, &f->d), KEEL_OK);
    undo_redo(f, before, &inv);
    before = snap(f);
    keel_comp c;
    assert_true(keel_get_comp(f->w, e, K("core:audio_source"), 0, &c));
    assert_int_equal(keel_comp_set_enabled(f->w, c, false, &inv, &f->d), KEEL_OK);
    assert_int_equal(inv.type, KEEL_CMD_ENABLE_COMPONENT);
    undo_redo(f, before, &inv);
}

static void commands_duplicate_inverse(void **state)
{
    fx *f = *state;
    keel_entity a = rich(f, "A", 0);
    rich(f, "B", a);
    keel_node *before = snap(f);
    keel_cmd inv;
    keel_entity copy;
    assert_int_equal(keel_duplicate(f->w, a, 0, &copy, &inv, &f->d), KEEL_OK);
    assert_int_equal(keel_world_entity_count(f->w), 4);
    undo_redo(f, before, &inv);
    assert_int_equal(keel_world_entity_count(f->w), 2);
}

static void commands_batch_is_all_or_nothing(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_cmd batch = { 0 };
    batch.type = KEEL_CMD_BATCH;
    batch.item_count = 2;
    batch.items = calloc(2, sizeof *batch.items);
    batch.items[0].type = KEEL_CMD_RENAME;
    batch.items[0].entity = keel_entity_uuid(f->w, e);
    batch.items[0].name = strdup("Changed");
    batch.items[1].type = KEEL_CMD_DESTROY;
    assert_true(keel_uuid_parse("22222222-2222-4222-8222-222222222222", &batch.items[1].entity));
    keel_status st = keel_cmd_apply(f->w, &batch, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "entity 22222222-2222-4222-8222-222222222222 not found");
    assert_string_equal(keel_entity_name(f->w, e), "A");
    keel_cmd_free(&batch);
    assert_int_equal(batch.type, KEEL_CMD_NONE);
}

static void commands_set_by_key_on_unknown_is_unsupported(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    assert_int_equal(keel_add_unknown(f->w, e, "mod:winch", 1, 0, NULL, &f->d), KEEL_OK);
    keel_cmd c = { 0 };
    c.type = KEEL_CMD_SET;
    c.entity = keel_entity_uuid(f->w, e);
    c.kind_key = strdup("mod:winch");
    c.field = strdup("pull");
    c.value.type = KEEL_T_FLOAT;
    c.value.as.f = 2;
    keel_status st = keel_cmd_apply(f->w, &c, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_UNSUPPORTED, "mod:winch is not loaded");
    keel_cmd_free(&c);
}

static void commands_revision_bumps(void **state)
{
    fx *f = *state;
    uint64_t r = keel_world_revision(f->w);
    keel_entity e = spawn(f, "A", 0);
    assert_true(keel_world_revision(f->w) > r);
    r = keel_world_revision(f->w);
    keel_rename(f->w, e, "B", NULL, &f->d);
    assert_true(keel_world_revision(f->w) > r);
    r = keel_world_revision(f->w);
    add(f, e, "core:transform");
    assert_true(keel_world_revision(f->w) > r);
    r = keel_world_revision(f->w);
    keel_destroy(f->w, e, NULL, &f->d);
    assert_true(keel_world_revision(f->w) > r);
}

static void commands_on_root_components(void **state)
{
    fx *f = *state;
    keel_entity root = keel_world_root(f->w);
    keel_node *before = snap(f);
    keel_cmd inv;
    keel_comp ws;
    assert_int_equal(keel_add(f->w, root, K("core:world_settings"), NULL, &ws, &inv, &f->d), KEEL_OK);
    undo_redo(f, before, &inv); /* ends undone: not there */
    assert_false(keel_get_comp(f->w, root, K("core:world_settings"), 0, &ws));
    ws = add(f, root, "core:world_settings");
    before = snap(f);
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 2 };
    assert_int_equal(keel_set(f->w, ws, keel_kind_field(ws.kind, "exposure"), &v, &inv, &f->d), KEEL_OK);
    undo_redo(f, before, &inv);
    before = snap(f);
    assert_int_equal(keel_remove(f->w, root, "core:world_settings", KEEL_SLOT_AUTO, &inv, &f->d), KEEL_OK);
    undo_redo(f, before, &inv);
}

static unsigned rnd_state = 12345;
static unsigned rnd(unsigned n)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 8) % n;
}

static keel_entity pick(fx *f)
{
    size_t n = keel_world_entity_count(f->w);
    if (!n) return 0;
    size_t k = rnd((unsigned)n);
    keel_entity e = keel_next(f->w, 0);
    while (k-- && e) e = keel_next(f->w, e);
    return e;
}

/* A random run of commands, then every inverse applied in reverse: back to the start. */
static void commands_random_run_undoes_to_the_start(void **state)
{
    fx *f = *state;
    static const char *const kinds[] = { "core:transform", "core:audio_source", "core:camera", "core:point_light" };
    if (getenv("KEEL_SEED")) rnd_state = (unsigned)atoi(getenv("KEEL_SEED")); /* try other runs */
    for (int i = 0; i < 6; i++) rich(f, "Seed", i % 2 ? pick(f) : 0);
    keel_node *start = snap(f);
    enum { OPS = 400 };
    keel_cmd *invs = calloc(OPS, sizeof *invs);
    size_t done = 0;
    for (int op = 0; op < OPS; op++) {
        keel_entity e = pick(f), p = rnd(3) ? pick(f) : 0;
        keel_cmd *inv = &invs[done];
        keel_status st = KEEL_NOT_FOUND;
        switch (rnd(9)) {
        case 0: st = keel_spawn(f->w, "S", p, NULL, NULL, inv, NULL); break;
        case 1: if (e) st = keel_destroy(f->w, e, inv, NULL); break;
        case 2: if (e) st = keel_reparent(f->w, e, p, inv, NULL); break;
        case 3: if (e) st = keel_add(f->w, e, K(kinds[rnd(4)]), NULL, NULL, inv, NULL); break;
        case 4:
            if (e && keel_member_count(f->w, e)) {
                keel_member m;
                keel_member_at(f->w, e, rnd((unsigned)keel_member_count(f->w, e)), &m);
                st = keel_remove(f->w, e, m.key, m.slot, inv, NULL);
            }
            break;
        case 5: {
            keel_comp c;
            if (e && keel_get_comp(f->w, e, K("core:transform"), 0, &c)) {
                keel_value v = { .type = KEEL_T_VEC3, .as.v = { rnd(100), rnd(100), 0 } };
                st = keel_set(f->w, c, 0, &v, inv, NULL);
            }
            break;
        }
        case 6: if (e) st = keel_rename(f->w, e, rnd(2) ? "R1" : "R2", inv, NULL); break;
        case 7: if (e) st = keel_set_enabled(f->w, e, rnd(2), inv, NULL); break;
        case 8: if (e && keel_world_entity_count(f->w) < 60) st = keel_duplicate(f->w, e, 0, NULL, inv, NULL); break;
        }
        if (st == KEEL_OK) done++;
        else assert_int_equal(inv->type, KEEL_CMD_NONE);
    }
    assert_true(done > OPS / 3);
    while (done-- > 0) {
        assert_int_equal(keel_cmd_apply(f->w, &invs[done], NULL, &f->d), KEEL_OK);
        keel_cmd_free(&invs[done]);
    }
    keel_node *end = snap(f);
    assert_true(keel_node_equal(start, end));
    keel_node_free(start);
    keel_node_free(end);
    free(invs);
}

static void commands_spawn_from_a_bad_tree_leaves_nothing(void **state)
{
    fx *f = *state;
    keel_cmd c = { 0 };
    c.type = KEEL_CMD_SPAWN;
    c.tree = keel_node_new_map();
    keel_node_put(c.tree, "name", keel_node_new_scalar("X", KEEL_STYLE_PLAIN));
    keel_status st = keel_cmd_apply(f->w, &c, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_PARSE_ERROR, "an entity document needs a valid uuid");
    keel_node_put(c.tree, "uuid", keel_node_new_scalar("33333333-3333-4333-8333-333333333333", KEEL_STYLE_PLAIN));
    keel_node_put(c.tree, "parent", keel_node_new_scalar("44444444-4444-4444-8444-444444444444", KEEL_STYLE_PLAIN));
    st = keel_cmd_apply(f->w, &c, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "parent entity 44444444-4444-4444-8444-444444444444 not found");
    keel_node_free(c.tree);
    /* a component whose body does not decode: the entity is not left behind */
    c.tree = keel_node_new_map();
    keel_node_put(c.tree, "uuid", keel_node_new_scalar("33333333-3333-4333-8333-333333333333", KEEL_STYLE_PLAIN));
    keel_node *comps = keel_node_new_seq(), *cm = keel_node_new_map(), *body = keel_node_new_map();
    keel_node_put(body, "volume", keel_node_new_scalar("7", KEEL_STYLE_PLAIN));
    keel_node_put(cm, "kind", keel_node_new_scalar("core:audio_source", KEEL_STYLE_PLAIN));
    keel_node_put(cm, "slot", keel_node_new_scalar("2", KEEL_STYLE_PLAIN));
    keel_node_put(cm, "body", body);
    keel_node_push(comps, cm);
    keel_node_put(c.tree, "components", comps);
    st = keel_cmd_apply(f->w, &c, NULL, &f->d);
    assert_int_equal(st, KEEL_INVALID_ARGUMENT);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    assert_int_equal(keel_world_entity_count(f->w), 0);
    keel_cmd_free(&c);
}

/* The unknown entry of e with key `key`. */
static bool unknown_of(keel_world *w, keel_entity e, const char *key, keel_member *out)
{
    for (size_t i = 0; i < keel_member_count(w, e); i++)
        if (keel_member_at(w, e, i, out) && !out->loaded && strcmp(out->key, key) == 0) return true;
    return false;
}

static char *dump(keel_world *w)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(keel_scene_dump(w, &text, &len, NULL), KEEL_OK);
    return text;
}

/* An unknown entry keeps its key, version, slot, body and a serial of its own through every path
 * that copies or moves entries: the entry holds its side record's address in its serial and row
 * bits, so each path must carry the record (not the bits) and give the copy its own serial. */
static void commands_unknown_entries_survive_every_copy_and_move(void **state)
{
    fx *f = *state;
    keel_entity a = rich(f, "A", 0);
    keel_entity kid = rich(f, "Kid", a);
    keel_node *body = keel_node_new_map();
    keel_node_put(body, "mode", keel_node_new_scalar("'odd'", KEEL_STYLE_PLAIN));
    assert_int_equal(keel_add_unknown(f->w, kid, "mod:other", 12, KEEL_SLOT_AUTO, body, &f->d), KEEL_OK);
    keel_node_free(body);
    char *before = dump(f->w);
    keel_uuid ua = keel_entity_uuid(f->w, a), ukid = keel_entity_uuid(f->w, kid);
    keel_member m, m2;
    assert_true(unknown_of(f->w, a, "mod:winch", &m));
    assert_int_equal(m.version, 3);
    assert_int_equal(m.slot, 4);
    assert_true(unknown_of(f->w, kid, "mod:other", &m2));
    assert_int_equal(m2.version, 12);
    assert_true(m.serial != 0 && m2.serial != 0 && m.serial != m2.serial);

    /* play, then stop: the copy's unknowns are its own, the original's come back */
    assert_int_equal(keel_world_play(f->w, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, kid, "mod:other", KEEL_SLOT_AUTO, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_world_stop(f->w, &f->d), KEEL_OK);
    char *t = dump(f->w);
    assert_string_equal(t, before);
    free(t);
    a = keel_find(f->w, ua); /* stop retags the handles */
    kid = keel_find(f->w, ukid);
    assert_true(unknown_of(f->w, kid, "mod:other", &m2));
    assert_int_equal(m2.version, 12);

    /* duplicate: a copy with its own serial and the same body, undone */
    keel_entity copy;
    keel_cmd inv;
    assert_int_equal(keel_duplicate(f->w, a, 0, &copy, &inv, &f->d), KEEL_OK);
    keel_member c;
    assert_true(unknown_of(f->w, a, "mod:winch", &m));
    assert_true(unknown_of(f->w, copy, "mod:winch", &c));
    assert_int_equal(c.version, 3);
    assert_int_equal(c.slot, 4);
    assert_true(keel_node_equal(c.preserved, m.preserved));
    assert_true(c.preserved != m.preserved);
    assert_true(c.serial != m.serial);
    assert_int_equal(keel_cmd_apply(f->w, &inv, NULL, &f->d), KEEL_OK);
    keel_cmd_free(&inv);
    t = dump(f->w);
    assert_string_equal(t, before);
    free(t);

    /* transfer through two more worlds and back, each freed after: the bodies travel */
    keel_world *w2 = keel_world_new("Other"), *w3 = keel_world_new("Third");
    keel_entity moved, back;
    assert_int_equal(keel_transfer(f->w, a, w2, 0, &moved, &f->d), KEEL_OK);
    assert_true(unknown_of(w2, keel_entity_first_child(w2, moved), "mod:other", &c));
    assert_int_equal(c.version, 12);
    assert_int_equal(keel_transfer(w2, moved, w3, 0, &moved, &f->d), KEEL_OK);
    keel_world_free(w2);
    assert_int_equal(keel_transfer(w3, moved, f->w, 0, &back, &f->d), KEEL_OK);
    keel_world_free(w3);
    assert_true(unknown_of(f->w, back, "mod:winch", &c));
    assert_int_equal(c.version, 3);
    assert_int_equal(c.slot, 4);
    assert_true(keel_node_equal(c.preserved, m.preserved));
    assert_true(unknown_of(f->w, keel_entity_first_child(f->w, back), "mod:other", &c));
    assert_int_equal(c.version, 12);

    /* undo of a destroy brings the unknowns back */
    char *mid = dump(f->w);
    assert_int_equal(keel_destroy(f->w, back, &inv, &f->d), KEEL_OK);
    assert_int_equal(keel_cmd_apply(f->w, &inv, NULL, &f->d), KEEL_OK);
    keel_cmd_free(&inv);
    t = dump(f->w);
    assert_string_equal(t, mid);
    free(t);

    /* a scene's text reads back to the same text; a cook refuses an unknown (Unsupported, named) */
    keel_world *r = NULL;
    assert_int_equal(keel_scene_parse(mid, strlen(mid), NULL, &r, &f->d), KEEL_OK);
    t = dump(r);
    assert_string_equal(t, mid);
    free(t);
    keel_world_free(r);
    void *cooked = NULL;
    size_t clen = 0;
    keel_diags_free(&f->d); /* the parse's notes (the unknown kinds it kept) */
    keel_diags_init(&f->d);
    keel_status st = keel_cook(f->w, NULL, &cooked, &clen, &f->d);
    assert_diag(st, &f->d, KEEL_UNSUPPORTED, "mod:winch is not declared");
    free(cooked);
    free(mid);
    free(before);
}

/* keel_cmd_apply checks what the direct calls check */
static void commands_refuse_what_the_direct_calls_refuse(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_cmd c = { 0 };
    c.type = KEEL_CMD_RENAME;
    c.entity = keel_entity_uuid(f->w, e);
    keel_status st = keel_rename(f->w, e, NULL, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "an entity name cannot be null");
    st = keel_cmd_apply(f->w, &c, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "an entity name cannot be null");
    assert_string_equal(keel_entity_name(f->w, e), "A");
    memset(&c, 0, sizeof c);
    c.type = KEEL_CMD_SPAWN;
    c.name = (char *)"B";
    st = keel_cmd_apply(f->w, &c, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "a spawn needs an entity tree");
    assert_int_equal(keel_world_entity_count(f->w), 1);
    memset(&c, 0, sizeof c);
    c.type = KEEL_CMD_BATCH;
    c.item_count = 3;
    keel_cmd inv = { 0 };
    st = keel_cmd_apply(f->w, &c, &inv, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "a batch of 3 commands has no items");
    assert_int_equal(inv.type, KEEL_CMD_NONE);
    /* an empty batch is nothing to do */
    c.item_count = 0;
    assert_int_equal(keel_cmd_apply(f->w, &c, &inv, &f->d), KEEL_OK);
    keel_cmd_free(&inv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(commands_spawn_inverse),
        T(commands_destroy_inverse_restores_children_and_bodies),
        T(commands_add_and_remove_inverse_same_slot),
        T(commands_set_inverse),
        T(commands_reparent_inverse_keeps_sibling_index),
        T(commands_rename_enable_inverse),
        T(commands_duplicate_inverse),
        T(commands_batch_is_all_or_nothing),
        T(commands_set_by_key_on_unknown_is_unsupported),
        T(commands_revision_bumps),
        T(commands_on_root_components),
        T(commands_random_run_undoes_to_the_start),
        T(commands_spawn_from_a_bad_tree_leaves_nothing),
        T(commands_refuse_what_the_direct_calls_refuse),
        T(commands_unknown_entries_survive_every_copy_and_move),
    };
    return KEEL_TEST_RUN(tests, group_setup, group_teardown);
}
