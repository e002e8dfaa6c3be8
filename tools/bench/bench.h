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

#endif
