/* test_save_async.c — save jobs from C (design/saving.md): the file holds the world at the call,
 * a pending path is refused, errors come only through the job, close and kind declarations wait,
 * and SIGKILL at random moments of async saves leaves the old file or the new one, whole.
 * The `tsan` ctest entry runs this program under ThreadSanitizer as well (tests/tsan_test.sh).
 * KEEL_KILL_ROUNDS sets the kill test's rounds (CI: 20; the full run is 200). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
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
#include "model/capture.h"

static char dir[64];

static char *at(const char *name)
{
    static char buf[4][320];
    static int next;
    char *b = buf[next++ % 4];
    snprintf(b, sizeof buf[0], "%.63s/%.200s", dir, name);
    return b;
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/keel_async_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    keel__io_set_ops(NULL);
    DIR *dd = opendir(dir);
    struct dirent *de;
    while (dd && (de = readdir(dd)))
        if (de->d_name[0] != '.') unlink(at(de->d_name));
    if (dd) closedir(dd);
    rmdir(dir);
    return 0;
}

static keel_world *big_world(size_t n, const char *tag)
{
    keel_world *w = keel_world_new(tag);
    keel_kind_id t = keel_kind_find("core:transform");
    for (size_t i = 0; i < n; i++) {
        keel_entity e;
        char name[64];
        snprintf(name, sizeof name, "%s %zu", tag, i);
        assert_int_equal(keel_spawn(w, name, KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
        assert_int_equal(keel_add(w, e, t, NULL, NULL, NULL, NULL), KEEL_OK);
    }
    return w;
}

static char *slurp(const char *path, size_t *len)
{
    char *text = NULL;
    assert_int_equal(keel_read_file(path, 1u << 30, &text, len, NULL), KEEL_OK);
    return text;
}

/* ---- a writer that holds the worker until the test lets it go ---- */

static const struct keel__io_ops *real;
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static bool gate_open, gate_reached;

static ssize_t held_write(int fd, const void *buf, size_t n)
{
    pthread_mutex_lock(&gate_mu);
    gate_reached = true;
    pthread_cond_broadcast(&gate_cv);
    while (!gate_open) pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    return real->write(fd, buf, n);
}

static struct keel__io_ops held;

static void hold_writes(void)
{
    real = keel__io_default_ops();
    held = *real;
    held.write = held_write;
    pthread_mutex_lock(&gate_mu);
    gate_open = gate_reached = false;
    pthread_mutex_unlock(&gate_mu);
    keel__io_set_ops(&held);
}

static void wait_reached(void)
{
    pthread_mutex_lock(&gate_mu);
    while (!gate_reached) pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
}

