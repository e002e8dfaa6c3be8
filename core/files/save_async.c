/* save_async.c — saves taken off the frame (design/saving.md): the caller's thread captures the
 * committed world (keel__capture_take: the records copied into memory the world keeps between
 * saves, nothing encoded, no I/O) and a POSIX
 * thread encodes the copy and writes it through the same atomic path as the synchronous saves.
 *
 * After the capture the worker touches nothing the world owns: it reads its own copy, the kind
 * registry (pinned: declarations wait, kinds_pin.c), and a baseline whose count it holds. Every
 * job's state is guarded by one mutex; a job is freed by whichever of its handle and its worker
 * lets go last. Paths with a job pending are listed, so a second save there is refused. */
#include "base/util.h"
#include "files/save.h"
#include "files/save_async.h"
#include "files/slotfile.h"
#include "model/capture.h"
#include "model/kinds_pin.h"
#include "model/world.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct keel_job {
    char *path;          /* as given */
    char *key;           /* the path the pending list compares (its folder resolved) */
    const void *owner;   /* the world it was taken from: compared, never followed */
    keel__capture *copy; /* the capture; the worker hands it back (capture.c) */
    keel_baseline *base; /* persist jobs: retained */
    keel_slot_info info;
    bool finished;
    keel_status status;
    keel_diags diags;
    int refs; /* the handle and the worker */
    struct keel_job *next_pending;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static keel_job *pending; /* unfinished jobs, newest first */
static unsigned running;  /* worker threads not yet returned (the exit waits for them too) */

/* The folder resolved (symlinks, "..") and the name kept: two spellings of one file are one key.
 * A folder that does not resolve keeps the path as given (the save fails there anyway). */
static char *path_key(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? keel__strfmt("%.*s", (int)(slash == path ? 1 : slash - path), path) : keel__strdup(".");
    char buf[PATH_MAX];
    char *key = realpath(dir, buf) ? keel__strfmt("%s/%s", buf, slash ? slash + 1 : path) : keel__strdup(path);
    free(dir);
    return key;
}

static bool pending_locked(const char *key)
{
    for (keel_job *j = pending; j; j = j->next_pending)
        if (strcmp(j->key, key) == 0) return true;
    return false;
}

bool keel__job_path_pending(const char *path)
{
    if (!path) return false;
    char *key = path_key(path);
    pthread_mutex_lock(&mu);
    bool found = pending_locked(key);
    pthread_mutex_unlock(&mu);
    free(key);
    return found;
}

static void job_destroy(keel_job *j)
{
    free(j->path);
    free(j->key);
    keel_slot_info_free(&j->info);
    keel_diags_free(&j->diags);
    free(j);
}

/* Drops one reference; mu held. Returns the job to destroy (outside the lock) or NULL. */
static keel_job *release_locked(keel_job *j)
{
    return --j->refs == 0 ? j : NULL;
}

static void *work(void *arg)
{
    keel_job *j = arg;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s;
    if (j->base) {
        keel__buf state = { 0 };
        keel__persist_encode(keel__capture_world(j->copy), j->base, &state);
        s = keel__slot_write(j->path, &j->info, &state, &d);
        free(state.p);
    } else {
        char *text = NULL;
        size_t len = 0;
        s = keel_scene_dump(keel__capture_world(j->copy), &text, &len, &d);
        if (s == KEEL_OK) s = keel_write_atomic(j->path, text, len, &d);
        free(text);
    }
    keel__capture_done(j->copy);
    keel_baseline_free(j->base);
    j->copy = NULL;
    j->base = NULL;
    pthread_mutex_lock(&mu);
    j->status = s;
    j->diags = d;
    j->finished = true;
    for (keel_job **p = &pending; *p; p = &(*p)->next_pending)
        if (*p == j) {
            *p = j->next_pending;
            break;
        }
    pthread_cond_broadcast(&cv);
    keel_job *dead = release_locked(j);
    pthread_mutex_unlock(&mu);
    /* last: a declaration that waited for this job finds it done (and the discard above read
     * the layouts it may change) */
    keel__kinds_unpin();
    if (dead) job_destroy(dead);
    pthread_mutex_lock(&mu);
    running--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    return NULL;
}

/* Jobs still writing when the program exits finish first: an autosave is never cut off by a
 * return from main. */
static void wait_all(void)
{
    pthread_mutex_lock(&mu);
    while (pending || running) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}
static void register_exit(void)
{
    atexit(wait_all);
}

static keel_status refuse(const keel_world *w, const char *what, const char *path, keel_diags *d)
{
    if (!w || !path) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "%s: NULL argument", what);
    if (keel_world_in_callback(w)) /* the state may still roll back */
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s refuses while a callback transaction is open", what);
    if (keel_world_lift_count(w))
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                          "%s refuses while entities are lifted (restore or discard them)", what);
    return KEEL_OK;
}

