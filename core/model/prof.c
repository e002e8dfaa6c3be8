/* prof.c — the profiled step's per-kind counters (prof.h). */
#define _POSIX_C_SOURCE 200809L
#include "model/prof.h"
#include "base/util.h"
#include "base/vec.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t keel__prof_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
