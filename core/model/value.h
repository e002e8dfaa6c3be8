/* value.h — the per-type table of field values (see value.c). */
#ifndef KEEL_VALUE_H
#define KEEL_VALUE_H

#include "keel.h"

/* Checks v against field f, converting it in place where keel_field_check documents a
 * conversion; InvalidArgument or LimitExceeded in d when it cannot be stored. */
keel_status keel__value_check(const keel_field_desc *f, keel_value *v, keel_diags *d);
/* What keel__value_from_node found wrong: a diagnostic to report at node `at`, its message
 * `fmt` with the two strings a and b for its two %s. */
typedef struct keel__value_problem {
    bool set;
    keel_severity sev;
    keel_status code;
    const keel_node *at;
    const char *fmt;
    char a[128], b[96];
} keel__value_problem;
/* Reads body node n as a value of f's type (before keel__value_check's range checks; strings
 * borrowed from n). An enum name that is not a choice is an error when `strict`, else a warning
 * with *keep_default set and KEEL_OK. Anything reported is in pb (pb->set). */
keel_status keel__value_from_node(const keel_field_desc *f, const keel_node *n, bool strict, keel_value *v,
                                  bool *keep_default, keel__value_problem *pb);
/* Stores checked v into a record's bytes at p (strings duplicated, the old one freed). */
void keel__value_store(const keel_field_desc *f, unsigned char *p, const keel_value *v);
/* Loads the value at p (strings borrowed from the record). */
void keel__value_load(const keel_field_desc *f, const unsigned char *p, keel_value *out);
/* Typed equality: floats bit for bit, strings by content, nil references equal. */
bool keel__value_equal(const keel_value *a, const keel_value *b);
/* What a sink is told a value is: plain text (bool, int, null), a number (a float, each item of
 * a vector, between seq_start and seq_end), or text the writer quotes as it must. */
typedef enum { KEEL__TEXT_STRING, KEEL__TEXT_CHOICE, KEEL__TEXT_UUID } keel__text_kind;
typedef struct keel__value_sink {
    void (*plain)(void *ctx, const char *text);
    void (*number)(void *ctx, double x);
    void (*text)(void *ctx, const char *s, keel__text_kind kind);
    void (*seq_start)(void *ctx);
    void (*seq_end)(void *ctx);
} keel__value_sink;
/* Emits value v of type t (`choice`: an enum's choice name) to sink s: the one switch that
 * turns values into text, whatever form the text takes. */
void keel__value_emit(keel_type t, const keel_value *v, const char *choice, const keel__value_sink *s, void *ctx);
/* The value as a body node of type t (`choice`: an enum's choice name). `quote_text`: strings
 * double-quoted and choices plain, as typed text; else both left to the writer (canonical). */
keel_node *keel__value_node(keel_type t, const keel_value *v, const char *choice, bool quote_text);
/* The name of choice i of enum field f (the first choice when i is out of range). */
const char *keel__value_choice(const keel_field_desc *f, int64_t i);

#endif
