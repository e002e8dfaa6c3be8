/* test_uuid.c — UUID generation (version 4 bits) and the strict canonical text form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keel_test.h"
#include "keel.h"
#include "base/util.h" /* keel__chacha20 */

static void uuid_v4_sets_version_and_variant(void **state)
{
    for (int i = 0; i < 64; i++) {
        keel_uuid u = keel_uuid_v4();
        assert_int_equal(u.bytes[6] >> 4, 4);
        assert_int_equal(u.bytes[8] & 0xc0, 0x80);
        assert_false(keel_uuid_is_nil(u));
    }
}

static void uuid_v4_differs_each_time(void **state)
{
    keel_uuid a = keel_uuid_v4(), b = keel_uuid_v4();
    assert_false(keel_uuid_equal(a, b));
}

static void uuid_format_parse_round_trip(void **state)
{
    for (int i = 0; i < 32; i++) {
        keel_uuid u = keel_uuid_v4(), back;
        char text[37];
        keel_uuid_format(u, text);
        assert_int_equal(strlen(text), 36);
        assert_true(keel_uuid_parse(text, &back));
        assert_true(keel_uuid_equal(u, back));
    }
}

static void uuid_format_is_lowercase_canonical(void **state)
{
    keel_uuid u;
    for (int i = 0; i < 16; i++)
        u.bytes[i] = (uint8_t)(0xa0 + i);
    char text[37];
    keel_uuid_format(u, text);
    assert_string_equal(text, "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
}

static void uuid_parse_reads_any_version(void **state)
{
    keel_uuid u;
    assert_true(keel_uuid_parse("550e8400-e29b-41d4-a716-446655440000", &u));
    assert_int_equal(u.bytes[0], 0x55);
    assert_int_equal(u.bytes[15], 0x00);
    assert_true(keel_uuid_parse("11111111-1111-1111-1111-111111111111", &u)); /* version 1 bits */
    assert_true(keel_uuid_parse("00000000-0000-0000-0000-000000000000", &u));
    assert_true(keel_uuid_is_nil(u));
}

static void uuid_parse_refuses_non_canonical(void **state)
{
    static const char *const bad[] = {
        "",
        "550E8400-E29B-41D4-A716-446655440000",   /* uppercase */
        "550e8400-e29b-41d4-a716-44665544000A",   /* one uppercase digit */
        "{550e8400-e29b-41d4-a716-446655440000}", /* braces */
        "550e8400e29b41d4a716446655440000",       /* no hyphens */
        "550e8400-e29b-41d4-a716-44665544000",    /* short */
        "550e8400-e29b-41d4-a716-4466554400000",  /* long */
        "550e8400-e29b-41d4-a716_446655440000",   /* wrong separator */
        "550e840-0e29b-41d4-a716-446655440000",   /* hyphen moved */
        "550e8400-e29b-41d4-a716-44665544000g",   /* not hex */
        " 550e8400-e29b-41d4-a716-446655440000",  /* leading space */
        "urn:uuid:550e8400-e29b-41d4-a716-446655440000",
    };
    keel_uuid u = keel_uuid_v4(), before = u;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_false(keel_uuid_parse(bad[i], &u));
        assert_true(keel_uuid_equal(u, before)); /* untouched on failure */
    }
    assert_false(keel_uuid_parse(NULL, &u));
}

/* The UUID pool's generator is ChaCha20: RFC 7539's block test vector (its 32-bit counter 1 and
 * 96-bit nonce 000000090000004a00000000 are the 64-bit counter and nonce words below). */
static void uuid_pool_cipher_is_chacha20(void **state)
{
    (void)state;
    uint32_t key[8];
    for (int i = 0; i < 8; i++)
        key[i] = (uint32_t)(4 * i) | (uint32_t)(4 * i + 1) << 8 | (uint32_t)(4 * i + 2) << 16 | (uint32_t)(4 * i + 3) << 24;
    static const uint8_t want[64] = {
        0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15, 0x50, 0x0f, 0xdd, 0x1f, 0xa3, 0x20, 0x71, 0xc4,
        0xc7, 0xd1, 0xf4, 0xc7, 0x33, 0xc0, 0x68, 0x03, 0x04, 0x22, 0xaa, 0x9a, 0xc3, 0xd4, 0x6c, 0x4e,
        0xd2, 0x82, 0x64, 0x46, 0x07, 0x9f, 0xaa, 0x09, 0x14, 0xc2, 0xd7, 0x05, 0xd9, 0x8b, 0x02, 0xa2,
        0xb5, 0x12, 0x9c, 0xd1, 0xde, 0x16, 0x4e, 0xb9, 0xcb, 0xd0, 0x83, 0xe8, 0xa2, 0x50, 0x3c, 0x4e,
    };
    uint8_t out[3 * 64];
    keel__chacha20(key, 0x4a000000u, 1 | (uint64_t)0x09000000u << 32, out, 1);
    assert_memory_equal(out, want, 64);
    /* blocks made together are the blocks made one at a time */
    keel__chacha20(key, 7, 41, out, 3);
    for (int b = 0; b < 3; b++) {
        uint8_t one[64];
        keel__chacha20(key, 7, 41 + (uint64_t)b, one, 1);
        assert_memory_equal(out + 64 * b, one, 64);
    }
}

