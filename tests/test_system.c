/* test_system.c — keel_system_*: C systems over a query or the world, after order, cycles,
 * transactions, faults, what is skipped. */
#include "keel_test.h"
#include "world_fixture.h"

#include <stdio.h>

static char g_log[512];

static void note(const char *s)
{
    strncat(g_log, s, sizeof g_log - strlen(g_log) - 1);
}

typedef struct mover {
    double x, vx;
} mover;

static keel_status hook_update(const keel_call *c)
{
    (void)c;
    note("H");
    return KEEL_OK;
}

static int sys_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    static const keel_field_desc f[] = { { .key = "x", .type = KEEL_T_FLOAT },
                                         { .key = "vx", .type = KEEL_T_FLOAT } };
    keel_kind_desc kd = { .key = "test:mover", .version = 1, .fields = f, .field_count = 2 };
    kd.hooks[KEEL_PHASE_UPDATE] = hook_update;
    if (keel_kind_declare(&kd, NULL, NULL)) return -1;
    keel_kind_desc tag = { .key = "test:tag", .version = 1, .multiplicity = KEEL_MANY };
    return keel_kind_declare(&tag, NULL, NULL) ? -1 : 0;
}

static int sys_setup(void **state)
{
    g_log[0] = 0;
    return fx_setup(state);
}

static void step(fx *f, double dt)
{
    assert_int_equal(keel_step(f->w, dt, &f->d), KEEL_OK);
}

static double get_x(fx *f, keel_comp c)
{
    keel_value v = { 0 };
    assert_int_equal(keel_get(f->w, c, 0, &v, &f->d), KEEL_OK);
    return v.as.f;
}

static void set_f(fx *f, keel_comp c, int field, double x)
{
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = x };
    assert_int_equal(keel_set(f->w, c, field, &v, NULL, &f->d), KEEL_OK);
}

/* Notes "<user>" per run call. */
static keel_status say(const keel_system_call *c)
{
    note(c->user);
    return KEEL_OK;
}

/* Notes the entity's name per each call and moves x by vx * dt. */
static keel_status move(const keel_system_call *c)
{
    const mover *m = c->records[0];
    note(keel_entity_name(c->world, c->entity));
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = m->x + m->vx * c->dt };
    return keel_set(c->world, c->comps[0], 0, &v, NULL, c->diags);
}

static keel_system_desc run_desc(const char *name, const char *text, const char *const *after, size_t n)
{
    return (keel_system_desc){
        .name = name, .phase = KEEL_PHASE_UPDATE, .run = say, .user = (void *)text, .after = after, .after_count = n
    };
}

static void system_each_visits_in_run_order_after_hooks(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0);
    keel_entity b = spawn(f, "B", 0);
    keel_entity c = spawn(f, "C", a); /* pre-order: A C B */
    keel_comp ca = add(f, a, "test:mover"), cb = add(f, b, "test:mover"), cc = add(f, c, "test:mover");
    add(f, c, "test:tag");
    set_f(f, ca, 1, 1);
    set_f(f, cb, 1, 2);
    set_f(f, cc, 1, 3);
    keel_kind_id k = K("test:mover");
    keel_system_desc sd = {
        .name = "test:move", .phase = KEEL_PHASE_UPDATE, .query = &k, .query_count = 1, .each = move
    };
    assert_int_equal(keel_system_add(f->w, &sd, &f->d), KEEL_OK);
    step(f, 0.5);
    assert_string_equal(g_log, "HHHACB"); /* the hooks first */
    assert_true(get_x(f, ca) == 0.5 && get_x(f, cb) == 1 && get_x(f, cc) == 1.5);
    /* two kinds: only C holds both */
    g_log[0] = 0;
    keel_kind_id both[2] = { K("test:mover"), K("test:tag") };
    keel_system_desc s2 = {
        .name = "test:both", .phase = KEEL_PHASE_LATE_UPDATE, .query = both, .query_count = 2, .each = move
    };
    assert_int_equal(keel_system_add(f->w, &s2, &f->d), KEEL_OK);
    step(f, 0.5);
    assert_string_equal(g_log, "HHHACBC");
    assert_int_equal(keel_system_count(f->w), 2);
    assert_string_equal(keel_system_name(f->w, 0), "test:move");
    assert_string_equal(keel_system_name(f->w, 1), "test:both");
    assert_null(keel_system_name(f->w, 2));
}

