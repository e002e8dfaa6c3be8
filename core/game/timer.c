/* timer.c — timers on world time: made, cancelled, fired in due order as transactions at the
 * start of the update phase. Kept in one array sorted by id (ids only grow); a firing pass
 * sorts the due ones, so a step costs O(n) plus O(k log k) for k due timers. */
#include "model/world.h"
#include "base/vec.h"
#include "model/prof.h"
#include "bind.h"
#include "game/record.h"

#include <math.h>
#include <stdlib.h>

typedef struct keel__timer {
    double due, period; /* period 0: once */
    keel_timer_id id;   /* ids only grow (process-wide): also the creation order */
    keel_entity owner;
    keel_timer_fn fn; /* NULL: ended, its slot waits for compaction */
    void (*release)(void *user);
    void *user;
    bool firing, cancelled; /* its callback runs; cancelled meanwhile (released after it) */
    bool failed;            /* its last call failed: it ends */
} keel__timer;

/* A world's timers: sorted by id, ended ones compacted away after each firing pass. */
typedef struct keel__timers {
    keel__timer *items;
    size_t count, cap, ended;
    bool firing;
} keel__timers;

static keel_timer_id g_next_id; /* process-wide: a stale id never names a newer timer */

static void timers_fire(keel_world *w, void *state, keel_phase phase, double dt);
static void timers_end_all(keel_world *w, void *state);
static void timers_free(keel_world *w, void *state);
static const keel__ext_type timers_ext = {
    .name = "timers", .order = 0, .phase_begin = timers_fire, .stop = timers_end_all, .free = timers_free
};

static keel__timers *timers_of(const keel_world *w)
{
    return keel__ext_get(w, &timers_ext);
}

/* The live timer with this id (binary search: the array is sorted by id), or NULL. */
static keel__timer *timer_find(const keel_world *w, keel_timer_id id)
{
    keel__timers *ts = timers_of(w);
    if (!ts) return NULL;
    size_t lo = 0, hi = ts->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ts->items[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    if (lo == ts->count || ts->items[lo].id != id || !ts->items[lo].fn) return NULL;
    return &ts->items[lo];
}

/* Ends it: its slot stays (ids keep their order) until compaction; release runs last. */
static void timer_end(keel_world *w, keel__timer *t)
{
    keel__timers *ts = timers_of(w);
    void (*release)(void *) = t->release;
    void *user = t->user;
    t->fn = NULL;
    t->release = NULL;
    ts->ended++;
    if (release) release(user); /* may make timers: t is not used after this */
}

static void timers_compact(keel__timers *ts)
{
    size_t n = 0;
    for (size_t i = 0; i < ts->count; i++)
        if (ts->items[i].fn) ts->items[n++] = ts->items[i];
    ts->count = n;
    ts->ended = 0;
}

/* 1: the owner is alive (or there is none); 0: it is gone (destroyed, transferred, stale);
 * -1: lifted out of play (not gone: the timer waits for its restore). */
static int owner_state(const keel_world *w, keel_entity e)
{
    if (!e) return 1;
    uint32_t i = (uint32_t)e;
    if (i >= w->ent_count || keel__ent_gen(w, &w->ents[i]) != (uint32_t)(e >> 32)) return 0;
    if (w->ents[i].alive) return 1;
    return keel__lifted(w, i) ? -1 : 0;
}

keel_status keel_timer_add(keel_world *w, const keel_timer_desc *desc, keel_timer_id *id, keel_diags *d)
{
    if (id) *id = 0;
    if (!w || !desc || !desc->fn)
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "keel_timer_add: NULL world, desc or fn");
    if (w->frozen) return keel__refuse_frozen(d);
    if (keel__input_wanted(w) && desc->fn != keel__msg_timer_fire) /* no file holds its function */
        return KEEL_ERROR(d, KEEL_INVALID_OPERATION, "",
                          "the world is recording: a timer made from outside a step holds a function a recording "
                          "cannot replay (make it in a hook or a system, or close the recording first)");
    double s = desc->seconds;
    if (!isfinite(s) || s < 0 || (desc->repeat && s == 0))
        return KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "seconds must be a finite number %s 0",
                          desc->repeat ? ">" : ">=");
    if (desc->owner && owner_state(w, desc->owner) != 1)
        return KEEL_ERROR(d, KEEL_NOT_FOUND, "", "a timer's owner must be a live entity of its world");
    keel__timers *ts = timers_of(w);
    if (!ts) {
        ts = keel__xcalloc(1, sizeof *ts);
        keel__ext_add(w, &timers_ext, ts);
    }
    if (ts->count == ts->cap) {
        if (ts->ended && !ts->firing) timers_compact(ts);
        KEEL__VEC_RESERVE(ts->items, ts->count, ts->cap, 1, 16);
    }
    keel__timer *t = &ts->items[ts->count++];
    *t = (keel__timer){ .due = w->time + s,
                        .period = desc->repeat ? s : 0,
                        .id = ++g_next_id,
                        .owner = desc->owner,
                        .fn = desc->fn,
                        .release = desc->release,
                        .user = desc->user };
    if (id) *id = t->id;
    return KEEL_OK;
}