static void open_gate(void)
{
    pthread_mutex_lock(&gate_mu);
    gate_open = true;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

static void *open_gate_later(void *arg)
{
    (void)arg;
    usleep(100 * 1000);
    open_gate();
    return NULL;
}

/* ---- cases ---- */

static void async_writes_what_the_sync_save_writes(void **state)
{
    (void)state;
    assert_int_equal(keel_init(), KEEL_OK);
    keel_world *w = big_world(500, "same");
    keel_job *job = NULL;
    assert_int_equal(keel_save_async(w, at("a.yaml"), &job, NULL), KEEL_OK);
    assert_non_null(job);
    assert_string_equal(keel_job_path(job), at("a.yaml"));
    assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
    keel_status st = KEEL_INVALID_ARGUMENT;
    assert_true(keel_job_done(job, &st, NULL));
    assert_int_equal(st, KEEL_OK);
    assert_int_equal(keel_scene_save(w, at("b.yaml"), NULL), KEEL_OK);
    size_t la, lb;
    char *a = slurp(at("a.yaml"), &la), *b = slurp(at("b.yaml"), &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    keel_job_free(job);
    keel_world_free(w);
    keel_shutdown();
}

static void async_file_holds_the_world_at_the_call(void **state)
{
    (void)state;
    assert_int_equal(keel_init(), KEEL_OK);
    keel_world *w = big_world(3000, "call");
    keel_baseline *base = keel_baseline_capture(w);
    keel_entity e0 = keel_next(w, 0);
    keel_set_enabled(w, e0, false, NULL, NULL);
    char *want;
    size_t wl;
    assert_int_equal(keel_scene_dump(w, &want, &wl, NULL), KEEL_OK);
    keel_job *job = NULL, *slot = NULL;
    keel_slot_info info = { .title = "at call", .saved_at = 1 };
    assert_int_equal(keel_save_async(w, at("call.yaml"), &job, NULL), KEEL_OK);
    assert_int_equal(keel_persist_save_async(w, base, at("call.save"), &info, &slot, NULL), KEEL_OK);
    keel_baseline_free(base); /* the job holds its own reference */
    /* heavy change right after the call: every entity gone, others made, the scene renamed */
    keel_entity e;
    while ((e = keel_next(w, 0))) assert_int_equal(keel_destroy(w, e, NULL, NULL), KEEL_OK);
    for (int i = 0; i < 300; i++) keel_spawn(w, "after", KEEL_NO_ENTITY, NULL, &e, NULL, NULL);
    keel_world_set_name(w, "renamed", NULL);
    assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(slot, NULL), KEEL_OK);
    size_t gl;
    char *got = slurp(at("call.yaml"), &gl);
    assert_int_equal(gl, wl);
    assert_memory_equal(got, want, wl);
    keel_slot_info back;
    assert_int_equal(keel_persist_info(at("call.save"), &back, NULL), KEEL_OK);
    assert_string_equal(back.title, "at call");
    keel_slot_info_free(&back);
    free(got);
    free(want);
    keel_job_free(job);
    keel_job_free(slot);
    keel_world_free(w);
    keel_shutdown();
}

static void async_pending_path_is_refused(void **state)
{
    (void)state;
    assert_int_equal(keel_init(), KEEL_OK);
    keel_world *w = big_world(10, "pending");
    keel_baseline *base = keel_baseline_capture(w);
    hold_writes();
    keel_job *job = NULL, *again = NULL, *other = NULL;
    assert_int_equal(keel_save_async(w, at("p.yaml"), &job, NULL), KEEL_OK);
    wait_reached();
    assert_false(keel_job_done(job, NULL, NULL));
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_save_async(w, at("p.yaml"), &again, &d), KEEL_INVALID_OPERATION);
    assert_null(again);
    assert_non_null(strstr(d.items[0].message, "pending"));
    assert_int_equal(keel_scene_save(w, at("p.yaml"), NULL), KEEL_INVALID_OPERATION);
    assert_int_equal(keel_persist_save(w, base, at("p.yaml"), NULL, NULL), KEEL_INVALID_OPERATION);
    assert_int_equal(keel_persist_save_async(w, base, at("p.yaml"), NULL, &again, NULL), KEEL_INVALID_OPERATION);
    assert_null(again);
    /* another path is not refused (its worker waits at the same gate) */
    assert_int_equal(keel_save_async(w, at("q.yaml"), &other, NULL), KEEL_OK);
    assert_false(access(at("p.yaml"), F_OK) == 0);
    open_gate();
    assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(other, NULL), KEEL_OK);
    keel__io_set_ops(NULL);
    assert_int_equal(keel_scene_save(w, at("p.yaml"), NULL), KEEL_OK); /* free again */
    keel_diags_free(&d);
    keel_job_free(job);
    keel_job_free(other);
    keel_baseline_free(base);
    keel_world_free(w);
    keel_shutdown();
}