/* Captures w, registers the path (refused when a job there is pending) and starts the worker. */
static keel_status start(const keel_world *w, const char *path, keel_baseline *base, const keel_slot_info *info,
                         keel_job **out, keel_diags *d)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_exit);
    keel_job *j = keel__xcalloc(1, sizeof *j);
    j->path = keel__strdup(path);
    j->key = path_key(path);
    j->owner = w;
    j->refs = 2;
    j->base = base;
    if (info) {
        j->info.title = keel__strdup(info->title ? info->title : "");
        j->info.saved_at = info->saved_at;
        j->info.play_seconds = info->play_seconds;
        j->info.fields = info->fields ? keel_node_copy(info->fields) : NULL;
    }
    if (base && !j->info.saved_at)
        j->info.saved_at = (int64_t)time(NULL); /* the time of the call, not of the write */
    pthread_mutex_lock(&mu);
    if (pending_locked(j->key)) {
        pthread_mutex_unlock(&mu);
        keel_status s = KEEL_ERROR(d, KEEL_INVALID_OPERATION, "", "%s has a save job still pending", path);
        keel_baseline_free(base);
        job_destroy(j);
        return s;
    }
    j->next_pending = pending;
    pending = j;
    running++;
    pthread_mutex_unlock(&mu);
    keel__kinds_pin();
    j->copy = keel__capture_take(w);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int e = pthread_create(&t, &attr, work, j);
    pthread_attr_destroy(&attr);
    if (e != 0) { /* no thread: the job fails as a write would, through done() */
        keel_diags fail;
        keel_diags_init(&fail);
        KEEL_ERROR(&fail, KEEL_IO_ERROR, "", "cannot start a save thread: %s", strerror(e));
        keel__capture_done(j->copy);
        keel_baseline_free(j->base);
        j->copy = NULL;
        j->base = NULL;
        keel__kinds_unpin();
        pthread_mutex_lock(&mu);
        j->status = KEEL_IO_ERROR;
        j->diags = fail;
        j->finished = true;
        for (keel_job **p = &pending; *p; p = &(*p)->next_pending)
            if (*p == j) {
                *p = j->next_pending;
                break;
            }
        j->refs--;
        running--;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
    *out = j;
    return KEEL_OK;
}

keel_status keel_save_async(const keel_world *w, const char *path, keel_job **out, keel_diags *d)
{
    if (!out) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_save_async: NULL out");
    *out = NULL;
    keel_status s = refuse(w, "keel_save_async", path, d);
    if (s) return s;
    return start(w, path, NULL, NULL, out, d);
}

keel_status keel_persist_save_async(const keel_world *w, const keel_baseline *base, const char *path,
                                    const keel_slot_info *info, keel_job **out, keel_diags *d)
{
    if (!out) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_save_async: NULL out");
    *out = NULL;
    if (!base) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_persist_save_async: NULL argument");
    keel_status s = refuse(w, "keel_persist_save_async", path, d);
    if (s) return s;
    if (!keel_uuid_equal(keel_world_uuid(w), keel__baseline_scene(base))) {
        char a[37], b[37];
        keel_uuid_format(keel__baseline_scene(base), a);
        keel_uuid_format(keel_world_uuid(w), b);
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "the baseline is of scene %s, the world is scene %s", a, b);
    }
    /* the details are checked here, as keel_persist_save checks them before writing */
    s = keel__slot_info_check(info, d);
    if (s) return s;
    return start(w, path, keel__baseline_retain(base), info, out, d);
}

/* A copy of the job's diagnostics into d (each done() or wait() gets them all). */
static void copy_diags(const keel_diags *src, keel_diags *d)
{
    for (size_t i = 0; d && i < src->count; i++) {
        const keel_diag *g = &src->items[i];
        keel_diag_add(d, g->severity, g->code, g->path, g->file, g->line, g->col, "%s", g->message);
    }
}

bool keel_job_done(keel_job *j, keel_status *status, keel_diags *d)
{
    if (!j) {
        if (status) *status = KEEL_INVALID_ARGUMENT;
        return true;
    }
    pthread_mutex_lock(&mu);
    bool done = j->finished;
    if (done) {
        if (status) *status = j->status;
        copy_diags(&j->diags, d);
    }
    pthread_mutex_unlock(&mu);
    return done;
}

keel_status keel_job_wait(keel_job *j, keel_diags *d)
{
    if (!j) return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_job_wait: NULL job");
    pthread_mutex_lock(&mu);
    while (!j->finished) pthread_cond_wait(&cv, &mu);
    keel_status s = j->status;
    copy_diags(&j->diags, d);
    pthread_mutex_unlock(&mu);
    return s;
}

const char *keel_job_path(const keel_job *j)
{
    return j ? j->path : NULL;
}

void keel_job_free(keel_job *j)
{
    if (!j) return;
    pthread_mutex_lock(&mu);
    keel_job *dead = release_locked(j); /* still writing: the worker frees it when done */
    pthread_mutex_unlock(&mu);
    if (dead) job_destroy(dead);
}

void keel_jobs_wait(const keel_world *w)
{
    pthread_mutex_lock(&mu);
    for (;;) {
        bool any = false;
        for (keel_job *j = pending; j && !any; j = j->next_pending) any = !w || j->owner == w;
        if (!any) break;
        pthread_cond_wait(&cv, &mu);
    }
    pthread_mutex_unlock(&mu);
}
