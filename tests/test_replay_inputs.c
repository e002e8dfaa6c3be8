/* test_replay_inputs.c — design/replay.md's inputs beyond commands, in C: messages sent from
 * outside a step (their bytes, order, targets), messages pending at keyframe 0 restored by a seek,
 * timers refused from outside a step while recording, payloads no file can hold, and a kind's
 * source hash in the header. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "keel_test.h"
#include "keel.h"
#include "bind.h"
#include "game/record.h"

static keel_kind_id g_inbox;
static char g_path[256];

/* sum += the message's first byte times its position in the name's alphabet; log counts */
static keel_status inbox_message(const keel_call *c)
{
    const keel_message *m = keel_call_message(c);
    keel_value v;
    keel_get(c->world, c->comp, 0, &v, NULL);
    int add = m->size ? ((const unsigned char *)m->data)[0] : 1;
    v.as.i = v.as.i * 31 + add * (m->name[0] - 'a' + 1); /* order counts */
    return keel_set(c->world, c->comp, 0, &v, NULL, c->diags);
}

static keel_status tick_fn(const keel_timer_call *c)
{
    (void)c;
    return KEEL_OK;
}

static int setup(void **state)
{
    (void)state;
    if (keel_init() != KEEL_OK) return -1;
    static const keel_field_desc f[] = { { .key = "sum", .type = KEEL_T_INT } };
    keel_kind_desc kd = { .key = "ri:inbox", .version = 1, .multiplicity = KEEL_ONE, .fields = f, .field_count = 1 };
    kd.hooks[KEEL_PHASE_ON_MESSAGE] = inbox_message;
    snprintf(g_path, sizeof g_path, "/tmp/keel_test_replay_inputs_%d.keelrec", (int)getpid());
    return keel_kind_declare(&kd, &g_inbox, NULL) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    remove(g_path);
    keel_shutdown();
    return 0;
}

static keel_entity inbox(keel_world *w, const char *name)
{
    keel_entity e;
    assert_int_equal(keel_spawn(w, name, KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, g_inbox, NULL, NULL, NULL, NULL), KEEL_OK);
    return e;
}

static keel_replay *open_replay(keel_world *w, const keel_replay_opts *o, keel_diags *d)
{
    keel_replay *rp = NULL;
    assert_int_equal(keel__replay_open(g_path, w, o, &rp, d), KEEL_OK);
    return rp;
}

static void close_replay(keel_replay *rp, keel_world *w)
{
    keel__replay_close(rp);
    keel__world_freeze(w, false);
    keel_world_free(w);
}

static void record_messages_from_outside_a_step(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("Mail");
    keel_entity a = inbox(w, "a"), b = inbox(w, "b");
    keel_recorder *r = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__record_start(w, g_path, 5, NULL, NULL, &r, &d), KEEL_OK);
    uint64_t hashes[21];
    for (int i = 1; i <= 20; i++) {
        unsigned char byte = (unsigned char)(i * 7);
        if (i % 3 == 0) assert_int_equal(keel_send(w, a, "hit", &byte, 1, b, &d), KEEL_OK);
        if (i % 4 == 0) assert_int_equal(keel_broadcast(w, "tick", NULL, 0, KEEL_NO_ENTITY, &d), KEEL_OK);
        if (i == 7) assert_int_equal(keel_send(w, b, "zap", &byte, 1, a, &d), KEEL_OK);
        assert_int_equal(keel_step(w, 1.0 / 60, &d), KEEL_OK);
        hashes[i] = keel__world_hash(w);
    }
    keel_value va;
    keel_get(w, (keel_comp){ a, g_inbox, 0 }, 0, &va, NULL);
    assert_true(va.as.i != 0);
    assert_int_equal(keel__record_stop(r, &d), KEEL_OK);
    keel_world_free(w);

    keel_world *rw = keel_world_new("");
    keel_replay *rp = open_replay(rw, NULL, &d);
    for (int i = 1; i <= 20; i++) {
        assert_int_equal(keel__replay_step(rp, 1, &d), KEEL_OK);
        assert_true(keel__world_hash(rw) == hashes[i]);
    }
    keel_value vr;
    keel_get(rw, (keel_comp){ keel_find(rw, keel_entity_uuid(rw, keel_entity_child(rw, keel_world_root(rw), 0))), g_inbox, 0 },
             0, &vr, NULL);
    assert_true(vr.as.i == va.as.i);
    /* back before the messages and forward again: the same states */
    assert_int_equal(keel__replay_seek(rp, 2, &d), KEEL_OK);
    assert_true(keel__world_hash(rw) == hashes[2]);
    assert_int_equal(keel__replay_seek(rp, 13, &d), KEEL_OK);
    assert_true(keel__world_hash(rw) == hashes[13]);
    close_replay(rp, rw);
    keel_diags_free(&d);
}