static void system_after_orders_and_ties_by_addition(void **state)
{
    fx *f = *state;
    const char *after_c[] = { "c" };
    keel_system_desc a = run_desc("a", "a", after_c, 1); /* c is not added yet: applies once it is */
    keel_system_desc b = run_desc("b", "b", NULL, 0);
    keel_system_desc c = run_desc("c", "c", NULL, 0);
    assert_int_equal(keel_system_add(f->w, &a, &f->d), KEEL_OK);
    assert_int_equal(keel_system_add(f->w, &b, &f->d), KEEL_OK);
    step(f, 0.1);
    assert_string_equal(g_log, "ab");
    g_log[0] = 0;
    assert_int_equal(keel_system_add(f->w, &c, &f->d), KEEL_OK);
    step(f, 0.1);
    assert_string_equal(g_log, "bca");
    /* replacing keeps the place, removing drops it */
    g_log[0] = 0;
    keel_system_desc b2 = run_desc("b", "B", NULL, 0);
    assert_int_equal(keel_system_add(f->w, &b2, &f->d), KEEL_OK);
    assert_int_equal(keel_system_remove(f->w, "c", &f->d), KEEL_OK);
    step(f, 0.1);
    assert_string_equal(g_log, "aB");
    keel_status st = keel_system_remove(f->w, "c", &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "no system 'c'");
}

static void system_cycle_is_refused_naming_it(void **state)
{
    fx *f = *state;
    const char *after_b[] = { "b" }, *after_c[] = { "c" }, *after_a[] = { "a" };
    keel_system_desc a = run_desc("a", "a", after_b, 1);
    keel_system_desc b = run_desc("b", "b", after_c, 1);
    keel_system_desc c = run_desc("c", "c", after_a, 1);
    assert_int_equal(keel_system_add(f->w, &a, &f->d), KEEL_OK);
    assert_int_equal(keel_system_add(f->w, &b, &f->d), KEEL_OK);
    keel_status st = keel_system_add(f->w, &c, &f->d);
    assert_int_equal(st, KEEL_INVALID_ARGUMENT);
    assert_non_null(strstr(f->d.items[0].message, "`after` makes a cycle"));
    assert_non_null(strstr(f->d.items[0].message, "a -> c -> b -> a"));
    keel_diags_free(&f->d);
    assert_int_equal(keel_system_count(f->w), 2); /* nothing changed */
    const char *self[] = { "s" };
    keel_system_desc s = run_desc("s", "s", self, 1);
    st = keel_system_add(f->w, &s, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "s -> s");
    step(f, 0.1);
    assert_string_equal(g_log, "ba"); /* c was refused: a runs after b */
}

static void system_refuses_bad_descs(void **state)
{
    fx *f = *state;
    keel_kind_id k = K("test:mover"), none = 9999;
    keel_system_desc d1 = { .name = "", .phase = KEEL_PHASE_UPDATE, .run = say };
    keel_status st = keel_system_add(f->w, &d1, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "non-empty name");
    keel_system_desc d2 = { .name = "x", .phase = KEEL_PHASE_AWAKE, .run = say };
    st = keel_system_add(f->w, &d2, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "phase must be");
    keel_system_desc d3 = {
        .name = "x", .phase = KEEL_PHASE_UPDATE, .run = say, .each = move, .query = &k, .query_count = 1
    };
    st = keel_system_add(f->w, &d3, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "exactly one of each and run");
    keel_system_desc d4 = { .name = "x", .phase = KEEL_PHASE_UPDATE, .each = move };
    st = keel_system_add(f->w, &d4, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "needs a query");
    keel_system_desc d5 = { .name = "x", .phase = KEEL_PHASE_UPDATE, .each = move, .query = &none, .query_count = 1 };
    st = keel_system_add(f->w, &d5, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "not a declared kind");
    st = keel_system_add(f->w, NULL, &f->d);
    assert_diag(st, &f->d, KEEL_INVALID_ARGUMENT, "NULL");
    st = keel_system_reset(f->w, "nope", &f->d);
    assert_diag(st, &f->d, KEEL_NOT_FOUND, "no system");
    assert_int_equal(keel_system_count(f->w), 0);
}

