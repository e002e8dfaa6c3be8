/* test_atomic.c — atomic saves: every failing step leaves the old file and no temp file; SIGKILL mid-save. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "keel_test.h"
#include "keel.h"
#include "base/io.h"

/* ---- a fault-injecting io table ---- */

typedef enum fault {
    FAULT_NONE = 0,
    FAULT_OPEN,
    FAULT_SHORT_THEN_ENOSPC,
    FAULT_WRITE_EIO,
    FAULT_FSYNC,
    FAULT_CLOSE,
    FAULT_RENAME,
    FAULT_TINY_WRITES,  /* not a failure: at most 7 bytes per write */
    FAULT_EINTR_ONCE,   /* not a failure: the first write is interrupted */
    FAULT_EXISTS_ONCE,  /* not a failure: the first temp name is taken */
    FAULT_STEP          /* step `fault_op` fails with `fault_err` (every time) */
} fault;

static fault mode;
static int writes, fsyncs;
static const struct keel__io_ops *real;

static int opens;
typedef enum op { OP_OPEN, OP_WRITE, OP_FSYNC, OP_CLOSE, OP_RENAME } op;
static op fault_op;
static int fault_err;

static bool fails(op o)
{
    if (mode != FAULT_STEP || fault_op != o) return false;
    errno = fault_err;
    return true;
}

static int f_open(const char *path, int flags, mode_t m)
{
    if (mode == FAULT_OPEN && (flags & O_CREAT)) {
        errno = EACCES;
        return -1;
    }
    if ((flags & O_CREAT) && fails(OP_OPEN)) return -1;
    if (mode == FAULT_EXISTS_ONCE && (flags & O_CREAT) && opens++ == 0) {
        errno = EEXIST; /* as if another process had picked the same temp name */
        return -1;
    }
    return real->open(path, flags, m);
}

static ssize_t f_write(int fd, const void *buf, size_t n)
{
    writes++;
    if (fails(OP_WRITE)) return -1;
    switch (mode) {
    case FAULT_SHORT_THEN_ENOSPC:
        if (writes == 1) return real->write(fd, buf, n / 2);
        errno = ENOSPC;
        return -1;
    case FAULT_WRITE_EIO:
        errno = EIO;
        return -1;
    case FAULT_TINY_WRITES:
        return real->write(fd, buf, n < 7 ? n : 7);
    case FAULT_EINTR_ONCE:
        if (writes == 1) {
            errno = EINTR;
            return -1;
        }
        return real->write(fd, buf, n);
    default:
        return real->write(fd, buf, n);
    }
}

static int f_fsync(int fd)
{
    fsyncs++;
    if (fails(OP_FSYNC)) return -1;
    if (mode == FAULT_FSYNC && fsyncs == 1) {
        errno = EIO;
        return -1;
    }
    return real->fsync(fd);
}

static int f_close(int fd)
{
    int r = real->close(fd);
    if (fails(OP_CLOSE)) return -1;
    if (mode == FAULT_CLOSE) {
        errno = EIO;
        return -1;
    }
    return r;
}

static int f_rename(const char *from, const char *to)
{
    if (fails(OP_RENAME)) return -1;
    if (mode == FAULT_RENAME) {
        errno = EXDEV;
        return -1;
    }
    return real->rename(from, to);
}

static int f_unlink(const char *path) { return real->unlink(path); }

static const struct keel__io_ops faulty = { f_open, f_write, f_fsync, f_close, f_rename, f_unlink };

static char dir[64];
static char target[128];

static int setup(void **state)
{
    real = keel__io_default_ops();
    snprintf(dir, sizeof dir, "/tmp/keel_atomic_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(target, sizeof target, "%s/scene.yaml", dir);
    return 0;
}

static void clear_dir(void)
{
    DIR *dd = opendir(dir);
    struct dirent *de;
    while (dd && (de = readdir(dd))) {
        if (de->d_name[0] == '.') continue;
        char p[sizeof dir + sizeof de->d_name + 2];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        unlink(p);
    }
    if (dd) closedir(dd);
}

static int teardown(void **state)
{
    keel__io_set_ops(NULL);
    clear_dir();
    rmdir(dir);
    return 0;
}

/* Names in the directory other than the target. */
static int stray_files(void)
{
    int n = 0;
    DIR *dd = opendir(dir);
    struct dirent *de;
    while ((de = readdir(dd))) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "scene.yaml") == 0) continue;
        printf("# stray: %s\n", de->d_name);
        n++;
    }
    closedir(dd);
    return n;
}

static char *slurp(size_t *len)
{
    char *text = NULL;
    assert_int_equal(keel_read_file(target, 1 << 26, &text, len, NULL), KEEL_OK);
    return text;
}

