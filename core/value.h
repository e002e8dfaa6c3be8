/* value.h — the per-type table of field values (see value.c). */
#ifndef KEEL_VALUE_H
#define KEEL_VALUE_H

#include "keel.h"

/* Checks v against field f, converting it in place where keel_field_check documents a
 * conversion; InvalidArgument or LimitExceeded in d when it cannot be stored. */
keel_status keel__value_check(const keel_field_desc *f, keel_value *v, keel_diags *d);
/* Stores checked v into a record's bytes at p (strings duplicated, the old one freed). */
void keel__value_store(const keel_field_desc *f, unsigned char *p, const keel_value *v);
/* Loads the value at p (strings borrowed from the record). */
void keel__value_load(const keel_field_desc *f, const unsigned char *p, keel_value *out);
/* Typed equality: floats bit for bit, strings by content, nil references equal. */
bool keel__value_equal(const keel_value *a, const keel_value *b);
/* The value as a body node of type t (`choice`: an enum's choice name). `quote_text`: strings
 * double-quoted and choices plain, as typed text; else both left to the writer (canonical). */
keel_node *keel__value_node(keel_type t, const keel_value *v, const char *choice, bool quote_text);
/* The name of choice i of enum field f (the first choice when i is out of range). */
const char *keel__value_choice(const keel_field_desc *f, int64_t i);

#endif