/* Spawns an entity and sets x, then fails on the entity named "Bad". */
static keel_status write_then_fail(const keel_system_call *c)
{
    keel_entity e = 0;
    keel_spawn(c->world, "Spawned", 0, NULL, &e, NULL, c->diags);
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 99 };
    keel_status st = keel_set(c->world, c->comps[0], 0, &v, NULL, c->diags);
    if (st) return st;
    note(keel_entity_name(c->world, c->entity));
    if (strcmp(keel_entity_name(c->world, c->entity), "Bad") == 0)
        return KEEL_ERROR(c->diags, KEEL_INVALID_OPERATION, "", "bad entity");
    return KEEL_OK;
}

static void system_failure_rolls_back_faults_and_records_once(void **state)
{
    fx *f = *state;
    keel_comp good = add(f, spawn(f, "Good", 0), "test:mover");
    keel_comp bad = add(f, spawn(f, "Bad", 0), "test:mover");
    keel_comp after = add(f, spawn(f, "After", 0), "test:mover");
    keel_kind_id k = K("test:mover");
    keel_system_desc sd = {
        .name = "test:fail", .phase = KEEL_PHASE_UPDATE, .query = &k, .query_count = 1, .each = write_then_fail
    };
    assert_int_equal(keel_system_add(f->w, &sd, &f->d), KEEL_OK);
    step(f, 0.1);
    assert_string_equal(g_log, "HHHGoodBad"); /* faulted at Bad: After is not visited */
    assert_true(get_x(f, good) == 99);        /* its call committed */
    assert_true(get_x(f, bad) == 0);          /* rolled back, and its spawn too */
    assert_true(get_x(f, after) == 0);
    assert_int_equal(keel_world_entity_count(f->w), 4); /* 3 + Good's spawn */
    assert_true(keel_system_faulted(f->w, "test:fail"));
    assert_int_equal(keel_fault_count(f->w), 1);
    const keel_fault *fl = keel_fault_at(f->w, 0);
    assert_string_equal(fl->system, "test:fail");
    assert_string_equal(fl->message, "bad entity");
    assert_int_equal(fl->phase, KEEL_PHASE_UPDATE);
    assert_int_equal(fl->count, 1);
    assert_null(fl->where); /* no Lua position: a C failure */
    g_log[0] = 0;
    step(f, 0.1); /* faulted: skipped */
    assert_string_equal(g_log, "HHH");
    assert_int_equal(keel_fault_count(f->w), 1);
    /* reset: it runs again (and fails again at Bad, recorded again in another frame) */
    assert_int_equal(keel_system_reset(f->w, "test:fail", &f->d), KEEL_OK);
    assert_false(keel_system_faulted(f->w, "test:fail"));
    g_log[0] = 0;
    step(f, 0.1);
    assert_string_equal(g_log, "HHHGoodBad");
    assert_int_equal(keel_fault_count(f->w), 2);
    /* added again: the fault is cleared */
    assert_int_equal(keel_system_add(f->w, &sd, &f->d), KEEL_OK);
    assert_false(keel_system_faulted(f->w, "test:fail"));
}

