/* kinds_pin.h — the kind registry held still while a save job's worker reads it (kinds_pin.c). */
#ifndef KEEL_KINDS_PIN_H
#define KEEL_KINDS_PIN_H

/* One more worker reads kind descriptions and layouts: declarations wait until it is done. Any
 * thread may pin or unpin; a pin taken on the caller's thread may be released by the worker. */
void keel__kinds_pin(void);
void keel__kinds_unpin(void);
/* Blocks until no pin is held (keel_kind_declare and keel_shutdown call it first). */
void keel__kinds_quiesce(void);

#endif
