/* bench.h — what every benchmark program shares: a monotonic clock and the row format
 * tools/bench/run.sh reads ("BENCH<TAB>row<TAB>keel<TAB>baseline<TAB>unit", baseline "-" when none). */
#ifndef KEEL_BENCH_H
#define KEEL_BENCH_H

#include <stdio.h>
#include <time.h>

static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* base < 0: the row has no baseline */
static inline void row(const char *name, double keel, double base, const char *unit)
{
    if (base < 0) printf("BENCH\t%s\t%.2f\t-\t%s\n", name, keel, unit);
    else printf("BENCH\t%s\t%.2f\t%.2f\t%s\n", name, keel, base, unit);
    fflush(stdout);
}

/* A benchmark that builds scenes through the public API defines BENCH_PROG (its name in failure
 * messages) before including this: die() reports a failed call and exits, set() writes one field. */
#ifdef BENCH_PROG
#include <stdlib.h>

#include "keel.h"

static inline void die(const char *what, keel_status s, const keel_diags *d)
{
    char buf[512];
    fprintf(stderr, BENCH_PROG ": %s failed: %s\n", what, keel_status_name(s));
    for (size_t i = 0; d && i < d->count && i < 5; i++)
        fprintf(stderr, "  %s\n", keel_diag_format(&d->items[i], buf, sizeof buf));
    exit(1);
}

static inline void set(keel_world *w, keel_comp c, const char *field, keel_value v)
{
    int f = keel_kind_field(c.kind, field);
    v.type = keel_kind_describe(c.kind)->fields[f].type;
    keel_status s = keel_set(w, c, f, &v, NULL, NULL);
    if (s) die("keel_set", s, NULL);
}
#endif

#endif
