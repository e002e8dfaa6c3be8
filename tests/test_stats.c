/* test_stats.c — keel_world_stats (keel_stats.h): C hooks and C systems measured, the counts of a
 * scripted frame, fixed_update's runs summed, the ring of 300, on and off (inside a step too). */
#define _POSIX_C_SOURCE 200809L
#include "keel_test.h"
#include "world_fixture.h"
#include "keel_stats.h"

#include <time.h>

static keel_kind_id g_a, g_b, g_ear;
static int g_heard;

static keel_status hook_ok(const keel_call *c)
{
    (void)c;
    return KEEL_OK;
}

static keel_status hook_fail(const keel_call *c)
{
    return KEEL_ERROR(c->diags, KEEL_INVALID_OPERATION, "", "fails on purpose");
}

static keel_status hook_hear(const keel_call *c)
{
    (void)c;
    g_heard++;
    return KEEL_OK;
}

static int stats_group_setup(void **state)
{
    if (group_setup(state)) return -1;
    keel_kind_desc a = { .key = "stats:a", .version = 1 };
    a.hooks[KEEL_PHASE_UPDATE] = hook_ok;
    keel_kind_desc b = { .key = "stats:b", .version = 1 };
    b.hooks[KEEL_PHASE_UPDATE] = hook_fail;
    keel_kind_desc ear = { .key = "stats:ear", .version = 1 };
    ear.hooks[KEEL_PHASE_ON_MESSAGE] = hook_hear;
    if (keel_kind_declare(&a, NULL, NULL) || keel_kind_declare(&b, NULL, NULL) ||
        keel_kind_declare(&ear, NULL, NULL))
        return -1;
    g_a = keel_kind_find("stats:a");
    g_b = keel_kind_find("stats:b");
    g_ear = keel_kind_find("stats:ear");
    return 0;
}

static int stats_setup(void **state)
{
    g_heard = 0;
    return fx_setup(state);
}

static void step(fx *f, double dt)
{
    assert_int_equal(keel_step(f->w, dt, &f->d), KEEL_OK);
}

static keel_entity spawn_with(fx *f, const char *name, keel_kind_id k1, keel_kind_id k2)
{
    keel_entity e = 0;
    assert_int_equal(keel_spawn(f->w, name, KEEL_NO_ENTITY, NULL, &e, NULL, &f->d), KEEL_OK);
    keel_comp c;
    if (k1) assert_int_equal(keel_add(f->w, e, k1, NULL, &c, NULL, &f->d), KEEL_OK);
    if (k2) assert_int_equal(keel_add(f->w, e, k2, NULL, &c, NULL, &f->d), KEEL_OK);
    return e;
}

static const keel_stats_kind *kind_row(const keel_stats *s, keel_kind_id k, keel_phase p)
{
    for (size_t i = 0; i < s->kind_count; i++)
        if (s->kinds[i].kind == k && s->kinds[i].phase == p) return &s->kinds[i];
    return NULL;
}

static const keel_stats_system *system_row(const keel_stats *s, const char *name)
{
    for (size_t i = 0; i < s->system_count; i++)
        if (strcmp(s->systems[i].name, name) == 0) return &s->systems[i];
    return NULL;
}

