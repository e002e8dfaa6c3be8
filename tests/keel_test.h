/* keel_test.h — how every cmocka program under tests/ runs its cases: all of them, or only those
 * whose names match the glob in KEEL_TEST (`KEEL_TEST='world_spawn*' ./build-test/tests/test_world`).
 * cmocka 1.1.5 reads no filter from the environment itself; this is the one place that does. */
#ifndef KEEL_TEST_H
#define KEEL_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

/* Hands KEEL_TEST's pattern to cmocka; an unset or empty one runs every case. */
static inline void keel__test_filter(void)
{
    const char *pattern = getenv("KEEL_TEST");
    if (pattern && *pattern) cmocka_set_test_filter(pattern);
}

/* cmocka_run_group_tests under KEEL_TEST's filter: each program's main returns it. A macro, as
 * cmocka's own is, because the group's size comes from the array itself. */
#define KEEL_TEST_RUN(tests, group_setup, group_teardown) \
    (keel__test_filter(), cmocka_run_group_tests(tests, group_setup, group_teardown))

#endif
