/* test_step.c — the lifecycle: phase order, run order, fixed steps, changes during a step, transactions and faults. */
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

static char logbuf[8192];
static keel_status (*act)(const keel_call *c); /* what test:act does in update */
static keel_entity target;                   /* an entity the act hook works on */

static const char *short_phase(keel_phase p)
{
    static const char *const n[] = { "awake", "start", "fixed", "update", "late", "destroy" };
    return n[p];
}

static keel_status rec_hook(const keel_call *c)
{
    const char *name = c->comp.entity == keel_world_root(c->world) ? "root" : keel_entity_name(c->world, c->comp.entity);
    char item[128];
    snprintf(item, sizeof item, "%s%s.%u:%s", logbuf[0] ? " " : "", name ? name : "?", c->comp.slot,
             short_phase(c->phase));
    strncat(logbuf, item, sizeof logbuf - strlen(logbuf) - 1);
    return KEEL_OK;
}

static keel_status act_hook(const keel_call *c)
{
    rec_hook(c);
    return act ? act(c) : KEEL_OK;
}

static const keel_field_desc rec_fields[] = { { .key = "n", .type = KEEL_T_INT } };

static int step_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    keel_kind_desc kd = { 0 };
    kd.key = "test:rec";
    kd.version = 1;
    kd.multiplicity = KEEL_MANY;
    kd.fields = rec_fields;
    kd.field_count = 1;
    for (int p = 0; p < KEEL_PHASE_COUNT_; p++) kd.hooks[p] = rec_hook;
    if (keel_kind_declare(&kd, NULL, NULL)) return -1;
    kd.key = "test:act";
    kd.multiplicity = KEEL_ONE;
    memset(kd.hooks, 0, sizeof kd.hooks);
    kd.hooks[KEEL_PHASE_UPDATE] = act_hook;
    if (keel_kind_declare(&kd, NULL, NULL)) return -1;
    kd.key = "test:plain"; /* no hooks at all */
    memset(kd.hooks, 0, sizeof kd.hooks);
    return keel_kind_declare(&kd, NULL, NULL) ? -1 : 0;
}

/* A field-less kind, version 1, with the one hook `fn` in `phase`. */
static void declare_hooked(const char *key, keel_multiplicity m, keel_phase phase, keel_hook_fn fn)
{
    keel_kind_desc kd = { 0 };
    kd.key = key;
    kd.version = 1;
    kd.multiplicity = m;
    kd.hooks[phase] = fn;
    keel_kind_declare(&kd, NULL, NULL);
}

static int step_setup(void **state)
{
    logbuf[0] = 0;
    act = NULL;
    target = 0;
    return fx_setup(state);
}

#undef T
#define T(fn) cmocka_unit_test_setup_teardown(fn, step_setup, fx_teardown)

static void step(fx *f, double dt)
{
    assert_int_equal(keel_step(f->w, dt, &f->d), KEEL_OK);
}

static void clear(void) { logbuf[0] = 0; }

/* A holds test:act, B `recs` test:rec components; A's update then runs `fn` on B (the target).
 * `warm`: a large fixed step and one quiet step first, so the next step's log is only the act's. */
static keel_entity act_on_b(fx *f, int recs, keel_status (*fn)(const keel_call *), bool warm, keel_entity *a_out)
{
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0);
    add(f, a, "test:act");
    for (int i = 0; i < recs; i++) add(f, b, "test:rec");
    if (warm) {
        keel_world_set_fixed_dt(f->w, 100);
        step(f, 0.1);
        clear();
    }
    target = b;
    act = fn;
    if (a_out) *a_out = a;
    return b;
}

static void step_order_root_first_then_preorder_and_membership(void **state)
{
    fx *f = *state;
    keel_world_set_fixed_dt(f->w, 1.0);
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0), a1 = spawn(f, "A1", a);
    add(f, b, "test:rec");
    add(f, a1, "test:rec");
    add(f, a, "test:rec");
    add(f, a, "test:rec");
    add(f, keel_world_root(f->w), "test:rec");
    assert_string_equal(logbuf, "B.0:awake A1.0:awake A.0:awake A.1:awake root.0:awake");
    clear();
    step(f, 0.5);
    assert_string_equal(logbuf, "root.0:start A.0:start A.1:start A1.0:start B.0:start "
                                "root.0:update A.0:update A.1:update A1.0:update B.0:update "
                                "root.0:late A.0:late A.1:late A1.0:late B.0:late");
    clear();
    step(f, 0.5); /* the accumulator reaches one fixed step; start does not run again */
    assert_string_equal(logbuf, "root.0:fixed A.0:fixed A.1:fixed A1.0:fixed B.0:fixed "
                                "root.0:update A.0:update A.1:update A1.0:update B.0:update "
                                "root.0:late A.0:late A.1:late A1.0:late B.0:late");
    assert_int_equal(keel_world_frame(f->w), 2);
}