static void system_skips_disabled_faulted_and_new(void **state)
{
    fx *f = *state;
    keel_entity a = spawn(f, "A", 0), b = spawn(f, "B", 0), c = spawn(f, "C", 0);
    add(f, a, "test:mover");
    keel_comp cb = add(f, b, "test:mover");
    add(f, c, "test:mover");
    assert_int_equal(keel_comp_set_enabled(f->w, cb, false, NULL, &f->d), KEEL_OK);
    assert_int_equal(keel_set_enabled(f->w, c, false, NULL, &f->d), KEEL_OK);
    keel_kind_id k = K("test:mover");
    keel_system_desc sd = {
        .name = "test:move", .phase = KEEL_PHASE_UPDATE, .query = &k, .query_count = 1, .each = move
    };
    assert_int_equal(keel_system_add(f->w, &sd, &f->d), KEEL_OK);
    step(f, 0.1);
    assert_string_equal(g_log, "HA");
    /* added during a step: not visited until the next */
    assert_int_equal(keel_world_play(f->w, &f->d), KEEL_OK); /* systems stay through play and stop */
    assert_int_equal(keel_world_stop(f->w, &f->d), KEEL_OK);
    g_log[0] = 0;
    step(f, 0.1);
    assert_string_equal(g_log, "HA");
}

/* Adds test:mover to a new entity "New" from a run system (a component added this step). */
static keel_status spawn_mover(const keel_system_call *c)
{
    keel_entity e = 0;
    keel_status st = keel_spawn(c->world, "New", 0, NULL, &e, NULL, c->diags);
    if (!st) st = keel_add(c->world, e, keel_kind_find("test:mover"), NULL, NULL, NULL, c->diags);
    return st;
}

static void system_does_not_visit_what_this_step_added(void **state)
{
    fx *f = *state;
    add(f, spawn(f, "A", 0), "test:mover");
    keel_kind_id k = K("test:mover");
    keel_system_desc sp = { .name = "spawn", .phase = KEEL_PHASE_UPDATE, .run = spawn_mover };
    const char *after_spawn[] = { "spawn" };
    keel_system_desc mv = { .name = "move",
                            .phase = KEEL_PHASE_UPDATE,
                            .query = &k,
                            .query_count = 1,
                            .each = move,
                            .after = after_spawn,
                            .after_count = 1 };
    assert_int_equal(keel_system_add(f->w, &mv, &f->d), KEEL_OK);
    assert_int_equal(keel_system_add(f->w, &sp, &f->d), KEEL_OK);
    step(f, 0.1);
    assert_string_equal(g_log, "HA"); /* New was added in this step */
    assert_int_equal(keel_system_remove(f->w, "spawn", &f->d), KEEL_OK);
    g_log[0] = 0;
    step(f, 0.1);
    assert_string_equal(g_log, "HHANew");
}

/* Tries to add a system from inside a system. */
static keel_status add_inside(const keel_system_call *c)
{
    keel_system_desc sd = { .name = "inner", .phase = KEEL_PHASE_UPDATE, .run = say, .user = "i" };
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel_system_add(c->world, &sd, &d);
    keel_diags_free(&d);
    note(st == KEEL_INVALID_OPERATION ? "refused" : "added");
    return KEEL_OK;
}

static void system_add_refuses_inside_a_callback(void **state)
{
    fx *f = *state;
    keel_system_desc sd = { .name = "outer", .phase = KEEL_PHASE_START, .run = add_inside };
    assert_int_equal(keel_system_add(f->w, &sd, &f->d), KEEL_OK);
    step(f, 0.1);
    assert_string_equal(g_log, "refused");
    assert_int_equal(keel_system_count(f->w), 1);
}

#define TS(name) cmocka_unit_test_setup_teardown(name, sys_setup, fx_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS(system_each_visits_in_run_order_after_hooks),
        TS(system_after_orders_and_ties_by_addition),
        TS(system_cycle_is_refused_naming_it),
        TS(system_refuses_bad_descs),
        TS(system_failure_rolls_back_faults_and_records_once),
        TS(system_skips_disabled_faulted_and_new),
        TS(system_does_not_visit_what_this_step_added),
        TS(system_add_refuses_inside_a_callback),
    };
    return KEEL_TEST_RUN(tests, sys_group_setup, group_teardown);
}
