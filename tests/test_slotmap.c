/* test_slotmap.c — slots kept aside: a membership entry holds only "slot is not 0", the slot
 * itself is in the world's slot map (loaded) or the unknown entry's side record. Every path that
 * makes, copies, moves or frees entries must keep a component's slot (and its serial). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keel_test.h"
#include "keel.h"

#include "model/slotmap.h"
#include "model/world.h" /* the slot map's size */
#include "world_fixture.h"

#define HIGH (UINT32_MAX - 1) /* the highest slot a component can have (KEEL_SLOT_AUTO is above) */

static const keel_field_desc tag_fields[] = { { .key = "v", .type = KEEL_T_FLOAT } };
static keel_kind_id tag, undoer;
static char logbuf[2048];
static uint32_t undo_slot;
static keel_entity undo_victim;
static bool undo_reached; /* every change of undoer_update went through */

/* test:tag's awake and on_destroy log the slot they were called for. */
static keel_status tag_hook(const keel_call *c)
{
    size_t n = strlen(logbuf);
    snprintf(logbuf + n, sizeof logbuf - n, "%s@%u ", keel_phase_name(c->phase), c->comp.slot);
    return KEEL_OK;
}

/* test:undoer's update changes its entity's tags (and destroys undo_victim), then fails: all of
 * it rolls back. */
static keel_status undoer_update(const keel_call *c)
{
    keel_world *w = c->world;
    keel_entity e = c->comp.entity;
    if (keel_remove(w, e, "test:tag", undo_slot, NULL, c->diags)) return KEEL_INVALID_ARGUMENT;
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 100 };
    if (keel_set(w, (keel_comp){ e, tag, 3 }, 0, &v, NULL, c->diags)) return KEEL_INVALID_ARGUMENT;
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.slot = 12;
    if (keel_add(w, e, tag, &o, NULL, NULL, c->diags)) return KEEL_INVALID_ARGUMENT;
    if (undo_victim && keel_destroy(w, undo_victim, NULL, c->diags)) return KEEL_INVALID_ARGUMENT;
    assert_int_equal(keel_member_count(w, e), 8); /* one tag out, one in, the undoer */
    assert_false(keel_get_comp(w, e, tag, undo_slot, NULL));
    undo_reached = true;
    return KEEL_ERROR(c->diags, KEEL_INVALID_OPERATION, "", "undone on purpose");
}

static int slot_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    keel_kind_desc kd = { 0 };
    kd.key = "test:tag";
    kd.version = 1;
    kd.multiplicity = KEEL_MANY;
    kd.fields = tag_fields;
    kd.field_count = 1;
    kd.hooks[KEEL_PHASE_AWAKE] = tag_hook;
    kd.hooks[KEEL_PHASE_ON_DESTROY] = tag_hook;
    if (keel_kind_declare(&kd, &tag, NULL)) return -1;
    memset(kd.hooks, 0, sizeof kd.hooks);
    kd.key = "test:undoer";
    kd.multiplicity = KEEL_ONE;
    kd.hooks[KEEL_PHASE_UPDATE] = undoer_update;
    return keel_kind_declare(&kd, &undoer, NULL) ? -1 : 0;
}

static int slot_setup(void **state)
{
    logbuf[0] = 0;
    undo_slot = 0;
    undo_victim = 0;
    undo_reached = false;
    return fx_setup(state);
}

static void add_tag(keel_world *w, keel_entity e, uint32_t slot, double v)
{
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.slot = slot;
    keel_comp c;
    assert_int_equal(keel_add(w, e, tag, &o, &c, NULL, NULL), KEEL_OK);
    assert_int_equal(c.slot, slot);
    keel_value val = { .type = KEEL_T_FLOAT, .as.f = v };
    assert_int_equal(keel_set(w, c, 0, &val, NULL, NULL), KEEL_OK);
}

static void add_winch(keel_world *w, keel_entity e, uint32_t slot)
{
    keel_node *body = keel_node_new_map();
    char n[16];
    snprintf(n, sizeof n, "%u", slot);
    keel_node_put(body, "n", keel_node_new_scalar(n, KEEL_STYLE_PLAIN));
    assert_int_equal(keel_add_unknown(w, e, "mod:winch", 1, slot, body, NULL), KEEL_OK);
    keel_node_free(body);
}