static size_t count(const char *what)
{
    size_t n = 0;
    for (const char *p = logbuf; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

static void step_fixed_update_from_accumulator(void **state)
{
    fx *f = *state;
    keel_world_set_fixed_dt(f->w, 0.125);
    assert_true(keel_world_fixed_dt(f->w) == 0.125);
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:rec");
    step(f, 0.3); /* 2 fixed, 0.05 left */
    assert_int_equal(count(":fixed"), 2);
    clear();
    step(f, 0.1); /* 0.175: 1 fixed */
    assert_int_equal(count(":fixed"), 1);
    clear();
    step(f, 10); /* at most 8; the rest is dropped */
    assert_int_equal(count(":fixed"), 8);
    clear();
    step(f, 0);
    assert_int_equal(count(":fixed"), 0);
}

static keel_status spawn_one(const keel_call *c)
{
    keel_entity e;
    keel_spawn(c->world, "Late", 0, NULL, &e, NULL, NULL);
    keel_add(c->world, e, keel_kind_find("test:rec"), NULL, NULL, NULL, NULL);
    return KEEL_OK;
}

static void step_spawned_during_step_runs_next_step(void **state)
{
    fx *f = *state;
    keel_world_set_fixed_dt(f->w, 100);
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:act");
    act = spawn_one;
    clear();
    step(f, 0.1);
    assert_string_equal(logbuf, "A.0:update Late.0:awake");
    act = NULL;
    clear();
    step(f, 0.1);
    assert_string_equal(logbuf, "Late.0:start A.0:update Late.0:update Late.0:late");
}

static keel_status add_rec_to_target(const keel_call *c)
{
    keel_status st = keel_add(c->world, target, keel_kind_find("test:rec"), NULL, NULL, NULL, NULL);
    assert_int_equal(st, KEEL_OK);
    return KEEL_OK;
}

/* A component added during a step first updates in the next one, whichever step added the ones
 * before it: each of three steps adds one to B, and each updates from the step after its own. */
static void step_added_during_steps_update_from_the_next(void **state)
{
    fx *f = *state;
    act_on_b(f, 0, add_rec_to_target, true, NULL);
    step(f, 0.1);
    assert_non_null(strstr(logbuf, "B.0:awake"));
    assert_null(strstr(logbuf, "B.0:update"));
    clear();
    step(f, 0.1);
    assert_non_null(strstr(logbuf, "B.0:update"));
    assert_non_null(strstr(logbuf, "B.1:awake"));
    assert_null(strstr(logbuf, "B.1:update"));
    clear();
    step(f, 0.1);
    assert_non_null(strstr(logbuf, "B.0:update"));
    assert_non_null(strstr(logbuf, "B.1:update"));
    assert_null(strstr(logbuf, "B.2:update"));
    act = NULL;
    clear();
    step(f, 0.1);
    assert_non_null(strstr(logbuf, "B.2:update"));
}

static keel_status destroy_target(const keel_call *c)
{
    keel_status st = keel_destroy(c->world, target, NULL, NULL);
    assert_int_equal(st, KEEL_OK);
    assert_false(keel_alive(c->world, target)); /* dead at once */
    return KEEL_OK;
}

static void step_destroy_is_visible_at_once(void **state)
{
    fx *f = *state;
    act_on_b(f, 1, destroy_target, true, NULL);
    step(f, 0.1);
    /* B's on_destroy runs (at A's commit: B is gone from lookups by then), its update never does */
    assert_string_equal(logbuf, "A.0:update ?.0:destroy");
    assert_int_equal(keel_storage_count(f->w, K("test:rec")), 0); /* freed at the boundary */
}

static keel_status destroy_self(const keel_call *c)
{
    keel_destroy(c->world, c->comp.entity, NULL, NULL);
    /* the record stays readable until the phase boundary */
    return *(int64_t *)c->record == 0 ? KEEL_OK : KEEL_INVALID_ARGUMENT;
}

static void step_destroy_self_keeps_record_until_boundary(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:act");
    act = destroy_self;
    step(f, 0.1);
    assert_false(keel_alive(f->w, a));
    assert_int_equal(keel_fault_count(f->w), 0);
    assert_int_equal(keel_storage_count(f->w, K("test:act")), 0);
}

static keel_status remove_target(const keel_call *c)
{
    assert_int_equal(keel_remove(c->world, target, "test:rec", 0, NULL, NULL), KEEL_OK);
    return KEEL_OK;
}

static void step_removed_before_its_turn_does_not_run(void **state)
{
    fx *f = *state;
    act_on_b(f, 2, remove_target, true, NULL);
    step(f, 0.1);
    assert_string_equal(logbuf, "A.0:update B.0:destroy B.1:update B.1:late");
}

/* Writes a field, spawns, adds a component to the target, then fails. */
static keel_status write_then_fail(const keel_call *c)
{
    keel_world *w = c->world;
    keel_comp rc;
    assert_true(keel_get_comp(w, target, keel_kind_find("test:rec"), 0, &rc));
    keel_value v = { .type = KEEL_T_INT, .as.i = 42 };
    assert_int_equal(keel_set(w, rc, 0, &v, NULL, NULL), KEEL_OK);
    keel_entity e;
    assert_int_equal(keel_spawn(w, "Ghost", 0, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, target, keel_kind_find("test:plain"), NULL, NULL, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_rename(w, target, "Renamed", NULL, NULL), KEEL_OK);
    return KEEL_ERROR(c->diags, KEEL_INVALID_OPERATION, "", "boom: the hook gave up");
}

static void step_failed_hook_rolls_back_and_faults_once(void **state)
{
    fx *f = *state;
    keel_entity a;
    keel_entity b = act_on_b(f, 1, write_then_fail, false, &a);
    step(f, 0.1);
    keel_comp rc;
    assert_true(keel_get_comp(f->w, b, K("test:rec"), 0, &rc));
    keel_value v;
    assert_int_equal(keel_get(f->w, rc, 0, &v, &f->d), KEEL_OK);
    assert_int_equal(v.as.i, 0);                          /* the write is rolled back */
    assert_int_equal(keel_find_name(f->w, "Ghost"), 0);   /* the spawn is undone */
    assert_int_equal(keel_world_entity_count(f->w), 2);
    assert_int_equal(keel_member_count(f->w, b), 1);      /* the add is undone */
    assert_string_equal(keel_entity_name(f->w, b), "B");  /* the rename is undone */
    keel_member m;
    assert_true(keel_member_at(f->w, a, 0, &m));
    assert_true(m.faulted);
    assert_int_equal(keel_fault_count(f->w), 1);
    const keel_fault *ft = keel_fault_at(f->w, 0);
    assert_true(keel_uuid_equal(ft->entity, keel_entity_uuid(f->w, a)));
    assert_string_equal(ft->kind, "test:act");
    assert_int_equal(ft->slot, 0);
    assert_int_equal(ft->phase, KEEL_PHASE_UPDATE);
    assert_string_equal(ft->message, "boom: the hook gave up");
    clear();
    step(f, 0.1); /* the faulted component no longer runs; the step succeeds */
    assert_null(strstr(logbuf, "A.0"));
    assert_non_null(strstr(logbuf, "B.0:update"));
    assert_int_equal(keel_fault_count(f->w), 1);
    assert_null(keel_fault_at(f->w, 1));
}

static keel_status destroy_then_fail(const keel_call *c)
{
    keel_destroy(c->world, target, NULL, NULL);
    return KEEL_INVALID_OPERATION; /* no message: "failed" */
}

static void step_failed_hook_restores_destroyed_entity(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0), c = spawn(f, "C", b);
    add(f, a, "test:act");
    add(f, b, "test:rec");
    keel_uuid bu = keel_entity_uuid(f->w, b);
    target = b;
    act = destroy_then_fail;
    step(f, 0.1);
    keel_entity nb = keel_find(f->w, bu);
    assert_int_equal(nb, b); /* the same handle comes back */
    assert_true(keel_alive(f->w, b));
    assert_int_equal(keel_entity_parent(f->w, c), nb);
    assert_int_equal(keel_member_count(f->w, nb), 1);
    assert_string_equal(keel_fault_at(f->w, 0)->message, "failed");
}

static void step_disabled_is_parked(void **state)
{
    fx *f = *state;
    keel_world_set_fixed_dt(f->w, 100);
    keel_entity a = spawn(f, "A", 0), a1 = spawn(f, "A1", a), b = spawn(f, "B", 0);
    add(f, a, "test:rec");
    add(f, a1, "test:rec");
    keel_comp bc = add(f, b, "test:rec");
    keel_value v = { .type = KEEL_T_INT, .as.i = 5 };
    assert_int_equal(keel_set(f->w, bc, 0, &v, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_set_enabled(f->w, a, false, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_comp_set_enabled(f->w, bc, false, NULL, &f->d), KEEL_OK);
    clear();
    step(f, 0.1);
    assert_string_equal(logbuf, "");
    assert_int_equal(keel_set_enabled(f->w, a, true, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_comp_set_enabled(f->w, bc, true, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_get(f->w, bc, 0, &v, &f->d), KEEL_OK);
    assert_int_equal(v.as.i, 5); /* state kept */
    step(f, 0.1);
    assert_string_equal(logbuf, "A.0:start A1.0:start B.0:start A.0:update A1.0:update B.0:update "
                                "A.0:late A1.0:late B.0:late");
}

static void step_awake_and_on_destroy(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    keel_add_opts o = KEEL_ADD_OPTS_INIT;
    o.no_awake = true;
    assert_int_equal(keel_add(f->w, a, K("test:rec"), &o, NULL, NULL, &f->d), KEEL_OK);
    assert_string_equal(logbuf, "");
    assert_int_equal(keel_awake_all(f->w, &f->d), KEEL_OK);
    assert_string_equal(logbuf, "A.0:awake");
    assert_int_equal(keel_awake_all(f->w, &f->d), KEEL_OK);
    assert_string_equal(logbuf, "A.0:awake");
    add(f, a, "test:rec");
    clear();
    assert_int_equal(keel_remove(f->w, a, "test:rec", 1, NULL, &f->d), KEEL_OK);
    assert_string_equal(logbuf, "A.1:destroy");
    clear();
    assert_int_equal(keel_destroy(f->w, a, NULL, &f->d), KEEL_OK);
    assert_string_equal(logbuf, "A.0:destroy");
}

static void step_kinds_without_hooks_are_not_listed(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 100; i++) add(f, spawn(f, "P", 0), "test:plain");
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:act");
    step(f, 0.1);
    assert_int_equal(f->w->runs[KEEL_PHASE_UPDATE].count, 1);
    assert_int_equal(f->w->runs[KEEL_PHASE_START].count, 0);
}

static keel_status nested_step(const keel_call *c)
{
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel_step(c->world, 0.1, &d);
    assert_int_equal(st, KEEL_INVALID_OPERATION);
    assert_string_equal(d.items[0].message, "a step cannot run inside a step");
    assert_true(keel_world_in_step(c->world));
    keel_diags_free(&d);
    return KEEL_OK;
}

static void step_refuses_nesting_and_bad_dt(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:act");
    act = nested_step;
    step(f, 0.1);
    assert_false(keel_world_in_step(f->w));
    keel_status st = keel_step(f->w, -1, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "dt must be a finite number >= 0");
}

static keel_status failing_awake(const keel_call *c)
{
    rec_hook(c);
    return KEEL_ERROR(c->diags, KEEL_INVALID_ARGUMENT, "", "awake refused");
}

static void step_failed_awake_faults_but_add_succeeds(void **state)
{
    fx *f = *state;
    keel_kind_desc kd = { 0 };
    kd.key = "test:bad_awake";
    kd.version = 1;
    kd.hooks[KEEL_PHASE_AWAKE] = failing_awake;
    kd.hooks[KEEL_PHASE_UPDATE] = rec_hook;
    keel_kind_declare(&kd, NULL, NULL);
    keel_entity a = spawn(f, "A", 0);
    keel_comp c = add(f, a, "test:bad_awake");
    assert_true(keel_comp_alive(f->w, c));
    assert_int_equal(keel_fault_count(f->w), 1);
    assert_int_equal(keel_fault_at(f->w, 0)->phase, KEEL_PHASE_AWAKE);
    assert_string_equal(keel_fault_at(f->w, 0)->message, "awake refused");
    clear();
    step(f, 0.1);
    assert_string_equal(logbuf, ""); /* faulted: no update */
}

static keel_status spawner_awake(const keel_call *c)
{
    keel_entity e;
    keel_spawn(c->world, "FromAwake", 0, NULL, &e, NULL, NULL);
    return KEEL_OK;
}

static keel_status add_nested_then_fail(const keel_call *c)
{
    keel_comp rc;
    assert_true(keel_get_comp(c->world, target, keel_kind_find("test:rec"), 0, &rc));
    keel_value v = { .type = KEEL_T_INT, .as.i = 7 };
    keel_set(c->world, rc, 0, &v, NULL, NULL);
    keel_add(c->world, target, keel_kind_find("test:spawner"), NULL, NULL, NULL, NULL);
    assert_int_equal(keel_find_name(c->world, "FromAwake") != 0, 1);
    return KEEL_INVALID_OPERATION;
}

static void step_rollback_covers_nested_hooks(void **state)
{
    fx *f = *state;
    declare_hooked("test:spawner", KEEL_ONE, KEEL_PHASE_AWAKE, spawner_awake);
    keel_entity b = act_on_b(f, 1, add_nested_then_fail, false, NULL);
    step(f, 0.1);
    assert_int_equal(keel_find_name(f->w, "FromAwake"), 0);
    assert_int_equal(keel_member_count(f->w, b), 1);
    keel_comp rc;
    assert_true(keel_get_comp(f->w, b, K("test:rec"), 0, &rc));
    keel_value v;
    assert_int_equal(keel_get(f->w, rc, 0, &v, &f->d), KEEL_OK);
    assert_int_equal(v.as.i, 0);
    assert_int_equal(keel_fault_count(f->w), 1);
}

static int destroy_calls;

static keel_status destroy_again(const keel_call *c)
{
    destroy_calls++;
    /* a hook destroying its own dying entity: no second on_destroy, no double free */
    return keel_destroy(c->world, c->comp.entity, NULL, c->diags);
}

static void step_on_destroy_destroying_itself(void **state)
{
    fx *f = *state;
    declare_hooked("test:suicidal", KEEL_MANY, KEEL_PHASE_ON_DESTROY, destroy_again);
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:suicidal");
    add(f, a, "test:suicidal");
    destroy_calls = 0;
    assert_int_equal(keel_destroy(f->w, a, NULL, &f->d), KEEL_OK);
    assert_int_equal(destroy_calls, 2);
    assert_false(keel_alive(f->w, a));
    assert_int_equal(keel_world_entity_count(f->w), 0);
    assert_int_equal(keel_fault_count(f->w), 0);
}

static keel_entity pair_a, pair_b;
static int pair_calls;

static keel_status destroy_the_other(const keel_call *c)
{
    pair_calls++;
    /* A's on_destroy destroys B, whose on_destroy (at the commit) destroys A again: A is gone
     * or dying, so that one does nothing */
    keel_entity other = c->comp.entity == pair_a ? pair_b : pair_a;
    keel_destroy(c->world, other, NULL, NULL);
    return KEEL_OK;
}

static void step_on_destroy_destroying_the_one_destroying_it(void **state)
{
    fx *f = *state;
    declare_hooked("test:pair", KEEL_ONE, KEEL_PHASE_ON_DESTROY, destroy_the_other);
    pair_a = spawn(f, "A", 0);
    pair_b = spawn(f, "B", 0);
    keel_entity c = spawn(f, "C", 0);
    add(f, pair_a, "test:pair");
    add(f, pair_b, "test:pair");
    pair_calls = 0;
    assert_int_equal(keel_destroy(f->w, pair_a, NULL, &f->d), KEEL_OK);
    assert_int_equal(pair_calls, 2);
    assert_false(keel_alive(f->w, pair_a));
    assert_false(keel_alive(f->w, pair_b));
    assert_true(keel_alive(f->w, c));
    /* neither is dying any more: their indices come back as new entities, destroyable */
    keel_entity x = spawn(f, "X", 0);
    assert_true((uint32_t)x == (uint32_t)pair_a || (uint32_t)x == (uint32_t)pair_b);
    assert_int_equal(keel_destroy(f->w, x, NULL, &f->d), KEEL_OK);
    assert_false(keel_alive(f->w, x));
    assert_int_equal(keel_world_entity_count(f->w), 1);
}

static unsigned chaos_state;
static unsigned chaos_rnd(unsigned n)
{
    chaos_state = chaos_state * 1103515245u + 12345u;
    return (chaos_state >> 8) % n;
}

static keel_entity chaos_pick(keel_world *w)
{
    size_t n = keel_world_entity_count(w);
    size_t k = chaos_rnd((unsigned)n);
    keel_entity e = keel_next(w, 0);
    while (k-- && e) e = keel_next(w, e);
    return e;
}

/* Random commands from inside a hook, then failure: all of it must be undone. */
static keel_status chaos(const keel_call *c)
{
    keel_world *w = c->world;
    static const char *const kinds[] = { "core:transform", "core:audio_source", "test:rec", "test:plain" };
    for (int op = 0; op < 60; op++) {
        keel_entity e = chaos_pick(w), p = chaos_rnd(3) ? chaos_pick(w) : 0;
        if (e == c->comp.entity) continue; /* leave the failing hook's own entity alone */
        switch (chaos_rnd(8)) {
        case 0: keel_spawn(w, "S", p, NULL, NULL, NULL, NULL); break;
        case 1: keel_destroy(w, e, NULL, NULL); break;
        case 2: keel_reparent(w, e, p, NULL, NULL); break;
        case 3: keel_add(w, e, keel_kind_find(kinds[chaos_rnd(4)]), NULL, NULL, NULL, NULL); break;
        case 4:
            if (keel_member_count(w, e)) {
                keel_member m;
                keel_member_at(w, e, chaos_rnd((unsigned)keel_member_count(w, e)), &m);
                keel_remove(w, e, m.key, m.slot, NULL, NULL);
            }
            break;
        case 5: {
            keel_comp rc;
            if (keel_get_comp(w, e, keel_kind_find("test:rec"), KEEL_SLOT_AUTO, &rc)) {
                keel_value v = { .type = KEEL_T_INT, .as.i = chaos_rnd(1000) };
                keel_set(w, rc, 0, &v, NULL, NULL);
            }
            break;
        }
        case 6: keel_rename(w, e, "Chaos", NULL, NULL); break;
        case 7: keel_duplicate(w, e, 0, NULL, NULL, NULL); break;
        }
    }
    return KEEL_INVALID_OPERATION;
}

static keel_node *world_tree(keel_world *w)
{
    keel_node *s = keel_node_new_seq();
    keel_node_push(s, keel__entity_tree(w, 0));
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) keel_node_push(s, keel__entity_tree(w, (uint32_t)e));
    return s;
}

static void step_random_hook_changes_roll_back_entirely(void **state)
{
    fx *f = *state;
    chaos_state = getenv("KEEL_SEED") ? (unsigned)atoi(getenv("KEEL_SEED")) : 99;
    keel_world_set_fixed_dt(f->w, 100);
    keel_entity a = spawn(f, "A", 0);
    for (int i = 0; i < 8; i++) {
        keel_entity e = spawn(f, "E", i % 3 ? chaos_pick(f->w) : 0);
        add(f, e, "core:transform");
        add(f, e, "test:rec");
        add(f, e, "core:audio_source");
    }
    keel_entity *handles = calloc(16, sizeof *handles);
    size_t n = 0;
    for (keel_entity e = keel_next(f->w, 0); e; e = keel_next(f->w, e)) handles[n++] = e;
    step(f, 0.1); /* start and awake out of the way */
    add(f, a, "test:act");
    act = chaos;
    keel_node *before = world_tree(f->w);
    step(f, 0.1);
    keel_node *after = world_tree(f->w);
    assert_true(keel_node_equal(before, after));
    for (size_t i = 0; i < n; i++) assert_true(keel_alive(f->w, handles[i])); /* the same handles */
    assert_int_equal(keel_fault_count(f->w), 1);
    keel_node_free(before);
    keel_node_free(after);
    free(handles);
}

static keel_status rename_with_inverse_then_fail(const keel_call *c)
{
    keel_cmd inv;
    assert_int_equal(keel_rename(c->world, target, "Changed", &inv, NULL), KEEL_OK);
    assert_int_equal(inv.type, KEEL_CMD_RENAME);
    keel_cmd_free(&inv); /* the caller's copy; the transaction keeps its own */
    keel_comp rc;
    assert_true(keel_get_comp(c->world, target, keel_kind_find("test:rec"), 0, &rc));
    keel_value v = { .type = KEEL_T_INT, .as.i = 5 };
    assert_int_equal(keel_set(c->world, rc, 0, &v, &inv, NULL), KEEL_OK);
    keel_cmd_free(&inv);
    return KEEL_INVALID_OPERATION;
}

static void step_rollback_when_the_hook_also_took_inverses(void **state)
{
    fx *f = *state;
    keel_entity b = act_on_b(f, 1, rename_with_inverse_then_fail, false, NULL);
    step(f, 0.1);
    assert_string_equal(keel_entity_name(f->w, b), "B");
    keel_comp rc;
    assert_true(keel_get_comp(f->w, b, K("test:rec"), 0, &rc));
    keel_value v;
    assert_int_equal(keel_get(f->w, rc, 0, &v, &f->d), KEEL_OK);
    assert_int_equal(v.as.i, 0);
}

/* ---- on_destroy at the commit (design/worlds.md, "Committed state only") */

static keel_status (*doom_act)(const keel_call *c); /* what test:doom's on_destroy does besides logging */

/* test:doom's on_destroy: logs d<n>, n read from the record the destroyed component left behind. */
static keel_status doom_hook(const keel_call *c)
{
    char item[32];
    snprintf(item, sizeof item, "%sd%lld", logbuf[0] ? " " : "", (long long)*(const int64_t *)c->record);
    strncat(logbuf, item, sizeof logbuf - strlen(logbuf) - 1);
    return doom_act ? doom_act(c) : KEEL_OK;
}

static void declare_doom(void)
{
    keel_kind_desc kd = { 0 };
    kd.key = "test:doom";
    kd.version = 1;
    kd.multiplicity = KEEL_MANY;
    kd.fields = rec_fields;
    kd.field_count = 1;
    kd.hooks[KEEL_PHASE_ON_DESTROY] = doom_hook;
    assert_int_equal(keel_kind_declare(&kd, NULL, NULL), KEEL_OK);
    doom_act = NULL;
}

/* A test:doom component with n on e. */
static keel_comp doom(fx *f, keel_entity e, int64_t n)
{
    keel_comp c = add(f, e, "test:doom");
    keel_value v = { .type = KEEL_T_INT, .as.i = n };
    assert_int_equal(keel_set(f->w, c, 0, &v, NULL, &f->d), KEEL_OK);
    return c;
}

static keel_entity doomed_b, doomed_c, doomed_d;

/* Destroys B (two test:doom), removes C's, destroys D: none of their on_destroys runs yet. */
static keel_status destroy_three(const keel_call *c)
{
    keel_world *w = c->world;
    if (!keel_alive(w, doomed_b)) return KEEL_OK; /* done in an earlier step */
    assert_int_equal(keel_destroy(w, doomed_b, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_remove(w, doomed_c, "test:doom", 0, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_destroy(w, doomed_d, NULL, NULL), KEEL_OK);
    assert_false(keel_alive(w, doomed_b)); /* structural changes apply at once */
    assert_int_equal(keel_member_count(w, doomed_c), 0);
    assert_null(strstr(logbuf, " d")); /* ... their on_destroys wait for the commit */
    return KEEL_OK;
}

static void step_on_destroy_runs_at_the_commit_in_destroy_order(void **state)
{
    fx *f = *state;
    declare_doom();
    keel_entity a = spawn(f, "A", 0);
    doomed_b = spawn(f, "B", 0), doomed_c = spawn(f, "C", 0), doomed_d = spawn(f, "D", 0);
    doom(f, doomed_b, 1);
    doom(f, doomed_b, 2);
    doom(f, doomed_c, 3);
    doom(f, doomed_d, 4);
    add(f, a, "test:act");
    act = destroy_three;
    clear();
    step(f, 0.1);
    assert_string_equal(logbuf, "A.0:update d1 d2 d3 d4");
    assert_int_equal(keel_fault_count(f->w), 0);
    assert_int_equal(keel_storage_count(f->w, K("test:doom")), 0); /* the rows went at the boundary */
    clear();
    step(f, 0.1);
    assert_string_equal(logbuf, "A.0:update"); /* once */
}

static keel_status destroy_three_then_fail(const keel_call *c)
{
    destroy_three(c);
    return KEEL_ERROR(c->diags, KEEL_INVALID_OPERATION, "", "gave up");
}

static void step_rolled_back_destroy_runs_no_on_destroy(void **state)
{
    fx *f = *state;
    declare_doom();
    keel_entity a = spawn(f, "A", 0);
    doomed_b = spawn(f, "B", 0), doomed_c = spawn(f, "C", 0), doomed_d = spawn(f, "D", 0);
    doom(f, doomed_b, 1);
    doom(f, doomed_c, 3);
    doom(f, doomed_d, 4);
    add(f, a, "test:act");
    act = destroy_three_then_fail;
    clear();
    step(f, 0.1);
    assert_string_equal(logbuf, "A.0:update"); /* no hook for what rolled back */
    assert_true(keel_alive(f->w, doomed_b));     /* as if nothing happened */
    assert_int_equal(keel_member_count(f->w, doomed_c), 1);
    assert_int_equal(keel_storage_count(f->w, K("test:doom")), 3);
    assert_int_equal(keel_fault_count(f->w), 1);
    /* the components came back whole: a later destroy outside any callback runs on_destroy at once */
    clear();
    assert_int_equal(keel_destroy(f->w, doomed_b, NULL, &f->d), KEEL_OK);
    assert_string_equal(logbuf, "d1");
}

static bool doom_fail; /* test:doom's on_destroy of n == 1 fails after its changes */

/* test:doom's on_destroy of n == 1 destroys D and removes C's test:doom (a transaction of its own). */
static keel_status doom_chain(const keel_call *c)
{
    if (*(const int64_t *)c->record != 1) return KEEL_OK;
    assert_true(keel_world_in_callback(c->world));
    assert_false(keel_alive(c->world, c->comp.entity)); /* B is gone from lookups */
    assert_int_equal(keel_destroy(c->world, doomed_d, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_remove(c->world, doomed_c, "test:doom", 0, NULL, NULL), KEEL_OK);
    return doom_fail ? KEEL_ERROR(c->diags, KEEL_INVALID_OPERATION, "", "on_destroy failed") : KEEL_OK;
}

static keel_status destroy_b_only(const keel_call *c)
{
    if (!keel_alive(c->world, doomed_b)) return KEEL_OK; /* done in an earlier step */
    assert_int_equal(keel_destroy(c->world, doomed_b, NULL, NULL), KEEL_OK);
    return KEEL_OK;
}

/* A destroys B (d1, d2); d1 destroys D (d4) and removes C's (d3). */
static void doom_chain_step(fx *f, bool fail)
{
    declare_doom();
    doom_act = doom_chain;
    doom_fail = fail;
    keel_entity a = spawn(f, "A", 0);
    doomed_b = spawn(f, "B", 0), doomed_c = spawn(f, "C", 0), doomed_d = spawn(f, "D", 0);
    doom(f, doomed_b, 1);
    doom(f, doomed_b, 2);
    doom(f, doomed_c, 3);
    doom(f, doomed_d, 4);
    add(f, a, "test:act");
    act = destroy_b_only;
    clear();
    step(f, 0.1);
}

static void step_on_destroy_at_the_commit_queues_what_it_destroys(void **state)
{
    fx *f = *state;
    doom_chain_step(f, false);
    /* d1's own destroys commit with it: their on_destroys join the queue after d2 */
    assert_string_equal(logbuf, "A.0:update d1 d2 d4 d3");
    assert_int_equal(keel_fault_count(f->w), 0);
    assert_false(keel_alive(f->w, doomed_d));
    assert_int_equal(keel_member_count(f->w, doomed_c), 0);
    assert_int_equal(keel_storage_count(f->w, K("test:doom")), 0);
}

static void step_on_destroy_at_the_commit_rolls_back_alone(void **state)
{
    fx *f = *state;
    doom_chain_step(f, true);
    /* d1 failed: its destroy and remove roll back and run no hook; B's destroy stays committed */
    assert_string_equal(logbuf, "A.0:update d1 d2");
    assert_false(keel_alive(f->w, doomed_b));
    assert_true(keel_alive(f->w, doomed_d));
    assert_int_equal(keel_member_count(f->w, doomed_c), 1);
    assert_int_equal(keel_storage_count(f->w, K("test:doom")), 2);
    /* recorded once, as an on_destroy failure of B's component; nothing else is faulted */
    assert_int_equal(keel_fault_count(f->w), 1);
    const keel_fault *ft = keel_fault_at(f->w, 0);
    assert_string_equal(ft->kind, "test:doom");
    assert_int_equal(ft->phase, KEEL_PHASE_ON_DESTROY);
    assert_string_equal(ft->message, "on_destroy failed");
    keel_member m;
    assert_true(keel_member_at(f->w, doomed_c, 0, &m));
    assert_false(m.faulted);
    clear();
    step(f, 0.1);
    assert_string_equal(logbuf, "A.0:update");
}

/* Inside a callback transaction nothing that writes the world out may run: its state may still roll back. */
static keel_baseline *base_before; /* taken before the step */

static keel_status save_inside(const keel_call *c)
{
    keel_world *w = c->world;
    keel_diags d;
    keel_diags_init(&d);
    assert_true(keel_world_in_callback(w));
    char *text = NULL;
    size_t len = 0;
    assert_diag(keel_scene_dump(w, &text, &len, &d), &d, KEEL_INVALID_OPERATION,
                "keel_scene_dump refuses while a callback transaction is open");
    assert_null(text);
    assert_diag(keel_scene_save(w, "never-written.yaml", &d), &d, KEEL_INVALID_OPERATION,
                "keel_scene_save refuses while a callback transaction is open");
    void *cooked = NULL;
    assert_diag(keel_cook(w, NULL, &cooked, &len, &d), &d, KEEL_INVALID_OPERATION,
                "keel_cook refuses while a callback transaction is open");
    assert_null(keel_baseline_capture(w));
    assert_diag(keel_persist_save(w, base_before, "never-written.sav", NULL, &d), &d, KEEL_INVALID_OPERATION,
                "keel_persist_save refuses while a callback transaction is open");
    keel_world_free(w); /* does nothing: the step goes on using it */
    keel_diags_free(&d);
    return KEEL_OK;
}

static void step_writers_refuse_inside_a_callback(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    add(f, a, "test:act");
    base_before = keel_baseline_capture(f->w);
    assert_non_null(base_before);
    assert_false(keel_world_in_callback(f->w));
    assert_false(keel_world_in_callback(NULL));
    act = save_inside;
    step(f, 0.1);
    assert_int_equal(keel_fault_count(f->w), 0);
    assert_null(fopen("never-written.yaml", "r"));
    assert_null(fopen("never-written.sav", "r"));
    assert_false(keel_world_in_callback(f->w)); /* committed: everything works again */
    char *text = NULL;
    assert_int_equal(keel_scene_dump(f->w, &text, NULL, &f->d), KEEL_OK);
    assert_non_null(strstr(text, "name: A"));
    free(text);
    keel_baseline_free(base_before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(step_order_root_first_then_preorder_and_membership),
        T(step_fixed_update_from_accumulator),
        T(step_spawned_during_step_runs_next_step),
        T(step_added_during_steps_update_from_the_next),
        T(step_destroy_is_visible_at_once),
        T(step_destroy_self_keeps_record_until_boundary),
        T(step_removed_before_its_turn_does_not_run),
        T(step_failed_hook_rolls_back_and_faults_once),
        T(step_failed_hook_restores_destroyed_entity),
        T(step_disabled_is_parked),
        T(step_awake_and_on_destroy),
        T(step_kinds_without_hooks_are_not_listed),
        T(step_refuses_nesting_and_bad_dt),
        T(step_failed_awake_faults_but_add_succeeds),
        T(step_rollback_covers_nested_hooks),
        T(step_on_destroy_destroying_itself),
        T(step_on_destroy_destroying_the_one_destroying_it),
        T(step_random_hook_changes_roll_back_entirely),
        T(step_rollback_when_the_hook_also_took_inverses),
        T(step_writers_refuse_inside_a_callback),
        T(step_on_destroy_runs_at_the_commit_in_destroy_order),
        T(step_rolled_back_destroy_runs_no_on_destroy),
        T(step_on_destroy_at_the_commit_queues_what_it_destroys),
        T(step_on_destroy_at_the_commit_rolls_back_alone),
    };
    return KEEL_TEST_RUN(tests, step_group_setup, group_teardown);
}