static void busy_us(int us)
{
    /* a clock-bound wait: the measured time is at least us */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000L + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

static keel_status each_nothing(const keel_system_call *c)
{
    (void)c;
    return KEEL_OK;
}

static keel_status each_slow(const keel_system_call *c)
{
    (void)c;
    busy_us(500);
    return KEEL_OK;
}

static keel_entity g_doomed[2], g_target;

/* The scripted frame: 3 spawns, 2 destroys, 2 sends and a broadcast. */
static keel_status script(const keel_system_call *c)
{
    keel_world *w = c->world;
    for (int i = 0; i < 3; i++) {
        keel_entity e;
        keel_status st = keel_spawn(w, "new", KEEL_NO_ENTITY, NULL, &e, NULL, c->diags);
        if (st) return st;
    }
    for (int i = 0; i < 2; i++) {
        keel_status st = keel_destroy(w, g_doomed[i], NULL, c->diags);
        if (st) return st;
    }
    keel_status st = keel_send(w, g_target, "ping", NULL, 0, KEEL_NO_ENTITY, c->diags);
    if (!st) st = keel_send(w, g_target, "ping", NULL, 0, KEEL_NO_ENTITY, c->diags);
    if (!st) st = keel_broadcast(w, "all", NULL, 0, KEEL_NO_ENTITY, c->diags);
    return st;
}

static keel_status timer_fn(const keel_timer_call *c)
{
    (void)c;
    return KEEL_OK;
}

static void stats_off_collects_nothing(void **state)
{
    fx *f = *state;
    keel_stats s;
    spawn_with(f, "A", g_a, 0);
    step(f, 0.1);
    assert_false(keel_world_stats_enabled(f->w));
    assert_false(keel_world_stats(f->w, &s));
    assert_int_equal(s.frame, 0);
    assert_int_equal(s.system_count + s.kind_count + s.history_count, 0);
    keel_world_stats_system(f->w, "ghost", 1.0, 1); /* off: ignored */
    keel_world_stats_enable(f->w, true);
    assert_false(keel_world_stats(f->w, &s)); /* on, but no step measured yet */
    assert_false(keel_world_stats(NULL, &s));
    assert_false(keel_world_stats(f->w, NULL));
    keel_world_stats_enable(NULL, true);
    assert_false(keel_world_stats_enabled(NULL));
}

static void stats_scripted_frame_counts_exactly(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 5; i++) spawn_with(f, "AB", g_a, i < 3 ? g_b : 0); /* a, b interleaved */
    g_target = spawn_with(f, "Ear", g_ear, 0);
    spawn_with(f, "Ear2", g_ear, 0);
    g_doomed[0] = spawn_with(f, "D1", 0, 0);
    g_doomed[1] = spawn_with(f, "D2", 0, 0);
    keel_system_desc sd = { .name = "script", .phase = KEEL_PHASE_UPDATE, .run = script };
    assert_int_equal(keel_system_add(f->w, &sd, &f->d), KEEL_OK);
    keel_kind_id q[] = { g_a };
    keel_system_desc each = {
        .name = "each_a", .phase = KEEL_PHASE_LATE_UPDATE, .query = q, .query_count = 1, .each = each_nothing
    };
    assert_int_equal(keel_system_add(f->w, &each, &f->d), KEEL_OK);
    keel_timer_id t1, t2;
    assert_int_equal(keel_timer_after(f->w, 0.01, KEEL_NO_ENTITY, timer_fn, NULL, &t1, &f->d), KEEL_OK);
    assert_int_equal(keel_timer_after(f->w, 0.02, KEEL_NO_ENTITY, timer_fn, NULL, &t2, &f->d), KEEL_OK);
    keel_world_stats_enable(f->w, true);
    assert_true(keel_world_stats_enabled(f->w));
    step(f, 0.1);
    keel_stats s;
    assert_true(keel_world_stats(f->w, &s));
    assert_int_equal(s.frame, 1);
    assert_int_equal(s.messages, 3);
    assert_int_equal(s.timers, 2);
    assert_int_equal(s.spawned, 3);
    assert_int_equal(s.destroyed, 2);
    assert_int_equal(s.faults, 3); /* stats:b's update failed on its 3 holders */
    assert_int_equal(g_heard, 4);  /* 2 sends to Ear, the broadcast to both ears */
    const keel_stats_kind *ka = kind_row(&s, g_a, KEEL_PHASE_UPDATE), *kb = kind_row(&s, g_b, KEEL_PHASE_UPDATE);
    const keel_stats_kind *ke = kind_row(&s, g_ear, KEEL_PHASE_ON_MESSAGE);
    assert_non_null(ka);
    assert_non_null(kb);
    assert_non_null(ke);
    assert_int_equal(ka->calls, 5);
    assert_int_equal(kb->calls, 3);
    assert_int_equal(ke->calls, 4);
    assert_true(ka->ms > 0 && kb->ms > 0 && ke->ms > 0);
    assert_null(kind_row(&s, g_a, KEEL_PHASE_START)); /* C kinds without a start hook */
    const keel_stats_system *sc = system_row(&s, "script"), *se = system_row(&s, "each_a");
    assert_non_null(sc);
    assert_non_null(se);
    assert_int_equal(sc->calls, 1);
    assert_int_equal(sc->entities, 0);
    assert_int_equal(se->calls, 1);
    assert_int_equal(se->entities, 5);
    for (size_t i = 1; i < s.system_count; i++) assert_true(s.systems[i - 1].ms >= s.systems[i].ms);
    for (size_t i = 1; i < s.kind_count; i++) assert_true(s.kinds[i - 1].ms >= s.kinds[i].ms);
    double sum = 0;
    for (int p = 0; p < KEEL_PHASE_COUNT_; p++) sum += s.phase_ms[p];
    assert_true(sum <= s.frame_ms);
    assert_true(s.phase_ms[KEEL_PHASE_UPDATE] >= sc->ms);
    assert_int_equal(s.history_count, 1);
    assert_true(s.history[0] == s.frame_ms);
    assert_non_null(s.phase_history[KEEL_PHASE_UPDATE]);
    assert_null(s.phase_history[KEEL_PHASE_ON_MESSAGE]);
    assert_true(s.phase_history[KEEL_PHASE_UPDATE][0] == s.phase_ms[KEEL_PHASE_UPDATE]);
    /* the next frame's figures are its own: b is faulted, the script ran once */
    keel_system_remove(f->w, "script", &f->d);
    step(f, 0.1);
    assert_true(keel_world_stats(f->w, &s));
    assert_int_equal(s.messages + s.timers + s.spawned + s.destroyed + s.faults, 0);
    assert_null(kind_row(&s, g_b, KEEL_PHASE_UPDATE));
    assert_int_equal(kind_row(&s, g_a, KEEL_PHASE_UPDATE)->calls, 5);
    assert_null(system_row(&s, "script"));
    assert_int_equal(s.history_count, 2);
}