/* The entity's membership as text, in order: "key@slot=v" for a tag (v read by its exact slot),
 * "key@slot" for another loaded kind, "key@slot?n" for an unknown one (n from its body). */
static const char *members(const keel_world *w, keel_entity e)
{
    static char buf[1024];
    buf[0] = 0;
    for (size_t i = 0; i < keel_member_count(w, e); i++) {
        keel_member m;
        assert_true(keel_member_at(w, e, i, &m));
        size_t n = strlen(buf);
        if (m.loaded && m.kind == tag) {
            keel_value v;
            assert_int_equal(keel_get(w, (keel_comp){ e, tag, m.slot }, 0, &v, NULL), KEEL_OK);
            snprintf(buf + n, sizeof buf - n, "%s@%u=%g ", m.key, m.slot, v.as.f);
        } else if (m.loaded) {
            snprintf(buf + n, sizeof buf - n, "%s@%u ", m.key, m.slot);
        } else {
            const keel_node *nn = keel_node_get(m.preserved, "n");
            snprintf(buf + n, sizeof buf - n, "%s@%u?%s ", m.key, m.slot, nn ? nn->text : "-");
        }
    }
    return buf;
}

#define FULL                                                                                          \
    "test:tag@0=1 test:tag@3=4 test:tag@70000=7 test:tag@4294967294=9 mod:winch@0?0 mod:winch@4?4 " \
    "mod:winch@4294967294?4294967294 "
#define LOADED "test:tag@0=1 test:tag@3=4 test:tag@70000=7 test:tag@4294967294=9 "

/* Tags in slots 0, 3, 70000 and the highest; unknown winches in 0, 4 and the highest. */
static keel_entity make_full(keel_world *w, const char *name, bool unknowns)
{
    keel_entity e = 0;
    assert_int_equal(keel_spawn(w, name, 0, NULL, &e, NULL, NULL), KEEL_OK);
    add_tag(w, e, 0, 1);
    add_tag(w, e, 3, 4);
    add_tag(w, e, 70000, 7);
    add_tag(w, e, HIGH, 9);
    if (unknowns) {
        add_winch(w, e, 0);
        add_winch(w, e, 4);
        add_winch(w, e, HIGH);
    }
    return e;
}

static uint64_t serial_at(const keel_world *w, keel_entity e, uint32_t slot)
{
    keel_comp c;
    return keel_get_comp(w, e, tag, slot, &c) ? keel_comp_serial(w, c) : 0;
}

/* The map alone: puts, replacements, deletions in every order, lookups of what is not there. */
static void slotmap_holds_what_was_put(void **state)
{
    (void)state;
    enum { N = 3000 };
    keel__slotmap s = { 0 };
    static uint32_t model[N + 1];
    memset(model, 0, sizeof model);
    assert_int_equal(keel__slotmap_get(&s, 5), 0); /* empty: nothing, no table yet */
    for (uint64_t k = 1; k <= N; k++) {
        keel__map_put(&s, k, (uint32_t)(k * 3 + 1));
        model[k] = (uint32_t)(k * 3 + 1);
    }
    keel__map_put(&s, 17, HIGH); /* a replacement keeps one pair */
    model[17] = HIGH;
    assert_int_equal(s.used, N);
    /* delete a scattered two thirds: backward shifts must keep every other pair reachable */
    for (uint64_t k = 1; k <= N; k++) {
        uint64_t x = k * 2654435761u % N + 1;
        if (x % 3 == 0) continue;
        if (!model[x]) continue;
        keel__map_remove(&s, x);
        model[x] = 0;
    }
    for (uint64_t k = 1; k <= N; k++) assert_int_equal(keel__slotmap_get(&s, k), model[k]);
    assert_int_equal(keel__slotmap_get(&s, N + 1000), 0);
    keel__slotmap c = { 0 };
    keel__map_copy(&c, &s);
    keel__map_free(&s);
    for (uint64_t k = 1; k <= N; k++) assert_int_equal(keel__slotmap_get(&c, k), model[k]);
    keel__map_free(&c);
    keel__map_copy(&c, &s); /* a copy of an empty map is empty */
    assert_int_equal(keel__slotmap_get(&c, 1), 0);
    keel__map_free(&c);
}

