/* message.h — the world's message queue: posting (C and bindings), delivery at phase ends. */
#ifndef KEEL_MESSAGE_H
#define KEEL_MESSAGE_H

#include "bind.h"

/* Delivers every queued message (and those the handlers send) in send order, up to
 * KEEL_MESSAGE_MAX_PASS; keel_step calls it at each phase's end and at its start. */
void keel__messages_deliver(keel_world *w);
/* Drops the queue, releasing every payload (the world is freed, or play mode stopped). */
void keel__messages_free(keel_world *w);

#endif
