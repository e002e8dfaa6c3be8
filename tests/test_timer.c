/* test_timer.c — keel_timer_*: world time, due order, repeating, cancel, remaining, owners, faults. */
#include "keel_test.h"
#include "world_fixture.h"

static char g_log[256];
static int g_released;

static void note(const char *s)
{
    strncat(g_log, s, sizeof g_log - strlen(g_log) - 1);
}

static keel_status tick_update(const keel_call *c)
{
    (void)c;
    note("U");
    return KEEL_OK;
}

static keel_status tick_fixed(const keel_call *c)
{
    (void)c;
    note("F");
    return KEEL_OK;
}

/* Notes its user text. */
static keel_status say(const keel_timer_call *c)
{
    note(c->user);
    return KEEL_OK;
}

static void count_release(void *user)
{
    (void)user;
    g_released++;
}

static int timer_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    keel_kind_desc kd = { 0 };
    kd.key = "test:tick";
    kd.version = 1;
    kd.hooks[KEEL_PHASE_UPDATE] = tick_update;
    kd.hooks[KEEL_PHASE_FIXED_UPDATE] = tick_fixed;
    return keel_kind_declare(&kd, NULL, NULL) ? -1 : 0;
}

static int timer_setup(void **state)
{
    g_log[0] = 0;
    g_released = 0;
    return fx_setup(state);
}

static keel_timer_id after(fx *f, double s, keel_entity owner, const char *text)
{
    keel_timer_id id = 0;
    keel_timer_desc desc = {
        .seconds = s, .owner = owner, .fn = say, .user = (void *)text, .release = count_release
    };
    assert_int_equal(keel_timer_add(f->w, &desc, &id, &f->d), KEEL_OK);
    assert_true(id != 0);
    return id;
}

static void step(fx *f, double dt)
{
    assert_int_equal(keel_step(f->w, dt, &f->d), KEEL_OK);
}

static void timer_fires_in_due_order_ties_by_creation(void **state)
{
    fx *f = *state;
    after(f, 0.3, 0, "c");
    after(f, 0.1, 0, "a");
    after(f, 0.3, 0, "d");
    after(f, 0.2, 0, "b");
    after(f, 0.5, 0, "e");
    step(f, 0.25);
    assert_string_equal(g_log, "ab");
    step(f, 0.05); /* world time 0.3: both fall due, in creation order */
    assert_string_equal(g_log, "abcd");
    assert_true(keel_world_time(f->w) > 0.29 && keel_world_time(f->w) < 0.31);
    step(f, 0.1);
    assert_string_equal(g_log, "abcd");
    step(f, 1);
    assert_string_equal(g_log, "abcde");
    assert_int_equal(g_released, 5);
    assert_int_equal(keel_timer_count(f->w), 0);
}

static void timer_fires_at_the_start_of_update(void **state)
{
    fx *f = *state;
    add(f, spawn(f, "Ticker", 0), "test:tick");
    keel_world_set_fixed_dt(f->w, 0.1);
    after(f, 0.0, 0, "T");
    step(f, 0.2);
    assert_string_equal(g_log, "FFTU");
}

static void timer_every_fires_at_most_once_a_step(void **state)
{
    fx *f = *state;
    keel_timer_id id = 0;
    assert_int_equal(keel_timer_every(f->w, 0.1, 0, say, "x", &id, &f->d), KEEL_OK);
    step(f, 1.05); /* ten periods pass: one call, the next due at 1.1 */
    assert_string_equal(g_log, "x");
    double left = 0;
    assert_int_equal(keel_timer_remaining(f->w, id, &left), KEEL_OK);
    assert_true(left > 0.049 && left < 0.051);
    step(f, 0.05);
    step(f, 0.1);
    assert_string_equal(g_log, "xxx");
}

static void timer_refuses_bad_arguments(void **state)
{
    fx *f = *state;
    keel_timer_id id = 7;
    assert_diag(keel_timer_after(f->w, -1, 0, say, "", &id, &f->d), &f->d, KEEL_INVALID_ARGUMENT, ">= 0");
    assert_int_equal(id, 0);
    assert_diag(keel_timer_after(f->w, 1.0 / 0.0, 0, say, "", &id, &f->d), &f->d, KEEL_INVALID_ARGUMENT, "finite");
    assert_diag(keel_timer_every(f->w, 0, 0, say, "", &id, &f->d), &f->d, KEEL_INVALID_ARGUMENT, "> 0");
    assert_diag(keel_timer_after(f->w, 1, 0, NULL, "", &id, &f->d), &f->d, KEEL_INVALID_ARGUMENT, "NULL");
    keel_entity e = spawn(f, "Gone", 0);
    assert_int_equal(keel_destroy(f->w, e, NULL, &f->d), KEEL_OK);
    assert_diag(keel_timer_after(f->w, 1, e, say, "", &id, &f->d), &f->d, KEEL_NOT_FOUND, "owner");
    assert_int_equal(keel_timer_count(f->w), 0);
}

static keel_status cancel_self(const keel_timer_call *c)
{
    note("s");
    assert_int_equal(keel_timer_cancel(c->world, c->id), KEEL_OK);
    double left = -1;
    assert_int_equal(keel_timer_remaining(c->world, c->id, &left), KEEL_NOT_FOUND);
    return KEEL_OK;
}

