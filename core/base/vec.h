/* vec.h — the one growable array: a pointer, a count and a capacity grown by doubling. */
#ifndef KEEL_VEC_H
#define KEEL_VEC_H

#include <stddef.h>

/* Returns items grown so it holds at least `need` elements of `size` bytes, *cap updated:
 * doubles from `first` (or from need if larger), aborts on OOM or size overflow as keel__xrealloc does. */
void *keel__vec_grow(void *items, size_t *cap, size_t need, size_t size, size_t first);

/* The same for the macros below, one per unsigned capacity type (the cap never passes its type's
 * maximum): room for count + n elements, aborting if that sum overflows. */
void *keel__vec_grow_u(void *items, unsigned *cap, size_t count, size_t n, size_t size, size_t first);
void *keel__vec_grow_ul(void *items, unsigned long *cap, size_t count, size_t n, size_t size, size_t first);
void *keel__vec_grow_ull(void *items, unsigned long long *cap, size_t count, size_t n, size_t size,
                         size_t first);
/* A signed or narrow capacity is a compile error here, not a silent truncation. */
#define KEEL__VEC_GROW_FN(cap)                                                                   \
    _Generic((cap), unsigned: keel__vec_grow_u, unsigned long: keel__vec_grow_ul,                 \
             unsigned long long: keel__vec_grow_ull)

/* Room for n more elements after `count` (count <= cap); cap may be any unsigned integer lvalue
 * (uint32_t or size_t). An expression; its arguments are evaluated more than once, so pass plain
 * lvalues. The fast path (room already) is one compare, inline: n == 1 compiles to count == cap. */
#define KEEL__VEC_RESERVE(items, count, cap, n, first)                                           \
    ((size_t)(n) > (size_t)(cap) - (size_t)(count)                                               \
         ? (void)((items) = KEEL__VEC_GROW_FN(cap)((items), &(cap), (size_t)(count), (size_t)(n), \
                                                   sizeof *(items), (first)))                    \
         : (void)0)

/* Reserves one and yields &items[count++]: `*KEEL__VEC_PUSH_SLOT(v, n, cap, 16) = x;`. */
#define KEEL__VEC_PUSH_SLOT(items, count, cap, first)                                            \
    (KEEL__VEC_RESERVE(items, count, cap, 1, first), &(items)[(count)++])

#endif
