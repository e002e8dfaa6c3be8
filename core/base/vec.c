/* vec.c — the growable array's slow path: a new capacity and the realloc. */
#include "base/vec.h"
#include "base/util.h"

#include <limits.h>
#include <stdint.h>

/* The next capacity from cap for need elements, never past max: doubling keeps growth amortised. */
static void *grow(void *items, size_t cap, size_t need, size_t size, size_t first, size_t max,
                  size_t *out)
{
    *out = cap;
    if (need <= cap) return items;
    if (need > max || need > SIZE_MAX / size) keel__oom();
    size_t c = !cap ? first : cap > max / 2 ? max : cap * 2;
    if (c < need) c = need;
    if (c > max) c = max;
    if (c > SIZE_MAX / size) c = SIZE_MAX / size; /* still >= need */
    *out = c;
    return keel__xrealloc(items, c * size);
}

void *keel__vec_grow(void *items, size_t *cap, size_t need, size_t size, size_t first)
{
    return grow(items, *cap, need, size, first, SIZE_MAX, cap);
}

static size_t sum(size_t count, size_t n)
{
    if (n > SIZE_MAX - count) keel__oom();
    return count + n;
}

void *keel__vec_grow_u(void *items, unsigned *cap, size_t count, size_t n, size_t size, size_t first)
{
    size_t c;
    items = grow(items, *cap, sum(count, n), size, first, UINT_MAX, &c);
    *cap = (unsigned)c;
    return items;
}

void *keel__vec_grow_ul(void *items, unsigned long *cap, size_t count, size_t n, size_t size, size_t first)
{
    size_t c;
    items = grow(items, *cap, sum(count, n), size, first, ULONG_MAX < SIZE_MAX ? ULONG_MAX : SIZE_MAX, &c);
    *cap = (unsigned long)c;
    return items;
}

void *keel__vec_grow_ull(void *items, unsigned long long *cap, size_t count, size_t n, size_t size,
                         size_t first)
{
    size_t c;
    items = grow(items, (size_t)*cap, sum(count, n), size, first, SIZE_MAX, &c);
    *cap = c;
    return items;
}