static void stats_fixed_update_runs_are_summed(void **state)
{
    fx *f = *state;
    spawn_with(f, "A", g_a, 0);
    keel_kind_id q[] = { g_a };
    keel_system_desc sd = {
        .name = "fixed", .phase = KEEL_PHASE_FIXED_UPDATE, .query = q, .query_count = 1, .each = each_nothing
    };
    assert_int_equal(keel_system_add(f->w, &sd, &f->d), KEEL_OK);
    keel_world_set_fixed_dt(f->w, 0.25);
    keel_world_stats_enable(f->w, true);
    step(f, 0.75); /* three fixed updates */
    keel_stats s;
    assert_true(keel_world_stats(f->w, &s));
    assert_int_equal(system_row(&s, "fixed")->calls, 3);
    assert_int_equal(system_row(&s, "fixed")->entities, 3);
    assert_true(s.phase_ms[KEEL_PHASE_FIXED_UPDATE] > 0);
}

static void stats_slow_system_ranks_first(void **state)
{
    fx *f = *state;
    for (int i = 0; i < 4; i++) spawn_with(f, "A", g_a, 0);
    keel_kind_id q[] = { g_a };
    keel_system_desc quick = {
        .name = "quick", .phase = KEEL_PHASE_UPDATE, .query = q, .query_count = 1, .each = each_nothing
    };
    keel_system_desc slow = {
        .name = "slow", .phase = KEEL_PHASE_LATE_UPDATE, .query = q, .query_count = 1, .each = each_slow
    };
    assert_int_equal(keel_system_add(f->w, &quick, &f->d), KEEL_OK);
    assert_int_equal(keel_system_add(f->w, &slow, &f->d), KEEL_OK);
    keel_world_stats_enable(f->w, true);
    step(f, 0.1);
    keel_stats s;
    assert_true(keel_world_stats(f->w, &s));
    assert_string_equal(s.systems[0].name, "slow");
    assert_true(s.systems[0].ms >= 2.0); /* 4 x 0.5 ms */
    assert_true(s.phase_ms[KEEL_PHASE_LATE_UPDATE] >= s.systems[0].ms);
    assert_true(s.frame_ms >= s.phase_ms[KEEL_PHASE_LATE_UPDATE]);
    /* a binding's report joins the same list */
    keel_world_stats_system(f->w, "reported", 1.0, 7); /* outside a step: ignored */
    step(f, 0.1);
    assert_true(keel_world_stats(f->w, &s));
    assert_null(system_row(&s, "reported"));
}

