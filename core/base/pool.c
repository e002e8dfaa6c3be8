/* pool.c — an array of elements with freed indices reused (pool.h). */
#include "base/pool.h"

#include "base/util.h"

#include <stdlib.h>
#include <string.h>

uint32_t keel__pool_take(keel__pool *p, size_t size)
{
    uint32_t i;
    if (p->nfree) i = p->free[--p->nfree];
    else {
        if (p->n == p->cap) {
            p->cap = p->cap ? p->cap * 2 : 256;
            p->items = keel__xrealloc(p->items, p->cap * size);
            p->free = keel__xrealloc(p->free, p->cap * sizeof *p->free);
        }
        i = p->n++;
    }
    memset((unsigned char *)p->items + (size_t)i * size, 0, size);
    return i;
}

void keel__pool_give(keel__pool *p, uint32_t i)
{
    p->free[p->nfree++] = i;
}

void keel__pool_free(keel__pool *p)
{
    free(p->items);
    free(p->free);
    memset(p, 0, sizeof *p);
}