static void record_starts_with_messages_pending(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("Pending");
    keel_entity a = inbox(w, "a");
    unsigned char byte = 9;
    assert_int_equal(keel_send(w, a, "early", &byte, 1, KEEL_NO_ENTITY, NULL), KEEL_OK);
    assert_int_equal(keel_broadcast(w, "all", &byte, 1, a, NULL), KEEL_OK);
    keel_recorder *r = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__record_start(w, g_path, 4, NULL, NULL, &r, &d), KEEL_OK);
    uint64_t hashes[11];
    for (int i = 1; i <= 10; i++) {
        assert_int_equal(keel_step(w, 1.0 / 60, &d), KEEL_OK);
        hashes[i] = keel__world_hash(w);
    }
    assert_int_equal(keel__record_stop(r, &d), KEEL_OK);
    keel_world_free(w);

    keel_world *rw = keel_world_new("");
    keel_replay *rp = open_replay(rw, NULL, &d);
    assert_int_equal(keel_message_count(rw), 2); /* keyframe 0 holds them */
    assert_int_equal(keel__replay_step(rp, 1, &d), KEEL_OK);
    assert_true(keel__world_hash(rw) == hashes[1]);
    assert_int_equal(keel__replay_seek(rp, 9, &d), KEEL_OK);
    assert_int_equal(keel__replay_seek(rp, 0, &d), KEEL_OK);
    assert_int_equal(keel_message_count(rw), 2);
    assert_int_equal(keel__replay_step(rp, 1, &d), KEEL_OK);
    assert_true(keel__world_hash(rw) == hashes[1]);
    close_replay(rp, rw);
    keel_diags_free(&d);
}

static int g_released;
static void count_release(void *u)
{
    (void)u;
    g_released++;
}

static void record_refuses_timers_and_unwritable_payloads_from_outside(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("Refusals");
    keel_entity a = inbox(w, "a");
    keel_timer_id id;
    /* a timer pending before: refused at the start, named */
    assert_int_equal(keel_timer_after(w, 1, KEEL_NO_ENTITY, tick_fn, NULL, &id, NULL), KEEL_OK);
    keel_recorder *r = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__record_start(w, g_path, 4, NULL, NULL, &r, &d), KEEL_INVALID_OPERATION);
    assert_non_null(strstr(d.items[0].message, "timers"));
    keel_diags_free(&d);
    keel_diags_init(&d);
    assert_int_equal(keel_timer_cancel(w, id), KEEL_OK);
    assert_int_equal(keel__record_start(w, g_path, 4, NULL, NULL, &r, &d), KEEL_OK);
    /* while recording: a timer from outside a step holds a function no file can */
    assert_int_equal(keel_timer_after(w, 1, KEEL_NO_ENTITY, tick_fn, NULL, &id, &d), KEEL_INVALID_OPERATION);
    assert_non_null(strstr(d.items[0].message, "recording"));
    assert_int_equal(keel_timer_count(w), 0);
    /* a binding's payload with no codec on the world: refused, released, not queued */
    g_released = 0;
    int payload = 1;
    assert_int_equal(keel__message_post(w, a, false, "p", NULL, 0, KEEL_NO_ENTITY, &payload, count_release, &d),
                     KEEL_INVALID_OPERATION);
    assert_int_equal(g_released, 1);
    assert_int_equal(keel_message_count(w), 0);
    assert_int_equal(keel__record_stop(r, NULL), KEEL_OK);
    /* not recording any more: both go */
    assert_int_equal(keel_timer_after(w, 1, KEEL_NO_ENTITY, tick_fn, NULL, &id, NULL), KEEL_OK);
    assert_int_equal(keel__message_post(w, a, false, "p", NULL, 0, KEEL_NO_ENTITY, &payload, count_release, NULL),
                     KEEL_OK);
    keel_world_free(w);
    assert_int_equal(g_released, 2);
    keel_diags_free(&d);
}

static uint64_t g_source;
static uint64_t source_of(const char *key, void *ud)
{
    (void)ud;
    return strcmp(key, "ri:inbox") == 0 ? g_source : 0;
}