static keel_status switch_on(const keel_system_call *c)
{
    keel_world_stats_enable(c->world, true);
    return KEEL_OK;
}

static keel_status switch_off(const keel_system_call *c)
{
    keel_world_stats_enable(c->world, false);
    return KEEL_OK;
}

static void stats_on_and_off_inside_a_step(void **state)
{
    fx *f = *state;
    spawn_with(f, "A", g_a, 0);
    keel_system_desc on = { .name = "on", .phase = KEEL_PHASE_UPDATE, .run = switch_on };
    assert_int_equal(keel_system_add(f->w, &on, &f->d), KEEL_OK);
    step(f, 0.1);
    assert_true(keel_world_stats_enabled(f->w));
    keel_stats s;
    assert_false(keel_world_stats(f->w, &s)); /* turned on mid-step: that step is not measured */
    keel_system_remove(f->w, "on", &f->d);
    step(f, 0.1);
    assert_true(keel_world_stats(f->w, &s));
    assert_int_equal(s.frame, 2);
    keel_system_desc off = { .name = "off", .phase = KEEL_PHASE_START, .run = switch_off };
    assert_int_equal(keel_system_add(f->w, &off, &f->d), KEEL_OK);
    step(f, 0.1);
    assert_false(keel_world_stats_enabled(f->w));
    assert_true(keel_world_stats(f->w, &s)); /* the last figures stay */
    assert_int_equal(s.frame, 2);
}

static void stats_ring_keeps_the_last_300(void **state)
{
    fx *f = *state;
    keel_world_stats_enable(f->w, true);
    for (int i = 0; i < 305; i++) step(f, 0.01);
    keel_stats s;
    assert_true(keel_world_stats(f->w, &s));
    assert_int_equal(s.frame, 305);
    assert_int_equal(s.history_count, KEEL_STATS_HISTORY);
    assert_true(s.history[KEEL_STATS_HISTORY - 1] == s.frame_ms);
    assert_true(s.phase_history[KEEL_PHASE_LATE_UPDATE][KEEL_STATS_HISTORY - 1] ==
                s.phase_ms[KEEL_PHASE_LATE_UPDATE]);
    keel_world_stats_enable(f->w, false);
    keel_world_stats_enable(f->w, true); /* a new history */
    step(f, 0.01);
    assert_true(keel_world_stats(f->w, &s));
    assert_int_equal(s.history_count, 1);
    assert_int_equal(s.frame, 306);
}

#define TS(name) cmocka_unit_test_setup_teardown(name, stats_setup, fx_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS(stats_off_collects_nothing),         TS(stats_scripted_frame_counts_exactly),
        TS(stats_fixed_update_runs_are_summed), TS(stats_slow_system_ranks_first),
        TS(stats_on_and_off_inside_a_step),     TS(stats_ring_keeps_the_last_300),
    };
    return KEEL_TEST_RUN(tests, stats_group_setup, group_teardown);
}