static void async_errors_come_through_the_job(void **state)
{
    (void)state;
    assert_int_equal(keel_init(), KEEL_OK);
    keel_world *w = big_world(10, "err");
    keel_job *job = NULL;
    assert_int_equal(keel_save_async(w, at("missing/x.yaml"), &job, NULL), KEEL_OK);
    keel_diags d;
    keel_diags_init(&d);
    assert_int_equal(keel_job_wait(job, &d), KEEL_IO_ERROR);
    assert_int_equal(d.count, 1);
    assert_int_equal(d.items[0].code, KEEL_IO_ERROR);
    keel_status st = KEEL_OK;
    assert_true(keel_job_done(job, &st, &d)); /* every call gets them again */
    assert_int_equal(st, KEEL_IO_ERROR);
    assert_int_equal(d.count, 2);
    keel_diags_free(&d);
    keel_job_free(job);
    /* NULLs */
    assert_int_equal(keel_save_async(NULL, at("x"), &job, NULL), KEEL_INVALID_ARGUMENT);
    assert_int_equal(keel_save_async(w, NULL, &job, NULL), KEEL_INVALID_ARGUMENT);
    assert_int_equal(keel_save_async(w, at("x"), NULL, NULL), KEEL_INVALID_ARGUMENT);
    assert_int_equal(keel_persist_save_async(w, NULL, at("x"), NULL, &job, NULL), KEEL_INVALID_ARGUMENT);
    assert_int_equal(keel_job_wait(NULL, NULL), KEEL_INVALID_ARGUMENT);
    keel_job_free(NULL);
    /* a baseline of another scene */
    keel_world *other = keel_world_new("other");
    keel_baseline *ob = keel_baseline_capture(other);
    assert_int_equal(keel_persist_save_async(w, ob, at("x.save"), NULL, &job, NULL), KEEL_INVALID_ARGUMENT);
    assert_null(job);
    /* lifted */
    keel_lift *lift = NULL;
    assert_int_equal(keel_lift_entity(w, keel_next(w, 0), &lift, NULL), KEEL_OK);
    assert_int_equal(keel_save_async(w, at("x.yaml"), &job, NULL), KEEL_INVALID_OPERATION);
    assert_null(job);
    assert_int_equal(keel_lift_restore(lift, NULL), KEEL_OK);
    assert_false(access(at("x.yaml"), F_OK) == 0);
    keel_baseline_free(ob);
    keel_world_free(other);
    keel_world_free(w);
    keel_shutdown();
}

static void async_close_and_declarations_wait(void **state)
{
    (void)state;
    assert_int_equal(keel_init(), KEEL_OK);
    keel_world *w = big_world(100, "close");
    hold_writes();
    keel_job *job = NULL;
    assert_int_equal(keel_save_async(w, at("c.yaml"), &job, NULL), KEEL_OK);
    wait_reached();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, open_gate_later, NULL), 0);
    assert_int_equal(keel_world_close(w, NULL), KEEL_OK);
    assert_true(keel_job_done(job, NULL, NULL)); /* close waited */
    pthread_join(t, NULL);
    keel_job_free(job);

    w = big_world(100, "declare");
    hold_writes();
    assert_int_equal(keel_save_async(w, at("d.yaml"), &job, NULL), KEEL_OK);
    wait_reached();
    assert_int_equal(pthread_create(&t, NULL, open_gate_later, NULL), 0);
    keel_field_desc f = { .key = "hp", .type = KEEL_T_INT };
    keel_kind_desc kd = { .key = "test:late", .version = 1, .fields = &f, .field_count = 1 };
    assert_int_equal(keel_kind_declare(&kd, NULL, NULL), KEEL_OK);
    assert_true(keel_job_done(job, NULL, NULL)); /* the declaration waited */
    pthread_join(t, NULL);
    keel_job_free(job);

    /* a handle let go while writing: the job still finishes */
    hold_writes();
    assert_int_equal(keel_save_async(w, at("e.yaml"), &job, NULL), KEEL_OK);
    keel_job_free(job);
    open_gate();
    keel_jobs_wait(NULL);
    keel__io_set_ops(NULL);
    keel_world *back = NULL;
    assert_int_equal(keel_scene_load(at("e.yaml"), NULL, &back, NULL), KEEL_OK);
    assert_int_equal(keel_world_entity_count(back), 100);
    keel_world_free(back);
    keel_world_free(w);
    keel_shutdown();
}

/* SIGKILL at random moments of a child's stream of async saves (a scene and a slot, their
 * content alternating): after each kill both files read back whole, the old or the new one. */
