/* pool.h — one growable array of elements of one type whose freed indices are reused (a free
 * list of indices beside it), so an element keeps its index for its life: other tables may
 * hold that index instead of a pointer. The items may move when it grows: the owner keeps a
 * typed view of `items` and refreshes it after keel__pool_take. */
#ifndef KEEL_POOL_H
#define KEEL_POOL_H

#include <stddef.h>
#include <stdint.h>

typedef struct keel__pool {
    void *items;
    uint32_t n, cap, *free, nfree; /* n: indices ever handed out (0..n-1), live or freed */
} keel__pool;

/* A zeroed element's index (items may move). */
uint32_t keel__pool_take(keel__pool *p, size_t size);
/* i is free for the next take (the caller cleared what it owned). */
void keel__pool_give(keel__pool *p, uint32_t i);
void keel__pool_free(keel__pool *p); /* leaves it empty and usable */

#endif