keel_status keel_timer_after(keel_world *w, double seconds, keel_entity owner, keel_timer_fn fn, void *user,
                             keel_timer_id *id, keel_diags *d)
{
    keel_timer_desc desc = { .seconds = seconds, .owner = owner, .fn = fn, .user = user };
    return keel_timer_add(w, &desc, id, d);
}

keel_status keel_timer_every(keel_world *w, double seconds, keel_entity owner, keel_timer_fn fn, void *user,
                             keel_timer_id *id, keel_diags *d)
{
    keel_timer_desc desc = { .seconds = seconds, .repeat = true, .owner = owner, .fn = fn, .user = user };
    return keel_timer_add(w, &desc, id, d);
}

/* A timer whose owner went counts as ended as soon as anyone asks. */
static keel__timer *timer_live(keel_world *w, keel_timer_id id)
{
    keel__timer *t = w ? timer_find(w, id) : NULL;
    if (!t || t->cancelled) return NULL;
    if (!t->firing && owner_state(w, t->owner) == 0) {
        timer_end(w, t);
        return NULL;
    }
    return t;
}

keel_status keel_timer_cancel(keel_world *w, keel_timer_id id)
{
    keel__timer *t = timer_live(w, id);
    if (!t) return KEEL_NOT_FOUND;
    keel__buf *in = keel__input_wanted(w) ? keel__recorder_input(w) : NULL;
    if (in) { /* by its place among the live timers: a replay makes the same ones, other ids */
        keel__buf_u8(in, KEEL__IN_TIMER_CANCEL);
        keel__buf_u64(in, keel__timer_ordinal(w, id));
    }
    if (t->firing) t->cancelled = true; /* its callback runs: released once it returns */
    else timer_end(w, t);
    return KEEL_OK;
}

keel_status keel_timer_remaining(const keel_world *w, keel_timer_id id, double *seconds)
{
    keel__timer *t = timer_live((keel_world *)w, id);
    if (!t) return KEEL_NOT_FOUND;
    if (seconds) *seconds = t->firing || t->due <= w->time ? 0 : t->due - w->time;
    return KEEL_OK;
}

size_t keel_timer_count(const keel_world *w)
{
    const keel__timers *ts = w ? timers_of(w) : NULL;
    return ts ? ts->count - ts->ended : 0;
}
double keel_world_time(const keel_world *w)
{
    return w ? w->time : 0;
}

typedef struct due_item {
    double due;
    keel_timer_id id;
    size_t at; /* its index when the list was made: the array only grows while firing */
} due_item;