static void replay_refuses_a_changed_source_unless_allowed(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("Src");
    inbox(w, "a");
    keel_recorder *r = NULL;
    g_source = 0x1234;
    assert_int_equal(keel__record_start(w, g_path, 4, source_of, NULL, &r, NULL), KEEL_OK);
    assert_int_equal(keel_step(w, 1.0 / 60, NULL), KEEL_OK);
    assert_int_equal(keel__record_stop(r, NULL), KEEL_OK);
    keel_world_free(w);

    keel_replay_opts o = { false, true, source_of, NULL };
    keel_diags d;
    keel_diags_init(&d);
    keel_world *rw = keel_world_new("");
    keel_replay *rp = open_replay(rw, &o, &d); /* the same source */
    close_replay(rp, rw);
    g_source = 0x5678;
    rw = keel_world_new("");
    rp = NULL;
    assert_int_equal(keel__replay_open(g_path, rw, &o, &rp, &d), KEEL_INVALID_OPERATION);
    bool named = false;
    for (size_t i = 0; i < d.count; i++)
        named |= strstr(d.items[i].message, "ri:inbox") && strstr(d.items[i].message, "source");
    assert_true(named);
    keel_world_free(rw);
    keel_diags_free(&d);
    keel_diags_init(&d);
    o.allow_changed_kinds = true;
    rw = keel_world_new("");
    rp = open_replay(rw, &o, &d);
    assert_int_equal(d.items[0].severity, KEEL_SEV_WARNING);
    assert_int_equal(keel__replay_step(rp, 1, &d), KEEL_OK);
    close_replay(rp, rw);
    keel_diags_free(&d);
}

/* Records `frames` steps of w (between(i) before step i), the hash after each in hashes[1..]. */
static void record_steps(keel_world *w, int frames, uint32_t every, void (*between)(keel_world *, int), uint64_t *hashes)
{
    keel_recorder *r = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__record_start(w, g_path, every, NULL, NULL, &r, &d), KEEL_OK);
    for (int i = 1; i <= frames; i++) {
        if (between) between(w, i);
        assert_int_equal(keel_step(w, 1.0 / 60, &d), KEEL_OK);
        hashes[i] = keel__world_hash(w);
    }
    assert_int_equal(keel__record_stop(r, &d), KEEL_OK);
    keel_diags_free(&d);
}

/* Replays g_path frame by frame against hashes, then seeks to each of `seeks` (0-terminated). */
static void replays_alike(int frames, const uint64_t *hashes, const int *seeks)
{
    keel_diags d;
    keel_diags_init(&d);
    keel_world *rw = keel_world_new("");
    keel_replay *rp = open_replay(rw, NULL, &d);
    for (int i = 1; i <= frames; i++) {
        assert_int_equal(keel__replay_step(rp, 1, &d), KEEL_OK);
        assert_true(keel__world_hash(rw) == hashes[i]);
    }
    for (; seeks && *seeks; seeks++) {
        assert_int_equal(keel__replay_seek(rp, (uint64_t)*seeks, &d), KEEL_OK);
        assert_true(keel__world_hash(rw) == hashes[*seeks]);
    }
    close_replay(rp, rw);
    keel_diags_free(&d);
}

static keel_timer_id g_tick, g_hit;
static void timers_between(keel_world *w, int i)
{
    keel_entity a = keel_entity_child(w, keel_world_root(w), 0);
    unsigned char byte = (unsigned char)i;
    if (i == 2) assert_int_equal(keel__timer_message(w, 0.1, true, KEEL_NO_ENTITY, "tick", &byte, 1, NULL, NULL, &g_tick, NULL), KEEL_OK);
    if (i == 3) assert_int_equal(keel__timer_message(w, 0.25, false, a, "hit", &byte, 1, NULL, NULL, &g_hit, NULL), KEEL_OK);
    if (i == 30) assert_int_equal(keel_timer_cancel(w, g_tick), KEEL_OK);
}

static void record_message_timers_and_cancels(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("Timers");
    inbox(w, "a");
    uint64_t hashes[61];
    record_steps(w, 60, 10, timers_between, hashes);
    assert_true(hashes[28] != hashes[20]); /* ticking */
    assert_true(hashes[59] == hashes[31]); /* cancelled at 30 (the hit fired before): nothing moves */
    keel_world_free(w);
    static const int seeks[] = { 25, 5, 55, 10, 31, 0 };
    replays_alike(60, hashes, seeks);
    /* refusals: a name, data, an owner */
    w = keel_world_new("Bad");
    assert_int_equal(keel__timer_message(w, 1, false, KEEL_NO_ENTITY, "", NULL, 0, NULL, NULL, NULL, NULL), KEEL_INVALID_ARGUMENT);
    assert_int_equal(keel__timer_message(w, 1, false, KEEL_NO_ENTITY, "x", NULL, 3, NULL, NULL, NULL, NULL), KEEL_INVALID_ARGUMENT);
    assert_int_equal(keel__timer_message(w, -1, false, KEEL_NO_ENTITY, "x", NULL, 0, NULL, NULL, NULL, NULL), KEEL_INVALID_ARGUMENT);
    assert_int_equal(keel__timer_message(w, 1, false, (keel_entity)12345, "x", NULL, 0, NULL, NULL, NULL, NULL), KEEL_NOT_FOUND);
    assert_int_equal(keel_timer_count(w), 0);
    keel_world_free(w);
}

