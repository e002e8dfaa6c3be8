/* test_check_memory.c — `keel check` of any input stays within 8 times its size plus 32 MiB of
 * resident memory (README "Scene files"): the program is run as a child on scenes written here and
 * its peak resident set (wait4's ru_maxrss) is compared to the bound. Under the sanitizer build the
 * child runs with ASan's quarantine off, which otherwise keeps up to 256 MiB of freed memory of its
 * own; the bound is the same (the shadow and redzones stay well inside it at these sizes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "keel_test.h"

#define MIB ((size_t)1 << 20)

static char dir[] = "/tmp/keel_check_memory_XXXXXX";

static int group_setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return rmdir(dir);
}

/* A scene of at least `size` bytes in flow style, one core:transform per entity, `root` (when
 * `root`) before the list. `bad`: each position is a list of 1,000 numbers, a value the field
 * refuses (InvalidArgument) and the densest tree per byte a scene makes. */
static void write_scene(const char *path, size_t size, bool bad, bool root)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "keel: 1\nscene: {uuid: 550e8400-e29b-41d4-a716-446655440000, name: Big}\n%sentities:\n",
            root ? "root: []\n" : "");
    char *list = malloc(2 * 1000 + 2);
    assert_non_null(list);
    size_t n = 0;
    list[n++] = '[';
    for (int i = 0; i < 1000; i++) n += (size_t)sprintf(list + n, i ? ",0" : "0");
    list[n++] = ']';
    list[n] = 0;
    for (size_t i = 0, written = 0; written < size; i++) {
        char pos[32];
        if (!bad) snprintf(pos, sizeof pos, "[%zu,0,0]", i);
        int w = fprintf(f, "- {uuid: 00000000-0000-4000-8000-%012zx, components: [{kind: core:transform, version: 1, "
                           "body: {position: %s}}]}\n", i, bad ? list : pos);
        assert_true(w > 0);
        written += (size_t)w;
    }
    free(list);
    assert_int_equal(fclose(f), 0);
}

/* Runs `keel check path`; its exit status in *code, its peak resident set in bytes. */
static size_t check_peak(const char *path, int *code)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        setenv("ASAN_OPTIONS", "detect_leaks=0:quarantine_size_mb=0:thread_local_quarantine_size_kb=0", 1);
        setenv("KEEL_PROGRESS", "0", 1);
        execl(KEEL_PROGRAM, "keel", "check", path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    struct rusage ru;
    assert_int_equal(wait4(pid, &st, 0, &ru), pid);
    assert_true(WIFEXITED(st));
    *code = WEXITSTATUS(st);
    return (size_t)ru.ru_maxrss * 1024; /* KiB on Linux */
}

static void assert_bounded(bool bad, bool root, size_t size)
{
    char path[128];
    snprintf(path, sizeof path, "%s/scene.yaml", dir);
    write_scene(path, size, bad, root);
    int code;
    size_t peak = check_peak(path, &code);
    unlink(path);
    assert_int_equal(code, bad ? 1 : 0);
    size_t bound = 8 * size + 32 * MIB;
    if (peak > bound) fail_msg("keel check peaked at %zu KiB for %zu KiB of scene (bound %zu KiB)", peak >> 10,
                               size >> 10, bound >> 10);
}

/* Before the entities were always streamed, a scene without `root` before its list was read
 * whole: this one peaked at ~70 MiB (Release), 35 times its size. */
static void check_memory_dense_invalid_scene_without_root(void **state)
{
    (void)state;
    assert_bounded(true, false, 2 * MIB);
}

static void check_memory_valid_scene(void **state)
{
    (void)state;
    assert_bounded(false, true, 2 * MIB);
    assert_bounded(false, false, 2 * MIB);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(check_memory_dense_invalid_scene_without_root),
        cmocka_unit_test(check_memory_valid_scene),
    };
    return KEEL_TEST_RUN(tests, group_setup, group_teardown);
}
