/* kinds_pin.c — the registry is process-wide and changed only on the caller's thread, but a save
 * job's worker encodes its captured world by the kinds' descriptions and layouts: a declaration
 * (which may move or free them) waits until every pinned job is done. */
#include "model/kinds_pin.h"

#include <pthread.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static unsigned pins;

void keel__kinds_pin(void)
{
    pthread_mutex_lock(&mu);
    pins++;
    pthread_mutex_unlock(&mu);
}

void keel__kinds_unpin(void)
{
    pthread_mutex_lock(&mu);
    if (pins && --pins == 0) pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

void keel__kinds_quiesce(void)
{
    pthread_mutex_lock(&mu);
    while (pins) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}
