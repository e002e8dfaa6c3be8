/* prof.c — the profiled step's per-kind counters (prof.h). */
#define _POSIX_C_SOURCE 200809L
#include "model/prof.h"
#include "base/util.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t keel__prof_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
bool keel__prof_tsc;
#endif
static double ns_per_tick = 1.0;
static bool calibrated;

void keel__prof_calibrate(void)
{
    if (calibrated) return;
    calibrated = true;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    /* the invariant TSC (CPUID 0x80000007 EDX bit 8): one rate on every core, in every power state */
    if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8))) return;
    /* its rate against the monotonic clock over 2 ms, once per process */
    uint64_t m0 = keel__prof_mono(), t0 = __rdtsc(), m1, t1;
    do {
        m1 = keel__prof_mono();
        t1 = __rdtsc();
    } while (m1 - m0 < 2000000);
    if (t1 <= t0) return;
    ns_per_tick = (double)(m1 - m0) / (double)(t1 - t0);
    keel__prof_tsc = true;
#endif
}

double keel__prof_ns(uint64_t ticks)
{
    return (double)ticks * ns_per_tick;
}

void keel__prof_kind_add(keel__prof *p, keel_kind_id k, keel_phase phase, uint64_t ns, uint32_t calls)
{
    if (k >= p->kind_cap) {
        uint32_t cap = p->kind_cap ? p->kind_cap : 64;
        while (cap <= k) cap *= 2;
        size_t n = (size_t)cap * KEEL_PHASE_COUNT_, old = (size_t)p->kind_cap * KEEL_PHASE_COUNT_;
        p->kind_ns = keel__xrealloc(p->kind_ns, n * sizeof *p->kind_ns);
        p->kind_calls = keel__xrealloc(p->kind_calls, n * sizeof *p->kind_calls);
        memset(p->kind_ns + old, 0, (n - old) * sizeof *p->kind_ns);
        memset(p->kind_calls + old, 0, (n - old) * sizeof *p->kind_calls);
        p->kind_cap = cap;
    }
    size_t i = (size_t)k * KEEL_PHASE_COUNT_ + (size_t)phase;
    if (!p->kind_ns[i] && !p->kind_calls[i]) {
        KEEL__VEC_RESERVE(p->touched, p->touched_count, p->touched_cap, 1, 32);
        p->touched[p->touched_count++] = (uint32_t)i;
    }
    p->kind_ns[i] += ns ? ns : 1; /* never 0 once touched: the touched list stays exact */
    p->kind_calls[i] += calls;
}

void keel__prof_fini(keel__prof *p)
{
    free(p->kind_ns);
    free(p->kind_calls);
    free(p->touched);
    memset(p, 0, sizeof *p);
}
