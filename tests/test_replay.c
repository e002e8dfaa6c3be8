/* test_replay.c — design/replay.md in C: the world's random generator, recording (inputs, hashes,
 * chunks), replaying (verification, seek, branch), a frozen world, a killed recorder, damage. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "keel_test.h"
#include "keel.h"
#include "bind.h"
#include "game/record.h"

static keel_kind_id g_mover;
static int g_clock; /* non-zero: the mover reads a value the recording never saw */
static char g_path[256];

/* x += dt, n counts frames, roll draws from the world's generator; at frame 5 a child is spawned
 * from the hook (its UUID from the world's generator while recording). */
static keel_status mover_update(const keel_call *c)
{
    keel_value v;
    keel_get(c->world, c->comp, 0, &v, NULL);
    v.as.f += c->dt + (g_clock ? 0.001 * g_clock++ : 0);
    keel_set(c->world, c->comp, 0, &v, NULL, c->diags);
    keel_get(c->world, c->comp, 1, &v, NULL);
    v.as.i++;
    keel_set(c->world, c->comp, 1, &v, NULL, c->diags);
    int64_t r = 0;
    keel_random_int(c->world, 1, 1000, &r, NULL);
    keel_value rv = { .type = KEEL_T_INT, .as.i = r };
    keel_set(c->world, c->comp, 2, &rv, NULL, c->diags);
    if (v.as.i == 5) keel_spawn(c->world, "child", c->comp.entity, NULL, NULL, NULL, NULL);
    return KEEL_OK;
}

static int setup(void **state)
{
    (void)state;
    if (keel_init() != KEEL_OK) return -1;
    static const keel_field_desc f[] = { { .key = "x", .type = KEEL_T_FLOAT },
                                         { .key = "n", .type = KEEL_T_INT },
                                         { .key = "roll", .type = KEEL_T_INT } };
    keel_kind_desc kd = { .key = "rt:mover", .version = 1, .multiplicity = KEEL_ONE, .fields = f, .field_count = 3 };
    kd.hooks[KEEL_PHASE_UPDATE] = mover_update;
    snprintf(g_path, sizeof g_path, "/tmp/keel_test_replay_%d.keelrec", (int)getpid());
    return keel_kind_declare(&kd, &g_mover, NULL) ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    remove(g_path);
    keel_shutdown();
    return 0;
}

static keel_world *mover_world(keel_entity *out)
{
    keel_world *w = keel_world_new("Replay");
    keel_entity e;
    assert_int_equal(keel_spawn(w, "m", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_add(w, e, g_mover, NULL, NULL, NULL, NULL), KEEL_OK);
    if (out) *out = e;
    return w;
}

static uint64_t hash_after(keel_world *w) { return keel__world_hash(w); }

/* Records `frames` frames of a mover world (one outside field write at frame 3), the hash
 * after each in hashes[1..frames]. */
static void record_session(int frames, uint32_t every, uint64_t *hashes)
{
    keel_entity e;
    keel_world *w = mover_world(&e);
    keel_world_set_seed(w, 5);
    keel_recorder *r = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__record_start(w, g_path, every, NULL, NULL, &r, &d), KEEL_OK);
    for (int i = 1; i <= frames; i++) {
        if (i == 3) {
            keel_value v = { .type = KEEL_T_FLOAT, .as.f = 10 };
            assert_int_equal(keel_set(w, (keel_comp){ e, g_mover, 0 }, 0, &v, NULL, NULL), KEEL_OK);
        }
        assert_int_equal(keel_step(w, 1.0 / 60, &d), KEEL_OK);
        if (hashes) hashes[i] = hash_after(w);
    }
    assert_int_equal(keel__record_stop(r, &d), KEEL_OK);
    keel_world_free(w);
    keel_diags_free(&d);
}

static void random_same_seed_draws_alike(void **state)
{
    (void)state;
    keel_world *a = keel_world_new("A"), *b = keel_world_new("B");
    keel_world_set_seed(a, 9);
    keel_world_set_seed(b, 9);
    for (int i = 0; i < 100; i++) assert_true(keel_random_u64(a) == keel_random_u64(b));
    int64_t s;
    uint64_t st[4];
    assert_true(keel_random_state(a, &s, st));
    assert_int_equal(s, 9);
    uint64_t zero[4] = { 0 };
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_random_set_state(a, 1, zero, &d), KEEL_INVALID_ARGUMENT);
    keel_diags_free(&d);
    int64_t x;
    assert_int_equal(keel_random_int(a, 5, 4, &x, NULL), KEEL_INVALID_ARGUMENT);
    assert_int_equal(keel_random_int(a, INT64_MIN, INT64_MAX, &x, NULL), KEEL_OK);
    keel_world_free(a);
    keel_world_free(b);
}