static void put_old(void)
{
    keel__io_set_ops(NULL);
    assert_int_equal(keel_write_atomic(target, "OLD\n", 4, NULL), KEEL_OK);
}

static void expect_failure(fault f, const char *step, const char *errtext)
{
    put_old();
    static char big[1 << 16];
    memset(big, 'n', sizeof big);
    mode = f;
    writes = fsyncs = 0;
    keel__io_set_ops(&faulty);
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_write_atomic(target, big, sizeof big, &d), KEEL_IO_ERROR);
    keel__io_set_ops(NULL);
    assert_int_equal(d.errors, 1);
    assert_int_equal(d.items[0].code, KEEL_IO_ERROR);
    printf("# %s\n", d.items[0].message);
    assert_non_null(strstr(d.items[0].message, step));
    assert_non_null(strstr(d.items[0].message, errtext));
    size_t len;
    char *now = slurp(&len);
    assert_string_equal(now, "OLD\n");
    free(now);
    assert_int_equal(stray_files(), 0);
    keel_diags_free(&d);
}

static void atomic_failures_leave_old_file(void **state)
{
    expect_failure(FAULT_OPEN, "open failed", strerror(EACCES));
    expect_failure(FAULT_SHORT_THEN_ENOSPC, "write failed", strerror(ENOSPC));
    expect_failure(FAULT_WRITE_EIO, "write failed", strerror(EIO));
    expect_failure(FAULT_FSYNC, "fsync failed", strerror(EIO));
    expect_failure(FAULT_CLOSE, "close failed", strerror(EIO));
    expect_failure(FAULT_RENAME, "rename failed", strerror(EXDEV));
}

static void atomic_short_writes_are_completed(void **state)
{
    const char *text = "keel: 1\nthe whole text, written seven bytes at a time\n";
    fault modes[] = { FAULT_TINY_WRITES, FAULT_EINTR_ONCE, FAULT_NONE };
    for (size_t i = 0; i < 3; i++) {
        put_old();
        mode = modes[i];
        writes = fsyncs = 0;
        keel__io_set_ops(&faulty);
        assert_int_equal(keel_write_atomic(target, text, strlen(text), NULL), KEEL_OK);
        keel__io_set_ops(NULL);
        assert_true(fsyncs >= 1);
        size_t len;
        char *now = slurp(&len);
        assert_string_equal(now, text);
        free(now);
        assert_int_equal(stray_files(), 0);
    }
}

static void atomic_unwritable_directory(void **state)
{
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_write_atomic("/nonexistent_dir_keel/x.yaml", "x", 1, &d), KEEL_IO_ERROR);
    assert_non_null(strstr(d.items[0].message, "/nonexistent_dir_keel/x.yaml"));
    keel_diags_free(&d);
}

static void touch(const char *path, time_t mtime)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "torn", 4), 4);
    close(fd);
    struct timespec t[2] = { { mtime, 0 }, { mtime, 0 } };
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A killed save's temp carries the PID a later process may get again: that process's first
 * save must not trip over it (O_EXCL), and the litter goes. */
static void atomic_stale_temps_of_a_reused_pid(void **state)
{
    put_old();
    char p[256];
    time_t long_ago = time(NULL) - 3600;
    /* Every name this process's old counter scheme would pick first. */
    for (int i = 1; i <= 64; i++) {
        snprintf(p, sizeof p, "%s.tmp.%ld.%d", target, (long)getpid(), i);
        touch(p, long_ago);
    }
    /* A process that is gone left one too, just now. */
    pid_t gone = fork();
    assert_true(gone >= 0);
    if (gone == 0) _exit(0);
    waitpid(gone, NULL, 0);
    char dead[256], live[256], other[256];
    snprintf(dead, sizeof dead, "%s.tmp.%ld.%016x", target, (long)gone, 7u);
    touch(dead, time(NULL));
    /* A temp of this process written now (a save in flight on another thread): kept. */
    snprintf(live, sizeof live, "%s.tmp.%ld.%016x", target, (long)getpid(), 9u);
    touch(live, time(NULL));
    /* Names of another pattern are never touched. */
    snprintf(other, sizeof other, "%s.tmp.notes", target);
    touch(other, long_ago);

    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_write_atomic(target, "NEW\n", 4, &d), KEEL_OK);
    assert_int_equal(d.count, 0);
    size_t len;
    char *now = slurp(&len);
    assert_string_equal(now, "NEW\n");
    free(now);
    for (int i = 1; i <= 64; i++) {
        snprintf(p, sizeof p, "%s.tmp.%ld.%d", target, (long)getpid(), i);
        assert_false(exists(p));
    }
    assert_false(exists(dead));
    assert_true(exists(live));
    assert_true(exists(other));
    unlink(live);
    unlink(other);
    assert_int_equal(stray_files(), 0);
    keel_diags_free(&d);
}

