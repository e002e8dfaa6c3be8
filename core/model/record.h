/* record.h — a kind's record layout and its records (the bytes a component's fields live in). */
#ifndef KEEL_RECORD_H
#define KEEL_RECORD_H

#include "keel.h"

/* A kind's record layout: field offsets, size and a record of its declared defaults. */
typedef struct keel__layout {
    size_t *offsets;         /* per field */
    size_t size;             /* record size, a multiple of 8, at least 8 */
    unsigned char *defaults; /* a record of the declared defaults, strings NULL: spawning copies it */
    bool has_strings;        /* records own heap strings (init, fini and copy have work to do) */
    size_t body_most;        /* the saved body's size (keel__body_size) with every number and UUID at its
                              * longest text and every string empty: strings add their length */
    bool has_derived;        /* some field has get/set: its record slot (after every stored field) holds
                              * get's value as of the last write, refreshed by keel__record_derive */
    bool body_bounded;       /* no record of it can make a body past the load limit (no strings, and
                              * body_most within it): writes need no size check */
} keel__layout;
/* (Re)computes L for description d (L zeroed or built before). */
void keel__layout_build(const keel_kind_desc *d, keel__layout *L);
void keel__layout_free(keel__layout *L);

/* Offset of field `field` / total record size under a description's layout
 * (declared order, 8-byte aligned; the size is at least 8). Lets a world read
 * records laid out by a description that has since been replaced. */
size_t keel__layout_offset(const keel_kind_desc *d, int field);
size_t keel__layout_size(const keel_kind_desc *d);
/* Fills a fresh record with the kind's declared defaults. */
void keel__record_init(keel_kind_id k, void *record);
/* Frees what a record owns (strings). Leaves it zeroed. */
void keel__record_fini(keel_kind_id k, void *record);
/* keel__record_fini for a record laid out by `d` (e.g. the old desc during relayout). */
void keel__desc_record_fini(const keel_kind_desc *d, void *record);
/* Deep copy (strings duplicated); dst must not hold a live record. */
void keel__record_copy(keel_kind_id k, void *dst, const void *src);
/* Reads field `f` of `record` as a value (strings borrowed). */
void keel__record_get(keel_kind_id k, const void *record, int f, keel_value *out);
/* Stores a checked value into field `f` (duplicating strings, freeing the old). Only field.c
 * writes a live component's record through this; loaders fill records not yet published. */
void keel__record_put(keel_kind_id k, void *record, int f, const keel_value *v);

/* Derived fields (get/set): refreshes the slots that show their values from the stored fields
 * (no-op for a kind without any); keel__record_put of a derived field runs its set, then this. */
void keel__record_derive(keel_kind_id k, void *record);
/* Runs the set of a derived field on `record` (not refreshed); `w`, `c` as the call shows them. */
keel_status keel__record_derived_set(keel_kind_id k, keel_world *w, keel_comp c, void *record, int f,
                                     const keel_value *v, keel_diags *d);
/* Applies the derived fields' defaults through their set on the kind's defaults record. */
void keel__layout_derive(keel_kind_id k, keel_diags *d);
/* The validate hook a kind with derived fields gets when it has none (see kind.c). */
keel_status keel__derived_validate(const keel_call *call, int field);
static inline bool keel__field_derived(const keel_field_desc *f)
{
    return f->get != NULL;
}

#endif