static void random_default_seed_from_the_scene(void **state)
{
    (void)state;
    keel_world *a = keel_world_new("A"), *b = keel_world_new("B");
    keel_uuid u;
    assert_true(keel_uuid_parse("11111111-2222-4333-8444-555555555555", &u));
    keel_world_set_uuid(a, u, NULL);
    keel_world_set_uuid(b, u, NULL);
    assert_false(keel_random_state(a, NULL, NULL)); /* nothing drawn yet */
    assert_true(keel_world_seed(a) == keel_world_seed(b));
    assert_true(keel_random_u64(a) == keel_random_u64(b));
    assert_true(keel_random_state(a, NULL, NULL));
    keel_world_free(a);
    keel_world_free(b);
}

static void replay_verifies_every_frame(void **state)
{
    (void)state;
    uint64_t hashes[61];
    record_session(60, 20, hashes);
    keel_world *w = keel_world_new("");
    keel_replay *rp = NULL;
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__replay_open(g_path, w, NULL, &rp, &d), KEEL_OK);
    assert_int_equal(keel__replay_frames(rp), 60);
    uint64_t keys[8];
    assert_int_equal(keel__replay_keyframes(rp, keys, 8), 4);
    assert_true(keys[0] == 0 && keys[1] == 20 && keys[3] == 60);
    for (int i = 1; i <= 60; i++) {
        assert_int_equal(keel__replay_step(rp, 1, &d), KEEL_OK);
        assert_true(keel__world_hash(w) == hashes[i]);
    }
    assert_int_equal(keel__replay_step(rp, 1, &d), KEEL_INVALID_ARGUMENT); /* the end */
    keel_diags_free(&d);
    keel_diags_init(&d);
    /* seek back and forth: the same states */
    assert_int_equal(keel__replay_seek(rp, 7, &d), KEEL_OK);
    assert_true(keel__world_hash(w) == hashes[7]);
    assert_int_equal(keel__replay_seek(rp, 45, &d), KEEL_OK);
    assert_true(keel__world_hash(w) == hashes[45]);
    assert_int_equal(keel__replay_seek(rp, 2, &d), KEEL_OK);
    assert_true(keel__world_hash(w) == hashes[2]);
    keel__replay_close(rp);
    keel__world_freeze(w, false);
    keel_world_free(w);
    keel_diags_free(&d);
}

static void replay_world_is_frozen(void **state)
{
    (void)state;
    record_session(10, 300, NULL);
    keel_world *w = keel_world_new("");
    keel_replay *rp = NULL;
    assert_int_equal(keel__replay_open(g_path, w, NULL, &rp, NULL), KEEL_OK);
    keel_entity e = keel_entity_child(w, keel_world_root(w), 0);
    assert_true(e != KEEL_NO_ENTITY);
    keel_value v = { .type = KEEL_T_FLOAT, .as.f = 1 };
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_set(w, (keel_comp){ e, g_mover, 0 }, 0, &v, NULL, &d), KEEL_INVALID_OPERATION);
    assert_non_null(strstr(d.items[0].message, "read-only"));
    assert_int_equal(keel_spawn(w, "x", KEEL_NO_ENTITY, NULL, NULL, NULL, NULL), KEEL_INVALID_OPERATION);
    assert_int_equal(keel_destroy(w, e, NULL, NULL), KEEL_INVALID_OPERATION);
    assert_int_equal(keel_step(w, 0.1, NULL), KEEL_INVALID_OPERATION);
    /* branching: the world is live again, the replay goes on in `fresh` at the same frame */
    assert_int_equal(keel__replay_step(rp, 4, NULL), KEEL_OK);
    uint64_t h = keel__world_hash(w);
    keel_world *fresh = keel_world_new("");
    assert_true(keel__replay_adopt(rp, fresh, NULL) == w);
    assert_true(keel__replay_world(rp) == fresh);
    assert_true(keel__world_hash(fresh) == h);
    assert_int_equal(keel_set(w, (keel_comp){ e, g_mover, 0 }, 0, &v, NULL, NULL), KEEL_OK);
    assert_int_equal(keel_step(w, 0.1, NULL), KEEL_OK);
    keel__replay_close(rp);
    keel__world_freeze(fresh, false);
    keel_world_free(fresh);
    keel_world_free(w);
    keel_diags_free(&d);
}

