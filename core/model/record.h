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

#endif