/* Lookups by slot, the lowest for KEEL_SLOT_AUTO, removes and their undo, hooks' slots. */
static void slots_kept_through_add_remove_and_undo(void **state)
{
    fx *f = *state;
    keel_entity e = make_full(f->w, "A", true);
    assert_string_equal(members(f->w, e), FULL);
    assert_string_equal(logbuf, "awake@0 awake@3 awake@70000 awake@4294967294 ");
    keel_comp c;
    assert_true(keel_get_comp(f->w, e, tag, KEEL_SLOT_AUTO, &c));
    assert_int_equal(c.slot, 0);
    assert_false(keel_get_comp(f->w, e, tag, 4, &c));
    assert_false(keel_get_comp(f->w, e, tag, 70001, &c));
    uint64_t s3 = serial_at(f->w, e, 3), shigh = serial_at(f->w, e, HIGH);
    assert_true(s3 && shigh && s3 != shigh);

    /* remove slot 0: the lowest is now 3; the removal's inverse puts 0 back */
    logbuf[0] = 0;
    keel_cmd inv = { 0 };
    assert_int_equal(keel_remove(f->w, e, "test:tag", 0, &inv, &f->d), KEEL_OK);
    assert_string_equal(logbuf, "on_destroy@0 ");
    assert_true(keel_get_comp(f->w, e, tag, KEEL_SLOT_AUTO, &c));
    assert_int_equal(c.slot, 3);
    assert_int_equal(keel_cmd_apply(f->w, &inv, NULL, &f->d), KEEL_OK);
    keel_cmd_free(&inv);
    assert_true(keel_get_comp(f->w, e, tag, KEEL_SLOT_AUTO, &c));
    assert_int_equal(c.slot, 0);

    /* remove the highest and 70000, undo in reverse */
    keel_cmd inv1 = { 0 }, inv2 = { 0 };
    assert_int_equal(keel_remove(f->w, e, "test:tag", HIGH, &inv1, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "test:tag", 70000, &inv2, &f->d), KEEL_OK);
    assert_false(keel_get_comp(f->w, e, tag, HIGH, &c));
    assert_int_equal(serial_at(f->w, e, 3), s3); /* the others keep theirs */
    assert_int_equal(keel_cmd_apply(f->w, &inv2, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_cmd_apply(f->w, &inv1, NULL, &f->d), KEEL_OK);
    keel_cmd_free(&inv1);
    keel_cmd_free(&inv2);
    assert_true(serial_at(f->w, e, HIGH) != shigh); /* a command's re-add is a new component */
    /* every slot and value is back */
    assert_non_null(strstr(members(f->w, e), "test:tag@70000=7 "));
    assert_non_null(strstr(members(f->w, e), "test:tag@4294967294=9 "));

    /* unknown ones in other slots: remove by slot, undo */
    keel_cmd inv3 = { 0 };
    assert_int_equal(keel_remove(f->w, e, "mod:winch", 4, &inv3, &f->d), KEEL_OK);
    assert_null(strstr(members(f->w, e), "mod:winch@4?"));
    keel_status st = keel_remove(f->w, e, "mod:winch", 4, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "slot 4 of mod:winch not found");
    assert_int_equal(keel_cmd_apply(f->w, &inv3, NULL, &f->d), KEEL_OK);
    keel_cmd_free(&inv3);
    assert_non_null(strstr(members(f->w, e), "mod:winch@4?4 "));

    /* occupied slots stay occupied, auto past the highest has none left */
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.slot = 70000;
    st = keel_add(f->w, e, tag, &o, NULL, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "slot 70000 of test:tag is occupied");
    st = keel_add(f->w, e, tag, NULL, NULL, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_OPERATION, "no slot left for test:tag");

    /* destroying runs on_destroy with each component's own slot */
    logbuf[0] = 0;
    assert_int_equal(keel_destroy(f->w, e, NULL, &f->d), KEEL_OK);
    assert_non_null(strstr(logbuf, "on_destroy@0 "));
    assert_non_null(strstr(logbuf, "on_destroy@3 "));
    assert_non_null(strstr(logbuf, "on_destroy@70000 "));
    assert_non_null(strstr(logbuf, "on_destroy@4294967294 "));
}

/* Many entities with slotted components, half destroyed: the rest keep theirs. */
static void slots_kept_when_others_go(void **state)
{
    fx *f = *state;
    enum { N = 600 };
    keel_entity es[N];
    for (int i = 0; i < N; i++) {
        assert_int_equal(keel_spawn(f->w, "E", 0, NULL, &es[i], NULL, NULL), KEEL_OK);
        add_tag(f->w, es[i], (uint32_t)i + 1, i);
        add_tag(f->w, es[i], (uint32_t)i * 1000 + 7, -i);
    }
    assert_int_equal(f->w->slots.used, 2 * N);
    for (int i = 0; i < N; i += 2) assert_int_equal(keel_destroy(f->w, es[i], NULL, NULL), KEEL_OK);
    assert_int_equal(f->w->slots.used, N); /* the map forgets what goes */
    for (int i = 1; i < N; i += 2) {
        char want[96];
        snprintf(want, sizeof want, "test:tag@%u=%g test:tag@%u=%g ", i + 1, (double)i, i * 1000 + 7, (double)-i);
        assert_string_equal(members(f->w, es[i]), want);
    }
}

/* A hook that removes, edits and adds slotted components and destroys another entity, then
 * fails: the rollback gives each component back its slot, value and serial. */
static void slots_kept_through_a_rollback(void **state)
{
    fx *f = *state;
    keel_entity e = make_full(f->w, "A", true);
    keel_entity v = make_full(f->w, "Victim", false);
    assert_int_equal(keel_add(f->w, e, undoer, NULL, NULL, NULL, &f->d), KEEL_OK);
    char before_e[1024], before_v[1024];
    snprintf(before_e, sizeof before_e, "%s", members(f->w, e));
    snprintf(before_v, sizeof before_v, "%s", members(f->w, v));
    uint64_t s70 = serial_at(f->w, e, 70000), sv = serial_at(f->w, v, HIGH);
    undo_slot = 70000;
    undo_victim = v;
    keel_step(f->w, 1.0 / 60, &f->d);
    assert_true(undo_reached);
    keel_diags_free(&f->d);
    keel_diags_init(&f->d);
    assert_true(keel_alive(f->w, v));
    assert_string_equal(members(f->w, e), before_e);
    assert_string_equal(members(f->w, v), before_v);
    assert_int_equal(serial_at(f->w, e, 70000), s70);
    assert_int_equal(serial_at(f->w, v, HIGH), sv);
    assert_false(keel_get_comp(f->w, e, tag, 12, NULL)); /* the add went with it */
}

/* Duplicate, transfer and instantiate copy slots; the copies and the original are independent. */
static void slots_kept_by_duplicate_transfer_and_instantiate(void **state)
{
    fx *f = *state;
    keel_entity e = make_full(f->w, "A", true);
    keel_entity d = 0;
    logbuf[0] = 0;
    assert_int_equal(keel_duplicate(f->w, e, 0, &d, NULL, &f->d), KEEL_OK);
    assert_string_equal(logbuf, "awake@0 awake@3 awake@70000 awake@4294967294 ");
    assert_string_equal(members(f->w, d), FULL);
    assert_true(serial_at(f->w, d, 3) != serial_at(f->w, e, 3));
    assert_int_equal(keel_remove(f->w, e, "test:tag", 3, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "mod:winch", 4, NULL, &f->d), KEEL_OK);
    assert_string_equal(members(f->w, d), FULL);

    keel_world *b = keel_world_new("B");
    keel_entity moved = 0;
    assert_int_equal(keel_transfer(f->w, d, b, 0, &moved, &f->d), KEEL_OK);
    assert_string_equal(members(b, moved), FULL);
    assert_true(serial_at(b, moved, HIGH) != 0);
    /* src is whole without it; dst adds and removes beside the moved ones */
    assert_string_equal(members(f->w, e), "test:tag@0=1 test:tag@70000=7 test:tag@4294967294=9 mod:winch@0?0 "
                                          "mod:winch@4294967294?4294967294 ");
    keel_entity other = make_full(b, "Other", true);
    assert_int_equal(keel_remove(b, other, "test:tag", 70000, NULL, &f->d), KEEL_OK);
    assert_string_equal(members(b, moved), FULL);

    /* a template's slotted components, instantiated */
    keel_entity made = 0;
    size_t count = 0;
    assert_int_equal(keel_instantiate(f->w, b, NULL, &made, 1, &count, &f->d), KEEL_OK);
    assert_int_equal(count, 2);
    assert_string_equal(members(f->w, made), FULL);
    keel_world_free(b);
    assert_string_equal(members(f->w, made), FULL);
}

/* Play remembers slots; stop puts them back, whatever play did. Lift and restore keep them. */
static void slots_kept_by_play_stop_and_lift(void **state)
{
    fx *f = *state;
    keel_entity e = make_full(f->w, "A", true);
    keel_uuid u = keel_entity_uuid(f->w, e);
    assert_int_equal(keel_world_play(f->w, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "test:tag", 3, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_remove(f->w, e, "mod:winch", HIGH, NULL, &f->d), KEEL_OK);
    add_tag(f->w, e, 5, 55);
    keel_entity extra = make_full(f->w, "Extra", true);
    (void)extra;
    assert_int_equal(keel_world_stop(f->w, &f->d), KEEL_OK);
    e = keel_find(f->w, u);
    assert_string_equal(members(f->w, e), FULL);
    assert_false(keel_get_comp(f->w, e, tag, 5, NULL));
    /* the restored world goes on: its slot map is its own */
    assert_int_equal(keel_remove(f->w, e, "test:tag", 70000, NULL, &f->d), KEEL_OK);
    add_tag(f->w, e, 70000, 8);

    keel_lift *l = NULL;
    assert_int_equal(keel_lift_entity(f->w, e, &l, &f->d), KEEL_OK);
    keel_entity o = make_full(f->w, "Meanwhile", true);
    assert_int_equal(keel_destroy(f->w, o, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_lift_restore(l, &f->d), KEEL_OK);
    assert_string_equal(members(f->w, e), "test:tag@0=1 test:tag@3=4 test:tag@4294967294=9 mod:winch@0?0 "
                                          "mod:winch@4?4 mod:winch@4294967294?4294967294 test:tag@70000=8 ");
    logbuf[0] = 0;
    assert_int_equal(keel_lift_entity(f->w, e, &l, &f->d), KEEL_OK);
    assert_int_equal(keel_lift_discard(l, &f->d), KEEL_OK);
    assert_non_null(strstr(logbuf, "on_destroy@4294967294 "));
    assert_non_null(strstr(logbuf, "on_destroy@70000 "));
}

/* Scene text, cooked bytes and save games carry the slots (unknown ones in the text). */
static void slots_kept_by_scene_cook_and_save(void **state)
{
    fx *f = *state;
    keel_entity e = make_full(f->w, "A", true);
    keel_uuid u = keel_entity_uuid(f->w, e);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(keel_scene_dump(f->w, &text, &len, &f->d), KEEL_OK);
    keel_world *back = NULL;
    assert_int_equal(keel_scene_parse(text, len, NULL, &back, &f->d), KEEL_OK);
    assert_string_equal(members(back, keel_find(back, u)), FULL);
    char *again = NULL;
    size_t len2 = 0;
    assert_int_equal(keel_scene_dump(back, &again, &len2, &f->d), KEEL_OK);
    assert_string_equal(again, text); /* canonical: the same bytes */
    free(again);
    keel_world_free(back);

    /* cooked: loaded kinds only */
    keel_world *c = keel_world_new("Cooked");
    keel_entity ce = make_full(c, "A", false);
    void *data = NULL;
    size_t dlen = 0;
    assert_int_equal(keel_cook(c, NULL, &data, &dlen, &f->d), KEEL_OK);
    keel_world *cback = NULL;
    assert_int_equal(keel_cook_read(data, dlen, NULL, &cback, &f->d), KEEL_OK);
    assert_string_equal(members(cback, keel_find(cback, keel_entity_uuid(c, ce))), LOADED);
    free(data);
    keel_world_free(cback);
    keel_world_free(c);

    /* a save game over the baseline: a slot removed, one added, one edited */
    keel_baseline *base = keel_baseline_capture(f->w);
    assert_int_equal(keel_remove(f->w, e, "test:tag", 3, NULL, &f->d), KEEL_OK);
    add_tag(f->w, e, 12, 13);
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 77 };
    assert_int_equal(keel_set(f->w, (keel_comp){ e, tag, 70000 }, 0, &v, NULL, &f->d), KEEL_OK);
    char path[] = "/tmp/keel_slotmap_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(keel_persist_save(f->w, base, path, NULL, &f->d), KEEL_OK);
    keel_world *fresh = NULL;
    assert_int_equal(keel_scene_parse(text, len, NULL, &fresh, &f->d), KEEL_OK);
    assert_int_equal(keel_persist_load(fresh, path, &f->d), KEEL_OK);
    assert_string_equal(members(fresh, keel_find(fresh, u)), members(f->w, e));
    assert_non_null(strstr(members(fresh, keel_find(fresh, u)), "test:tag@12=13 "));
    unlink(path);
    keel_world_free(fresh);
    keel_baseline_free(base);
    free(text);
}

/* Unknown entries in other slots adopted by a later declaration: the slot moves from the side
 * record to the slot map, the serial stays. */
static void slots_kept_by_adoption(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    keel_node *body = keel_node_new_map();
    assert_int_equal(keel_add_unknown(f->w, e, "test:late", 1, 6, body, &f->d), KEEL_OK);
    assert_int_equal(keel_add_unknown(f->w, e, "test:late", 1, HIGH, body, &f->d), KEEL_OK);
    assert_int_equal(keel_add_unknown(f->w, e, "test:late", 1, 0, body, &f->d), KEEL_OK);
    keel_node_free(body);
    keel_member m;
    assert_true(keel_member_at(f->w, e, 1, &m));
    uint64_t serial = m.serial;
    keel_kind_desc kd = { 0 };
    kd.key = "test:late";
    kd.version = 1;
    kd.multiplicity = KEEL_MANY;
    kd.fields = tag_fields;
    kd.field_count = 1;
    keel_kind_id late = 0;
    assert_int_equal(keel_kind_declare(&kd, &late, &f->d), KEEL_OK);
    keel_comp c;
    assert_true(keel_get_comp(f->w, e, late, HIGH, &c));
    assert_int_equal(keel_comp_serial(f->w, c), serial);
    assert_true(keel_get_comp(f->w, e, late, 6, &c));
    assert_true(keel_get_comp(f->w, e, late, KEEL_SLOT_AUTO, &c));
    assert_int_equal(c.slot, 0);
    assert_int_equal(keel_remove(f->w, e, "test:late", HIGH, NULL, &f->d), KEEL_OK);
    assert_false(keel_get_comp(f->w, e, late, HIGH, &c));
    assert_true(keel_get_comp(f->w, e, late, 6, &c));
}

/* The last serial a world gives keeps all its 42 bits (the slot map finds it by them); the next
 * add stops the process, as running out of memory does. */
static void slots_serial_limit(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "A", 0);
    f->w->last_serial = KEEL__SERIAL_MAX - 2;
    add_tag(f->w, e, 0, 1);
    add_tag(f->w, e, HIGH, 2);
    assert_true(serial_at(f->w, e, HIGH) == KEEL__SERIAL_MAX);
    assert_true(serial_at(f->w, e, 0) == KEEL__SERIAL_MAX - 1);
    assert_string_equal(members(f->w, e), "test:tag@0=1 test:tag@4294967294=2 ");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        keel_add_opts o = KEEL_ADD_OPTS_INIT;
        o.slot = 9;
        keel_add(f->w, e, tag, &o, NULL, NULL, NULL);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

#undef T
#define T(fn) cmocka_unit_test_setup_teardown(fn, slot_setup, fx_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slotmap_holds_what_was_put),
        T(slots_kept_through_add_remove_and_undo),
        T(slots_kept_when_others_go),
        T(slots_kept_through_a_rollback),
        T(slots_kept_by_duplicate_transfer_and_instantiate),
        T(slots_kept_by_play_stop_and_lift),
        T(slots_kept_by_scene_cook_and_save),
        T(slots_kept_by_adoption),
        T(slots_serial_limit),
    };
    return KEEL_TEST_RUN(tests, slot_group_setup, group_teardown);
}