static void atomic_taken_temp_name_is_drawn_again(void **state)
{
    put_old();
    mode = FAULT_EXISTS_ONCE;
    opens = writes = fsyncs = 0;
    keel__io_set_ops(&faulty);
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_write_atomic(target, "NEW\n", 4, &d), KEEL_OK);
    keel__io_set_ops(NULL);
    assert_true(opens >= 2);
    size_t len;
    char *now = slurp(&len);
    assert_string_equal(now, "NEW\n");
    free(now);
    assert_int_equal(stray_files(), 0);
    keel_diags_free(&d);
}

/* A world of n entities with three components each; `tag` makes the two versions differ. */
static keel_world *big_world(size_t n, const char *tag)
{
    keel_world *w = keel_world_new(tag);
    keel_kind_id t = keel_kind_find("core:transform"), l = keel_kind_find("core:point_light");
    for (size_t i = 0; i < n; i++) {
        keel_entity e;
        char name[64];
        snprintf(name, sizeof name, "%s %zu", tag, i);
        assert_int_equal(keel_spawn(w, name, KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
        assert_int_equal(keel_add(w, e, t, NULL, NULL, NULL, NULL), KEEL_OK);
        assert_int_equal(keel_add(w, e, l, NULL, NULL, NULL, NULL), KEEL_OK);
    }
    return w;
}

static void atomic_kill_during_save(void **state)
{
    assert_int_equal(keel_init(), KEEL_OK);
    keel_world *wa = big_world(2000, "alpha"), *wb = big_world(2000, "beta");
    char *a, *b;
    size_t la, lb;
    assert_int_equal(keel_scene_dump(wa, &a, &la, NULL), KEEL_OK);
    assert_int_equal(keel_scene_dump(wb, &b, &lb, NULL), KEEL_OK);
    assert_int_equal(keel_scene_save(wa, target, NULL), KEEL_OK);
    srand((unsigned)time(NULL));
    int saw_a = 0, saw_b = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (int round = 0; round < 50; round++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            /* Pre-dumped texts, so saves finish often between kills. */
            for (unsigned i = 0;; i++) keel_write_atomic(target, i % 2 ? a : b, i % 2 ? la : lb, NULL);
        }
        usleep(1000 + (useconds_t)(rand() % 60000));
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        assert_true(WIFSIGNALED(status));
        size_t len;
        char *now_text = slurp(&len);
        bool is_a = len == la && memcmp(now_text, a, la) == 0;
        bool is_b = len == lb && memcmp(now_text, b, lb) == 0;
        assert_true(is_a || is_b);
        saw_a += is_a;
        saw_b += is_b;
        if (round % 10 == 0) {
            keel_world *w = NULL;
            assert_int_equal(keel_scene_parse(now_text, len, NULL, &w, NULL), KEEL_OK);
            keel_world_free(w);
        }
        free(now_text);
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 8) break; /* bounded on a slow machine */
    }
    printf("# target was alpha %d times, beta %d times\n", saw_a, saw_b);
    assert_true(saw_a + saw_b > 0);
    /* Killed children leave their temps behind; the next save clears them away. */
    assert_int_equal(keel_write_atomic(target, a, la, NULL), KEEL_OK);
    assert_int_equal(stray_files(), 0);
    free(a);
    free(b);
    keel_world_free(wa);
    keel_world_free(wb);
    keel_shutdown();
}

static keel_world *loaded(const char *path)
{
    keel_world *w = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel_scene_load(path, NULL, &w, &d);
    if (st) printf("# %s\n", d.items[0].message);
    assert_int_equal(st, KEEL_OK);
    keel_diags_free(&d);
    return w;
}

/* Every fault point of one real save (a scene, then a slot), with ENOSPC and with EIO:
 * refused with IOError naming the step, the old file loads as it was, no temp is left. */