/* Many UUIDs (past several pool refills and a rekey) are all distinct v4 ones. */
static void uuid_v4_many_are_distinct(void **state)
{
    (void)state;
    enum { N = 70000 }; /* 1.1 MiB of pool: past the kernel rekey too */
    keel_uuid *u = malloc(N * sizeof *u);
    assert_non_null(u);
    for (int i = 0; i < N; i++) u[i] = keel_uuid_v4();
    /* sort-free check: a hash set of the first 8 bytes */
    size_t cap = 1u << 18;
    uint64_t *set = calloc(cap, sizeof *set);
    assert_non_null(set);
    for (int i = 0; i < N; i++) {
        assert_int_equal(u[i].bytes[6] >> 4, 4);
        uint64_t h;
        memcpy(&h, u[i].bytes, 8);
        h |= 1;
        size_t p = (size_t)(h * 0x9e3779b97f4a7c15ull >> 46) & (cap - 1);
        while (set[p]) {
            assert_true(set[p] != h);
            p = (p + 1) & (cap - 1);
        }
        set[p] = h;
    }
    free(set);
    free(u);
}

/* A forked child must not hand out the UUIDs its parent hands out next. */
static void uuid_v4_differs_across_fork(void **state)
{
    (void)state;
    (void)keel_uuid_v4(); /* the pool is filled */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        keel_uuid c = keel_uuid_v4();
        ssize_t n = write(fds[1], c.bytes, sizeof c.bytes);
        _exit(n == (ssize_t)sizeof c.bytes ? 0 : 1);
    }
    keel_uuid mine = keel_uuid_v4(), theirs;
    assert_int_equal(read(fds[0], theirs.bytes, sizeof theirs.bytes), (ssize_t)sizeof theirs.bytes);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    close(fds[1]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_false(keel_uuid_equal(mine, theirs));
}

/* A world's spawns in a forked child get UUIDs other than the parent's next spawns get: the
 * world draws UUIDs ahead (a ring of 16), and those drawn before the fork are the parent's. */
static void world_spawn_uuids_differ_across_fork(void **state)
{
    (void)state;
    keel_world *w = keel_world_new("forked");
    keel_entity e;
    assert_int_equal(keel_spawn(w, "first", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK); /* the ring is drawn */
    enum { N = 20 };
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        keel_uuid got[N];
        for (int k = 0; k < N; k++) {
            keel_entity c;
            if (keel_spawn(w, "child", KEEL_NO_ENTITY, NULL, &c, NULL, NULL) != KEEL_OK) _exit(2);
            got[k] = keel_entity_uuid(w, c);
        }
        ssize_t n = write(fds[1], got, sizeof got);
        _exit(n == (ssize_t)sizeof got ? 0 : 1);
    }
    keel_uuid mine[N], theirs[N];
    for (int k = 0; k < N; k++) {
        keel_entity c;
        assert_int_equal(keel_spawn(w, "parent", KEEL_NO_ENTITY, NULL, &c, NULL, NULL), KEEL_OK);
        mine[k] = keel_entity_uuid(w, c);
    }
    assert_int_equal(read(fds[0], theirs, sizeof theirs), (ssize_t)sizeof theirs);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    close(fds[1]);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int a = 0; a < N; a++)
        for (int b = 0; b < N; b++) assert_false(keel_uuid_equal(mine[a], theirs[b]));
    keel_world_free(w);
}

/* Two threads, each with its own world, never draw the same UUIDs (the pool is per thread). */
#define THREAD_N 2000
static void *spawn_many(void *arg)
{
    keel_uuid *out = arg;
    keel_world *w = keel_world_new("threaded");
    for (int k = 0; k < THREAD_N; k++) {
        keel_entity c;
        if (keel_spawn(w, NULL, KEEL_NO_ENTITY, NULL, &c, NULL, NULL) != KEEL_OK) break;
        out[k] = keel_entity_uuid(w, c);
    }
    keel_world_free(w);
    return NULL;
}

static int uuid_cmp(const void *a, const void *b) { return memcmp(a, b, sizeof(keel_uuid)); }

static void worlds_on_threads_draw_distinct_uuids(void **state)
{
    (void)state;
    keel_uuid *u = calloc(2 * THREAD_N, sizeof *u);
    pthread_t t[2];
    for (int k = 0; k < 2; k++) assert_int_equal(pthread_create(&t[k], NULL, spawn_many, u + k * THREAD_N), 0);
    for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
    qsort(u, 2 * THREAD_N, sizeof *u, uuid_cmp);
    for (int k = 0; k < 2 * THREAD_N; k++) assert_false(keel_uuid_is_nil(u[k]));
    for (int k = 1; k < 2 * THREAD_N; k++) assert_false(keel_uuid_equal(u[k - 1], u[k]));
    free(u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uuid_v4_sets_version_and_variant),
        cmocka_unit_test(uuid_v4_differs_each_time),
        cmocka_unit_test(uuid_v4_differs_across_fork),
        cmocka_unit_test(world_spawn_uuids_differ_across_fork),
        cmocka_unit_test(worlds_on_threads_draw_distinct_uuids),
        cmocka_unit_test(uuid_pool_cipher_is_chacha20),
        cmocka_unit_test(uuid_v4_many_are_distinct),
        cmocka_unit_test(uuid_format_parse_round_trip),
        cmocka_unit_test(uuid_format_is_lowercase_canonical),
        cmocka_unit_test(uuid_parse_reads_any_version),
        cmocka_unit_test(uuid_parse_refuses_non_canonical),
    };
    return KEEL_TEST_RUN(tests, NULL, NULL);
}