static void timer_cancel_and_remaining(void **state)
{
    fx *f = *state;
    keel_timer_id a = after(f, 1, 0, "a");
    double left = 0;
    assert_int_equal(keel_timer_remaining(f->w, a, &left), KEEL_OK);
    assert_true(left == 1);
    step(f, 0.25);
    assert_int_equal(keel_timer_remaining(f->w, a, &left), KEEL_OK);
    assert_true(left == 0.75);
    assert_int_equal(keel_timer_cancel(f->w, a), KEEL_OK);
    assert_int_equal(g_released, 1);
    assert_int_equal(keel_timer_cancel(f->w, a), KEEL_NOT_FOUND);
    assert_int_equal(keel_timer_remaining(f->w, a, &left), KEEL_NOT_FOUND);
    keel_timer_id s = 0;
    assert_int_equal(keel_timer_every(f->w, 0.1, 0, cancel_self, NULL, &s, &f->d), KEEL_OK);
    step(f, 1);
    step(f, 1);
    assert_string_equal(g_log, "s");
    assert_int_equal(keel_timer_cancel(f->w, 12345678), KEEL_NOT_FOUND);
}

static void timer_owned_ends_with_its_entity(void **state)
{
    fx *f = *state;
    keel_entity e = spawn(f, "Owner", 0);
    keel_timer_id id = after(f, 0.5, e, "o");
    after(f, 0.5, 0, "w");
    assert_int_equal(keel_destroy(f->w, e, NULL, &f->d), KEEL_OK);
    double left;
    assert_int_equal(keel_timer_remaining(f->w, id, &left), KEEL_NOT_FOUND);
    assert_int_equal(g_released, 1);
    step(f, 1);
    assert_string_equal(g_log, "w");
    /* transferred to another world: gone from this one */
    keel_entity t = spawn(f, "Moving", 0);
    after(f, 0.5, t, "t");
    keel_world *b = keel_world_new("B");
    keel_entity moved = 0;
    assert_int_equal(keel_transfer(f->w, t, b, 0, &moved, &f->d), KEEL_OK);
    step(f, 1);
    assert_string_equal(g_log, "w");
    assert_int_equal(g_released, 3);
    keel_world_free(b);
}

static keel_status spawn_then_fail(const keel_timer_call *c)
{
    keel_entity e = 0;
    assert_int_equal(keel_spawn(c->world, "Ghost", 0, NULL, &e, NULL, c->diags), KEEL_OK);
    return KEEL_ERROR(c->diags, KEEL_INVALID_OPERATION, "", "boom");
}

static void timer_failure_rolls_back_and_is_recorded(void **state)
{
    fx *f = *state;
    add(f, spawn(f, "Ticker", 0), "test:tick");
    keel_world_set_fixed_dt(f->w, 10);
    keel_timer_id id = 0;
    assert_int_equal(keel_timer_every(f->w, 0.1, 0, spawn_then_fail, NULL, &id, &f->d), KEEL_OK);
    after(f, 0.1, 0, "a");
    step(f, 0.1);
    step(f, 0.1);
    assert_string_equal(g_log, "aUU"); /* the step went on; the failed timer ended */
    assert_int_equal(keel_world_entity_count(f->w), 1);
    assert_int_equal(keel_fault_count(f->w), 1);
    const keel_fault *fl = keel_fault_at(f->w, 0);
    assert_true(fl->timer == id);
    assert_string_equal(fl->kind, "");
    assert_non_null(strstr(fl->message, "boom"));
    assert_true(keel_uuid_equal(fl->entity, keel_entity_uuid(f->w, keel_world_root(f->w))));
    assert_int_equal(keel_timer_cancel(f->w, id), KEEL_NOT_FOUND);
}

static void timer_ends_with_world_and_stop(void **state)
{
    fx *f = *state;
    after(f, 1, 0, "a");
    assert_int_equal(keel_world_play(f->w, &f->d), KEEL_OK);
    keel_timer_id b = after(f, 1, 0, "b");
    step(f, 0.5);
    assert_int_equal(keel_world_stop(f->w, &f->d), KEEL_OK);
    assert_int_equal(keel_timer_count(f->w), 0);
    assert_int_equal(g_released, 2);
    double left;
    assert_int_equal(keel_timer_remaining(f->w, b, &left), KEEL_NOT_FOUND);
    step(f, 2);
    assert_string_equal(g_log, "");
    after(f, 1, 0, "c"); /* released by the fixture's keel_world_free (ASan: no leak) */
}

#define TT(name) cmocka_unit_test_setup_teardown(name, timer_setup, fx_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TT(timer_fires_in_due_order_ties_by_creation),
        TT(timer_fires_at_the_start_of_update),
        TT(timer_every_fires_at_most_once_a_step),
        TT(timer_refuses_bad_arguments),
        TT(timer_cancel_and_remaining),
        TT(timer_owned_ends_with_its_entity),
        TT(timer_failure_rolls_back_and_is_recorded),
        TT(timer_ends_with_world_and_stop),
    };
    return KEEL_TEST_RUN(tests, timer_group_setup, group_teardown);
}