static void async_kill_during_saves(void **state)
{
    (void)state;
    assert_int_equal(keel_init(), KEEL_OK);
    const char *env = getenv("KEEL_KILL_ROUNDS");
    int rounds = env && *env ? atoi(env) : 20;
    if (rounds <= 0) {
        keel_shutdown();
        skip(); /* KEEL_KILL_ROUNDS=0: the ThreadSanitizer run (fork after threads) */
    }
    keel_world *w = big_world(400, "kill");
    keel_baseline *base = keel_baseline_capture(w);
    for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) keel_rename(w, e, "played", NULL, NULL);
    char *scene = at("kill.yaml"), *slot = at("kill.save");
    keel_slot_info a = { .title = "a" }, b = { .title = "b" };
    keel_job *j1 = NULL, *j2 = NULL;
    assert_int_equal(keel_save_async(w, scene, &j1, NULL), KEEL_OK);
    assert_int_equal(keel_persist_save_async(w, base, slot, &a, &j2, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(j1, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(j2, NULL), KEEL_OK);
    keel_job_free(j1);
    keel_job_free(j2);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    int names[3] = { 0, 0, 0 }; /* kill (never replaced), even, odd */
    for (int round = 0; round < rounds; round++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            for (unsigned i = 0;; i++) {
                keel_world_set_name(w, i % 2 ? "odd" : "even", NULL);
                keel_job *s = NULL, *p = NULL;
                keel_save_async(w, scene, &s, NULL);
                keel_persist_save_async(w, base, slot, i % 2 ? &a : &b, &p, NULL);
                keel_job_wait(s, NULL);
                keel_job_wait(p, NULL);
                keel_job_free(s);
                keel_job_free(p);
            }
        }
        usleep(1000 + (useconds_t)(rand() % 250000)); /* a forked child starts slowly (its pages copied on write) */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        keel_world *back = NULL;
        keel_diags d;
        keel_diags_init(&d);
        assert_int_equal(keel_scene_load(scene, NULL, &back, &d), KEEL_OK);
        const char *name = keel_world_name(back);
        assert_true(strcmp(name, "kill") == 0 || strcmp(name, "odd") == 0 || strcmp(name, "even") == 0);
        names[strcmp(name, "kill") == 0 ? 0 : strcmp(name, "even") == 0 ? 1 : 2]++;
        assert_int_equal(keel_world_entity_count(back), 400);
        keel_world_free(back);
        keel_slot_info got;
        assert_int_equal(keel_persist_info(slot, &got, &d), KEEL_OK);
        assert_true(strcmp(got.title, "a") == 0 || strcmp(got.title, "b") == 0);
        keel_slot_info_free(&got);
        if (round % 10 == 0) assert_int_equal(keel_persist_load(w, slot, &d), KEEL_OK); /* the whole state */
        keel_diags_free(&d);
    }
    printf("# %d kills (scene left: %d first, %d even, %d odd)\n", rounds, names[0], names[1], names[2]);
    keel_baseline_free(base);
    keel_world_free(w);
    keel_shutdown();
}

/* ---- the capture's memory, kept between saves (model/capture.c) ---- */

/* w's scene as keel_scene_dump writes it now (what a save job started now must write). */
static char *dump_now(keel_world *w, size_t *len)
{
    char *text = NULL;
    assert_int_equal(keel_scene_dump(w, &text, len, NULL), KEEL_OK);
    return text;
}

static void assert_file_is(const char *path, const char *want, size_t wl)
{
    size_t gl;
    char *got = slurp(path, &gl);
    assert_int_equal(gl, wl);
    assert_memory_equal(got, want, wl);
    free(got);
}

/* A world with what a capture copies one by one: unknown components (slotted), a kind owning
 * strings, slotted loaded components, names shared and unique. */