static void play_between(keel_world *w, int i)
{
    keel_entity a = keel_entity_child(w, keel_world_root(w), 0);
    unsigned char byte = 3;
    if (i == 3) assert_int_equal(keel_world_play(w, NULL), KEEL_OK);
    if (i == 4) assert_int_equal(keel_send(w, a, "during", &byte, 1, KEEL_NO_ENTITY, NULL), KEEL_OK);
    if (i == 5) inbox(w, "made while playing");
    if (i == 8) assert_int_equal(keel_world_stop(w, NULL), KEEL_OK);
    if (i == 9) assert_int_equal(keel_send(w, a, "after", &byte, 1, KEEL_NO_ENTITY, NULL), KEEL_OK);
}

static void record_plays_stop_as_the_world_it_leaves(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("Play");
    inbox(w, "a");
    uint64_t hashes[21];
    record_steps(w, 20, 5, play_between, hashes);
    assert_int_equal(keel_world_entity_count(w), 1);
    keel_world_free(w);
    static const int seeks[] = { 9, 4, 20, 7, 0 };
    replays_alike(20, hashes, seeks);
}

static int g_armed;
static keel_status armed_awake(const keel_call *c)
{
    if (!g_armed) return KEEL_OK;
    return keel_timer_after(c->world, 0.1, KEEL_NO_ENTITY, tick_fn, NULL, NULL, c->diags);
}

static void record_ends_at_a_stop_that_leaves_a_function_timer(void **state)
{
    (void)state;
    static const keel_field_desc f[] = { { .key = "n", .type = KEEL_T_INT } };
    keel_kind_desc kd = { .key = "ri:armed", .version = 1, .multiplicity = KEEL_ONE, .fields = f, .field_count = 1 };
    kd.hooks[KEEL_PHASE_AWAKE] = armed_awake;
    keel_kind_id armed;
    assert_int_equal(keel_kind_declare(&kd, &armed, NULL), KEEL_OK);
    g_armed = 0;
    keel_world *w = keel_world_new("Armed");
    keel_entity e;
    assert_int_equal(keel_spawn(w, "a", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, armed, NULL, NULL, NULL, NULL), KEEL_OK);
    keel_recorder *r = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__record_start(w, g_path, 100, NULL, NULL, &r, &d), KEEL_OK);
    for (int i = 0; i < 3; i++) assert_int_equal(keel_step(w, 1.0 / 60, &d), KEEL_OK);
    assert_int_equal(keel_world_play(w, &d), KEEL_OK);
    assert_int_equal(keel_destroy(w, e, NULL, &d), KEEL_OK);
    for (int i = 0; i < 2; i++) assert_int_equal(keel_step(w, 1.0 / 60, &d), KEEL_OK);
    g_armed = 1;
    assert_int_equal(keel_world_stop(w, &d), KEEL_OK); /* a comes back: its awake makes a timer */
    assert_int_equal(keel_timer_count(w), 1);
    for (int i = 0; i < 4; i++) assert_int_equal(keel_step(w, 1.0 / 60, &d), KEEL_OK);
    assert_int_equal(keel__record_frames(r), 5);
    assert_int_equal(keel__record_stop(r, &d), KEEL_INVALID_OPERATION);
    assert_non_null(strstr(d.items[d.count - 1].message, "ends at frame 5"));
    assert_non_null(strstr(d.items[d.count - 1].message, "timers"));
    keel_world_free(w);
    keel_diags_free(&d);
    keel_diags_init(&d);
    keel_world *rw = keel_world_new("");
    keel_replay *rp = open_replay(rw, NULL, &d);
    assert_int_equal(keel__replay_frames(rp), 5);
    assert_int_equal(keel__replay_step(rp, 5, &d), KEEL_OK);
    close_replay(rp, rw);
    keel_diags_free(&d);
    g_armed = 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(record_messages_from_outside_a_step),
        cmocka_unit_test(record_starts_with_messages_pending),
        cmocka_unit_test(record_refuses_timers_and_unwritable_payloads_from_outside),
        cmocka_unit_test(replay_refuses_a_changed_source_unless_allowed),
        cmocka_unit_test(record_message_timers_and_cancels),
        cmocka_unit_test(record_plays_stop_as_the_world_it_leaves),
        cmocka_unit_test(record_ends_at_a_stop_that_leaves_a_function_timer),
    };
    return KEEL_TEST_RUN(tests, setup, teardown);
}