static int due_cmp(const void *a, const void *b)
{
    const due_item *x = a, *y = b;
    if (x->due != y->due) return x->due < y->due ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* One call as a transaction; a failure is recorded with the timer's id (and ends the timer, as a
 * fault stops a component's hooks: a repeating failure does not fill the faults). */
static bool timer_call(keel_world *w, keel__timer *t)
{
    keel_timer_call call = { w, t->owner, t->id, t->user, NULL };
    keel_timer_fn fn = t->fn;
    if (w->prof) w->prof->timers++;
    keel__hook_txn txn;
    keel__callback_open(w, &txn);
    call.diags = &txn.diags;
    keel_status st = fn(&call); /* may grow the array: t is stale after this */
    keel__callback_close(w, &txn, st);
    if (st != KEEL_OK) {
        keel_entity owner = call.owner ? call.owner : keel_world_root(w);
        keel_uuid u = owner_state(w, owner) == 1 ? w->ents[(uint32_t)owner].uuid : w->ents[0].uuid;
        keel__fault_timer(w, u, call.id, &txn.diags);
    }
    if (txn.diags.items) keel_diags_free(&txn.diags);
    return st == KEEL_OK;
}

/* The live timer with this id at index `at` (no compaction runs while firing: indexes hold). */
static keel__timer *timer_at(keel__timers *ts, size_t at, keel_timer_id id)
{
    keel__timer *t = at < ts->count ? &ts->items[at] : NULL;
    return t && t->id == id && t->fn ? t : NULL;
}

/* As update begins (keel_step moved the world time already). */
static void timers_fire(keel_world *w, void *state, keel_phase phase, double dt)
{
    keel__timers *ts = state;
    if (phase != KEEL_PHASE_UPDATE || ts->count == ts->ended) return;
    size_t n = 0, count = ts->count; /* one a release makes now waits for the next step */
    due_item *due = keel__xrealloc(NULL, count * sizeof *due);
    for (size_t i = 0; i < count; i++) {
        keel__timer *t = &ts->items[i];
        if (!t->fn) continue;
        int os = owner_state(w, t->owner);
        if (os == 0) timer_end(w, t);
        else if (os == 1 && t->due <= w->time) {
            due[n++] = (due_item){ t->due, t->id, i };
        }
    }
    /* made in id order: already in firing order when the dues do not go down (timers made in one
     * frame with one delay, the common case), so the sort is only paid for when needed */
    bool sorted = true;
    for (size_t k = 1; k < n && sorted; k++) sorted = due[k - 1].due <= due[k].due;
    if (!sorted) qsort(due, n, sizeof *due, due_cmp);
    ts->firing = true;
    for (size_t k = 0; k < n; k++) {
        keel__timer *t = timer_at(ts, due[k].at, due[k].id);
        if (!t || owner_state(w, t->owner) != 1) continue; /* cancelled, or its owner went, meanwhile */
        t->firing = true;
        bool ok = timer_call(w, t);
        t = timer_at(ts, due[k].at, due[k].id);
        if (!t) continue;
        t->firing = false;
        t->failed = !ok;
        if (t->cancelled || t->period == 0 || t->failed) {
            timer_end(w, t);
            continue;
        }
        t->due += t->period;
        if (t->due <= w->time) t->due += (floor((w->time - t->due) / t->period) + 1) * t->period;
        if (t->due <= w->time) t->due = w->time + t->period; /* rounding */
    }
    ts->firing = false;
    free(due);
    if (ts->ended) timers_compact(ts);
}

/* Every timer ends, each released (play mode's stop: those of the played world). */
static void timers_end_all(keel_world *w, void *state)
{
    keel__timers *ts = state;
    ts->firing = true; /* a release that makes a timer must not move the array */
    for (size_t i = 0; i < ts->count; i++)
        if (ts->items[i].fn) timer_end(w, &ts->items[i]);
    ts->count = ts->ended = 0;
    ts->firing = false;
}

static void timers_free(keel_world *w, void *state)
{
    keel__timers *ts = state;
    timers_end_all(w, ts);
    free(ts->items);
    free(ts);
}

/* ---- for recordings (game/record_input.c): the live timers in id order ---- */

/* Live: not ended, not cancelled, its owner not gone (one lifted counts: it waits). */
static bool counts(const keel_world *w, const keel__timer *t)
{
    return t->fn && !t->cancelled && owner_state(w, t->owner) != 0;
}

void keel__timers_each(const keel_world *w, void (*cb)(void *ud, const keel__timer_info *t), void *ud)
{
    const keel__timers *ts = timers_of(w);
    for (size_t i = 0; ts && i < ts->count; i++) {
        const keel__timer *t = &ts->items[i];
        if (!counts(w, t)) continue;
        keel__timer_info info = { t->id, t->due, t->period, t->owner, t->fn, t->user };
        cb(ud, &info);
    }
}

uint64_t keel__timer_ordinal(const keel_world *w, keel_timer_id id)
{
    const keel__timers *ts = timers_of(w);
    uint64_t n = 0;
    for (size_t i = 0; ts && i < ts->count; i++) {
        if (!counts(w, &ts->items[i])) continue;
        if (ts->items[i].id == id) return n;
        n++;
    }
    return UINT64_MAX;
}

keel_timer_id keel__timer_nth(const keel_world *w, uint64_t n)
{
    const keel__timers *ts = timers_of(w);
    for (size_t i = 0; ts && i < ts->count; i++) {
        if (!counts(w, &ts->items[i])) continue;
        if (n-- == 0) return ts->items[i].id;
    }
    return 0;
}

keel_status keel__timer_add_due(keel_world *w, double due, double period, const keel_timer_desc *desc,
                                keel_timer_id *id, keel_diags *d)
{
    keel_timer_desc once = *desc;
    once.seconds = 0;
    once.repeat = false;
    keel_status st = keel_timer_add(w, &once, id, d);
    if (st != KEEL_OK) return st;
    keel__timers *ts = timers_of(w);
    keel__timer *t = &ts->items[ts->count - 1]; /* the newest: ids only grow */
    t->due = due;
    t->period = period > 0 ? period : 0;
    return KEEL_OK;
}