static keel_world *rich_world(size_t n)
{
    static bool declared;
    if (!declared || keel_kind_find("test:labelled") == KEEL_NO_KIND) {
        static const keel_field_desc f[] = { { .key = "label", .type = KEEL_T_STRING },
                                             { .key = "n", .type = KEEL_T_INT } };
        keel_kind_desc kd = {
            .key = "test:labelled", .version = 1, .multiplicity = KEEL_MANY, .fields = f, .field_count = 2
        };
        assert_int_equal(keel_kind_declare(&kd, NULL, NULL), KEEL_OK);
        declared = true;
    }
    keel_world *w = NULL;
    assert_int_equal(keel_scene_load(KEEL_FIXTURES "/good_unknown_kinds.yaml", NULL, &w, NULL), KEEL_OK);
    keel_kind_id lk = keel_kind_find("test:labelled"), t = keel_kind_find("core:transform");
    int fl = keel_kind_field(lk, "label");
    for (size_t i = 0; i < n; i++) {
        keel_entity e;
        char name[64];
        snprintf(name, sizeof name, i % 3 ? "rich %zu" : "shared", i);
        assert_int_equal(keel_spawn(w, name, KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
        assert_int_equal(keel_add(w, e, t, NULL, NULL, NULL, NULL), KEEL_OK);
        keel_comp c;
        keel_add_opts o = KEEL_ADD_OPTS_INIT;
        o.slot = (uint32_t)(i % 4); /* slots 1-3 are kept aside in the slot map */
        assert_int_equal(keel_add(w, e, lk, &o, &c, NULL, NULL), KEEL_OK);
        char label[48];
        snprintf(label, sizeof label, "label of %zu", i);
        keel_value v = { .type = KEEL_T_STRING, .as.s = label };
        assert_int_equal(keel_set(w, c, fl, &v, NULL, NULL), KEEL_OK);
    }
    return w;
}

/* Heavy change: every other entity destroyed, the rest renamed and relabelled, new ones made. */
static void churn(keel_world *w, int round)
{
    keel_kind_id lk = keel_kind_find("test:labelled");
    int fl = keel_kind_field(lk, "label"), i = 0;
    keel_entity e = keel_next(w, 0);
    while (e) {
        keel_entity next = keel_next(w, e);
        if (i++ % 2) {
            assert_int_equal(keel_destroy(w, e, NULL, NULL), KEEL_OK);
        } else {
            char name[64];
            snprintf(name, sizeof name, "round %d %d", round, i);
            assert_int_equal(keel_rename(w, e, name, NULL, NULL), KEEL_OK);
            keel_comp c;
            if (keel_get_comp(w, e, lk, KEEL_SLOT_AUTO, &c)) {
                keel_value v = { .type = KEEL_T_STRING, .as.s = name };
                assert_int_equal(keel_set(w, c, fl, &v, NULL, NULL), KEEL_OK);
            }
        }
        e = next;
    }
    for (int k = 0; k < 50; k++)
        assert_int_equal(keel_spawn(w, "new", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
    keel_world_set_name(w, "churned", NULL);
}

static void async_capture_memory_is_reused(void **state)
{
    (void)state;
    assert_int_equal(keel_init(), KEEL_OK);
    keel_world *w = rich_world(2000);
    assert_int_equal(keel__capture_spare_bytes(w), 0); /* nothing kept before the first save */
    size_t wl;
    char *want = dump_now(w, &wl);
    keel_job *job = NULL;
    assert_int_equal(keel_save_async(w, at("r1.yaml"), &job, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
    keel_job_free(job);
    assert_file_is(at("r1.yaml"), want, wl);
    free(want);
    size_t kept = keel__capture_spare_bytes(w);
    assert_true(kept > 0);

    /* the second save reuses that memory (taken while the job holds it, back after), and the file
     * holds the world at the call though the world changes heavily right after it */
    churn(w, 1);
    want = dump_now(w, &wl);
    hold_writes();
    assert_int_equal(keel_save_async(w, at("r2.yaml"), &job, NULL), KEEL_OK);
    assert_int_equal(keel__capture_spare_bytes(w), 0);
    churn(w, 2);
    keel_entity e;
    while ((e = keel_next(w, 0))) assert_int_equal(keel_destroy(w, e, NULL, NULL), KEEL_OK);
    wait_reached();
    open_gate();
    assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
    keel_job_free(job);
    keel__io_set_ops(NULL);
    assert_file_is(at("r2.yaml"), want, wl);
    free(want);
    assert_int_equal(keel__capture_spare_bytes(w), kept);

    /* a world grown past the kept memory: more is added, the file still whole and right */
    keel_world_free(w);
    w = rich_world(300);
    job = NULL;
    assert_int_equal(keel_save_async(w, at("r3.yaml"), &job, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
    keel_job_free(job);
    kept = keel__capture_spare_bytes(w);
    keel_kind_id t = keel_kind_find("core:transform");
    for (int i = 0; i < 30000; i++) {
        assert_int_equal(keel_spawn(w, "grown", KEEL_NO_ENTITY, NULL, &e, NULL, NULL), KEEL_OK);
        assert_int_equal(keel_add(w, e, t, NULL, NULL, NULL, NULL), KEEL_OK);
    }
    want = dump_now(w, &wl);
    assert_int_equal(keel_save_async(w, at("r4.yaml"), &job, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
    keel_job_free(job);
    assert_file_is(at("r4.yaml"), want, wl);
    free(want);
    assert_true(keel__capture_spare_bytes(w) > kept);

    /* a save game from the reused memory equals the synchronous one */
    keel_baseline *base = keel_baseline_capture(w);
    churn(w, 3);
    keel_slot_info info = { .title = "reuse", .saved_at = 7 };
    assert_int_equal(keel_persist_save(w, base, at("sync.save"), &info, NULL), KEEL_OK);
    assert_int_equal(keel_persist_save_async(w, base, at("async.save"), &info, &job, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
    keel_job_free(job);
    size_t la, lb;
    char *a = slurp(at("sync.save"), &la), *b = slurp(at("async.save"), &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    keel_baseline_free(base);
    keel_world_free(w);
    keel_shutdown();
}

/* The world freed (not closed: nothing waits) while its job writes, with and without kept
 * memory: the job writes the world at the call and frees its capture (the sanitizers see leaks
 * and any read of freed memory). */
static void async_world_freed_while_pending(void **state)
{
    (void)state;
    assert_int_equal(keel_init(), KEEL_OK);
    for (int warm = 0; warm < 2; warm++) {
        keel_world *w = rich_world(500);
        keel_job *job = NULL;
        if (warm) { /* a first save leaves memory kept */
            assert_int_equal(keel_save_async(w, at("warm.yaml"), &job, NULL), KEEL_OK);
            assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
            keel_job_free(job);
            assert_true(keel__capture_spare_bytes(w) > 0);
        }
        size_t wl;
        char *want = dump_now(w, &wl);
        hold_writes();
        assert_int_equal(keel_save_async(w, at("freed.yaml"), &job, NULL), KEEL_OK);
        keel_world_free(w);
        wait_reached();
        open_gate();
        assert_int_equal(keel_job_wait(job, NULL), KEEL_OK);
        keel_job_free(job);
        keel__io_set_ops(NULL);
        assert_file_is(at("freed.yaml"), want, wl);
        free(want);
    }
    keel_shutdown();
}

/* Two jobs of one world at once: one gets the kept memory, the other new memory; both files
 * right; afterwards one capture's memory is kept, the other freed (no leak). A world played and
 * stopped keeps its memory too. */
static void async_two_jobs_of_one_world(void **state)
{
    (void)state;
    assert_int_equal(keel_init(), KEEL_OK);
    keel_world *w = rich_world(400);
    keel_job *a = NULL, *b = NULL;
    assert_int_equal(keel_save_async(w, at("one.yaml"), &a, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(a, NULL), KEEL_OK);
    keel_job_free(a);
    size_t kept = keel__capture_spare_bytes(w);
    size_t l1, l2;
    char *w1 = dump_now(w, &l1);
    hold_writes();
    assert_int_equal(keel_save_async(w, at("a.yaml"), &a, NULL), KEEL_OK);
    churn(w, 1);
    char *w2 = dump_now(w, &l2);
    assert_int_equal(keel_save_async(w, at("b.yaml"), &b, NULL), KEEL_OK);
    churn(w, 2);
    open_gate();
    assert_int_equal(keel_job_wait(a, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(b, NULL), KEEL_OK);
    keel__io_set_ops(NULL);
    assert_file_is(at("a.yaml"), w1, l1);
    assert_file_is(at("b.yaml"), w2, l2);
    assert_int_equal(keel__capture_spare_bytes(w), kept); /* the bigger kept, whichever ended first */
    keel_job_free(a);
    keel_job_free(b);
    free(w1);
    free(w2);

    assert_int_equal(keel_world_play(w, NULL), KEEL_OK);
    churn(w, 3);
    assert_int_equal(keel_world_stop(w, NULL), KEEL_OK);
    assert_int_equal(keel__capture_spare_bytes(w), kept);
    w1 = dump_now(w, &l1);
    assert_int_equal(keel_save_async(w, at("stopped.yaml"), &a, NULL), KEEL_OK);
    assert_int_equal(keel_job_wait(a, NULL), KEEL_OK);
    keel_job_free(a);
    assert_file_is(at("stopped.yaml"), w1, l1);
    free(w1);
    keel_world_free(w);
    keel_shutdown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(async_writes_what_the_sync_save_writes),
        cmocka_unit_test(async_file_holds_the_world_at_the_call),
        cmocka_unit_test(async_pending_path_is_refused),
        cmocka_unit_test(async_errors_come_through_the_job),
        cmocka_unit_test(async_close_and_declarations_wait),
        cmocka_unit_test(async_kill_during_saves),
        cmocka_unit_test(async_capture_memory_is_reused),
        cmocka_unit_test(async_world_freed_while_pending),
        cmocka_unit_test(async_two_jobs_of_one_world),
    };
    return KEEL_TEST_RUN(tests, setup, teardown);
}