static void replay_diverged_names_frame_and_field(void **state)
{
    (void)state;
    record_session(30, 10, NULL);
    keel_world *w = keel_world_new("");
    keel_replay *rp = NULL;
    assert_int_equal(keel__replay_open(g_path, w, NULL, &rp, NULL), KEEL_OK);
    assert_int_equal(keel__replay_step(rp, 11, NULL), KEEL_OK);
    g_clock = 1; /* from frame 12 on, x is not what was recorded */
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel__replay_step(rp, 10, &d), KEEL_DIVERGED);
    g_clock = 0;
    const keel_replay_diff *diffs;
    size_t n;
    assert_int_equal(keel__replay_diverged(rp, &diffs, &n), 12);
    assert_int_equal(keel__replay_frame(rp), 12);
    assert_int_equal(n, 1);
    assert_string_equal(diffs[0].kind, "rt:mover");
    assert_string_equal(diffs[0].field, "x");
    assert_int_equal(d.items[0].code, KEEL_DIVERGED);
    assert_non_null(strstr(d.items[0].message, "frame 12"));
    assert_string_equal(keel_status_name(KEEL_DIVERGED), "Diverged");
    keel__replay_close(rp);
    keel__world_freeze(w, false);
    keel_world_free(w);
    keel_diags_free(&d);
}

/* A recorder killed with SIGKILL after 25 frames: the file replays to frame 25. */
static void record_killed_replays_to_last_frame(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        keel_world *w = mover_world(NULL);
        keel_recorder *r = NULL;
        if (keel__record_start(w, g_path, 10, NULL, NULL, &r, NULL) != KEEL_OK) _exit(3);
        for (int i = 0; i < 25; i++) keel_step(w, 1.0 / 60, NULL);
        raise(SIGKILL);
        _exit(4);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    keel_world *w = keel_world_new("");
    keel_replay *rp = NULL;
    assert_int_equal(keel__replay_open(g_path, w, NULL, &rp, NULL), KEEL_OK);
    assert_int_equal(keel__replay_frames(rp), 25);
    assert_int_equal(keel__replay_step(rp, 25, NULL), KEEL_OK);
    keel__replay_close(rp);
    keel__world_freeze(w, false);
    keel_world_free(w);
    /* a write torn in the middle: the file cut short inside the last frame's chunk */
    FILE *f = fopen(g_path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fclose(f);
    assert_int_equal(truncate(g_path, len - 5), 0);
    w = keel_world_new("");
    assert_int_equal(keel__replay_open(g_path, w, NULL, &rp, NULL), KEEL_OK);
    assert_int_equal(keel__replay_frames(rp), 24);
    assert_true(keel__replay_truncated(rp));
    keel__replay_close(rp);
    keel__world_freeze(w, false);
    keel_world_free(w);
}

static void replay_refuses_a_flipped_byte_with_its_offset(void **state)
{
    (void)state;
    record_session(20, 5, NULL);
    FILE *f = fopen(g_path, "rb");
    assert_non_null(f);
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    assert_true(n > 100 && n < sizeof buf);
    for (size_t at = 3; at < n; at += n / 17) {
        buf[at] ^= 0x40;
        f = fopen(g_path, "wb");
        fwrite(buf, 1, n, f);
        fclose(f);
        buf[at] ^= 0x40;
        keel_world *w = keel_world_new("");
        keel_replay *rp = NULL;
        keel_diags d;
        keel_diags_init(&d);
        keel_status st = keel__replay_open(g_path, w, NULL, &rp, &d);
        /* a flip in a chunk's length may read as a write torn at the end; anything else is refused */
        if (st == KEEL_OK) {
            assert_true(keel__replay_truncated(rp));
            keel__replay_close(rp);
            keel__world_freeze(w, false);
        } else {
            assert_int_equal(st, KEEL_PARSE_ERROR);
            assert_non_null(strstr(d.items[0].message, "offset"));
            assert_true(keel_world_entity_count(w) == 0); /* nothing half-built */
        }
        keel_world_free(w);
        keel_diags_free(&d);
    }
}

static void record_refuses_pending_timers_and_twice(void **state)
{
    (void)state;
    keel_world *w = mover_world(NULL);
    keel_recorder *r = NULL, *r2 = NULL;
    assert_int_equal(keel__record_start(w, g_path, 10, NULL, NULL, &r, NULL), KEEL_OK);
    assert_int_equal(keel__record_start(w, g_path, 10, NULL, NULL, &r2, NULL), KEEL_INVALID_OPERATION);
    assert_true(keel__recorder_of(w) == r);
    assert_int_equal(keel__record_stop(r, NULL), KEEL_OK);
    assert_null(keel__recorder_of(w));
    assert_int_equal(keel__record_start(w, "/nonexistent-dir/x.keelrec", 10, NULL, NULL, &r, NULL), KEEL_IO_ERROR);
    keel_world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_same_seed_draws_alike),
        cmocka_unit_test(random_default_seed_from_the_scene),
        cmocka_unit_test(replay_verifies_every_frame),
        cmocka_unit_test(replay_world_is_frozen),
        cmocka_unit_test(replay_diverged_names_frame_and_field),
        cmocka_unit_test(record_killed_replays_to_last_frame),
        cmocka_unit_test(replay_refuses_a_flipped_byte_with_its_offset),
        cmocka_unit_test(record_refuses_pending_timers_and_twice),
    };
    return KEEL_TEST_RUN(tests, setup, teardown);
}
