/* prof.h — the counters a profiled step fills where it runs (game/stats.c owns them and turns
 * them into keel_world_stats' figures). w->prof is NULL while profiling is off, so the step
 * pays one test per run item and nothing else. The clock is read per stretch of one kind's
 * hooks, never per entity: a stretch is what run_phase (or a delivery) hands one kind in a row. */
#ifndef KEEL_PROF_H
#define KEEL_PROF_H

#include "keel.h"

typedef struct keel__prof {
    uint64_t *kind_ns;    /* [kind * KEEL_PHASE_COUNT_ + phase]: this frame's ticks in the hooks */
    uint32_t *kind_calls; /* and their calls */
    uint32_t *touched;    /* the indices above made non-zero this frame (cleared by publishing) */
    size_t touched_count, touched_cap;
    uint32_t kind_cap; /* kinds the arrays hold */
    uint32_t calls;    /* hook calls so far: a stretch's are the difference */
    uint32_t messages, timers, spawned, destroyed, faults;
} keel__prof;

/* One kind's stretch of hooks being timed. */
typedef struct keel__stretch {
    keel_kind_id kind; /* 0: none open */
    uint32_t calls;
    uint64_t t;
} keel__stretch;

/* The profiler's clock, in ticks: the CPU's time-stamp counter where it is invariant (x86: a
 * third of clock_gettime's cost under a hypervisor's clock source, and a stretch may be one hook
 * call long), else CLOCK_MONOTONIC's nanoseconds. keel__prof_calibrate (at the first
 * keel_world_stats_enable) measures the ticks' length; keel__prof_ns converts. */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
extern bool keel__prof_tsc;
uint64_t keel__prof_mono(void);
static inline uint64_t keel__prof_now(void)
{
    return keel__prof_tsc ? __rdtsc() : keel__prof_mono();
}
#else
uint64_t keel__prof_mono(void);
static inline uint64_t keel__prof_now(void)
{
    return keel__prof_mono();
}
#endif
void keel__prof_calibrate(void);
double keel__prof_ns(uint64_t ticks);
void keel__prof_kind_add(keel__prof *p, keel_kind_id k, keel_phase phase, uint64_t ns, uint32_t calls);
void keel__prof_fini(keel__prof *p);

/* Closes s's open stretch (charging its kind) and opens one of kind k (0: none). */
static inline void keel__stretch_to(keel__prof *p, keel__stretch *s, keel_kind_id k, keel_phase phase)
{
    if (s->kind == k) return;
    uint64_t now = keel__prof_now();
    if (s->kind) {
        size_t i = (size_t)s->kind * KEEL_PHASE_COUNT_ + (size_t)phase;
        uint64_t ticks = now - s->t;
        if (s->kind < p->kind_cap && p->kind_ns[i]) { /* touched already this frame: no call */
            p->kind_ns[i] += ticks;
            p->kind_calls[i] += p->calls - s->calls;
        } else {
            keel__prof_kind_add(p, s->kind, phase, ticks, p->calls - s->calls);
        }
    }
    s->kind = k;
    s->t = now;
    s->calls = p->calls;
}

#endif
