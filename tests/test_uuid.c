/* test_uuid.c — UUID generation (version 4 bits) and the strict canonical text form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keel.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uuid_v4_sets_version_and_variant),
        cmocka_unit_test(uuid_v4_differs_each_time),
        cmocka_unit_test(uuid_v4_differs_across_fork),
        cmocka_unit_test(uuid_format_parse_round_trip),
        cmocka_unit_test(uuid_format_is_lowercase_canonical),
        cmocka_unit_test(uuid_parse_reads_any_version),
        cmocka_unit_test(uuid_parse_refuses_non_canonical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