static void atomic_every_fault_point_of_a_save(void **state)
{
    assert_int_equal(keel_init(), KEEL_OK);
    static const char *const names[] = { "open", "write", "fsync", "close", "rename" };
    static const int errs[] = { ENOSPC, EIO };
    keel_world *old = big_world(50, "old"), *fresh = big_world(60, "new");
    char *old_text;
    size_t old_len;
    assert_int_equal(keel_scene_dump(old, &old_text, &old_len, NULL), KEEL_OK);
    char slot[160];
    snprintf(slot, sizeof slot, "%s/slot.sav", dir);
    keel_baseline *base = keel_baseline_capture(old);
    int runs = 0;
    for (int which = 0; which < 2; which++) {
        for (op o = OP_OPEN; o <= OP_RENAME; o++) {
            for (size_t e = 0; e < 2; e++) {
                keel__io_set_ops(NULL);
                keel_slot_info info = { .title = "old" };
                if (which == 0) assert_int_equal(keel_write_atomic(target, old_text, old_len, NULL), KEEL_OK);
                else assert_int_equal(keel_persist_save(old, base, slot, &info, NULL), KEEL_OK);
                mode = FAULT_STEP;
                fault_op = o;
                fault_err = errs[e];
                keel__io_set_ops(&faulty);
                keel_diags d;
                keel_diags_init(&d);
                keel_slot_info newer = { .title = "new" };
                keel_status st = which == 0 ? keel_scene_save(fresh, target, &d)
                                            : keel_persist_save(old, base, slot, &newer, &d);
                keel__io_set_ops(NULL);
                mode = FAULT_NONE;
                assert_int_equal(st, KEEL_IO_ERROR);
                char want[64];
                snprintf(want, sizeof want, "%s failed: %s", names[o], strerror(errs[e]));
                assert_non_null(strstr(d.items[0].message, want));
                keel_diags_free(&d);
                if (which == 0) {
                    size_t len;
                    char *now = slurp(&len);
                    assert_true(len == old_len && memcmp(now, old_text, len) == 0);
                    free(now);
                    keel_world_free(loaded(target));
                } else {
                    keel_slot_info got;
                    assert_int_equal(keel_persist_info(slot, &got, NULL), KEEL_OK);
                    assert_string_equal(got.title, "old");
                    keel_slot_info_free(&got);
                }
                int stray = 0;
                DIR *dd = opendir(dir);
                struct dirent *de;
                while ((de = readdir(dd)))
                    if (strstr(de->d_name, ".tmp.")) stray++;
                closedir(dd);
                assert_int_equal(stray, 0);
                runs++;
            }
        }
    }
    printf("# %d faulted saves refused cleanly\n", runs);
    unlink(slot);
    keel_baseline_free(base);
    free(old_text);
    keel_world_free(old);
    keel_world_free(fresh);
    keel_shutdown();
}

/* Save slots killed mid-save, as scenes are above: the slot always loads (old or new), and a
 * later save leaves no temp behind. */
static void atomic_kill_during_slot_save(void **state)
{
    assert_int_equal(keel_init(), KEEL_OK);
    keel_world *w = big_world(3000, "slot");
    keel_baseline *base = keel_baseline_capture(w);
    /* Play: the slot holds every entity's name, so it is large. */
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) keel_rename(w, e, "played", NULL, NULL);
    char slot[160];
    snprintf(slot, sizeof slot, "%s/slot.sav", dir);
    keel_slot_info a = { .title = "a" }, b = { .title = "b" };
    assert_int_equal(keel_persist_save(w, base, slot, &a, NULL), KEEL_OK);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int rounds = 0;
    for (; rounds < 50; rounds++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            for (unsigned i = 0;; i++) keel_persist_save(w, base, slot, i % 2 ? &a : &b, NULL);
        usleep(1000 + (useconds_t)(rand() % 40000));
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        keel_slot_info got;
        assert_int_equal(keel_persist_info(slot, &got, NULL), KEEL_OK);
        assert_true(strcmp(got.title, "a") == 0 || strcmp(got.title, "b") == 0);
        keel_slot_info_free(&got);
        if (rounds % 10 == 0) { /* the whole state too (applied over the played world) */
            keel_diags d;
            keel_diags_init(&d);
            assert_int_equal(keel_persist_load(w, slot, &d), KEEL_OK);
            keel_diags_free(&d);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 8) break; /* bounded on a slow machine */
    }
    printf("# %d kills\n", rounds);
    assert_int_equal(keel_persist_save(w, base, slot, &a, NULL), KEEL_OK);
    int stray = 0;
    DIR *dd = opendir(dir);
    struct dirent *de;
    while ((de = readdir(dd)))
        if (strstr(de->d_name, ".tmp.")) stray++;
    closedir(dd);
    assert_int_equal(stray, 0);
    unlink(slot);
    keel_baseline_free(base);
    keel_world_free(w);
    keel_shutdown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(atomic_failures_leave_old_file),
        cmocka_unit_test(atomic_short_writes_are_completed),
        cmocka_unit_test(atomic_unwritable_directory),
        cmocka_unit_test(atomic_kill_during_save),
        cmocka_unit_test(atomic_stale_temps_of_a_reused_pid),
        cmocka_unit_test(atomic_taken_temp_name_is_drawn_again),
        cmocka_unit_test(atomic_every_fault_point_of_a_save),
        cmocka_unit_test(atomic_kill_during_slot_save),
    };
    return KEEL_TEST_RUN(tests, setup, teardown);
}
