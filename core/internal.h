/* internal.h — declarations shared between libkeel's files; not API. */
#ifndef KEEL_INTERNAL_H
#define KEEL_INTERNAL_H

#include "keel.h"

#include <stdarg.h>
#include <string.h>

/* ---- kind.c: records (owned by kind.c, used by world/member/step) ---- */

/* Fills a fresh record with the kind's declared defaults. */
void keel__record_init(keel_kind_id k, void *record);
/* Frees what a record owns (strings). Leaves it zeroed. */
void keel__record_fini(keel_kind_id k, void *record);
/* Deep copy (strings duplicated); dst must not hold a live record. */
void keel__record_copy(keel_kind_id k, void *dst, const void *src);
/* Reads field `f` of `record` as a value (strings borrowed). */
void keel__record_get(keel_kind_id k, const void *record, int f, keel_value *out);
/* Stores a checked value into field `f` (duplicating strings, freeing the old). */
void keel__record_put(keel_kind_id k, void *record, int f, const keel_value *v);

/* ---- body.c: bodies (keel_node MAP) <-> records ---- */

/* Runs the kind's migrations on a copy of `body` from `version` up to the kind's
 * version, then decodes into `record` (already holding defaults). Missing fields
 * keep defaults; unknown fields are warnings; a bad enum choice is a warning
 * keeping the default unless `strict`. `entity`/`asset` fields read UUID text.
 * Diagnostics carry `path` (+ ".field") and the node's file:line:col. */
keel_status keel__body_decode(keel_kind_id k, const keel_node *body, int version, bool strict,
                              void *record, const char *path, const char *file, keel_diags *d);
/* Record -> MAP node in declared field order. */
keel_node *keel__body_encode(keel_kind_id k, const void *record, bool with_transient);

/* ---- world.c: the registry tells live worlds about kind changes ---- */

/* Called by keel_kind_declare after a kind's layout changed: every world
 * converts its records (carry over by field name and type; the rest default).
 * `old_desc` is the previous description, freed by the caller afterwards. */
void keel__worlds_relayout(keel_kind_id k, const keel_kind_desc *old_desc, keel_diags *d); /* warnings: a vanished choice */
/* Called after declaring a key: every world adopts unknown entries held
 * under it (decode, migrate, make live in the same slot, awake). An entry the
 * entity's stack would refuse under the kind's rules stays unknown (a warning in d). */
void keel__worlds_adopt(keel_kind_id k, keel_diags *d);
/* Before replacing kind k's description with `nd`: InvalidOperation (listed in d) when a live
 * component in some world would break nd's rules; the old declaration then stays. */
keel_status keel__worlds_check_kind(keel_kind_id k, const keel_kind_desc *nd, keel_diags *d);
/* Around every call of a validate or migrate callback: keel_kind_declare refuses meanwhile. */
void keel__callback_enter(void);
void keel__callback_leave(void);
/* After replacing it: values outside the new bounds go back to their defaults (warnings). */
void keel__worlds_refit(keel_kind_id k, keel_diags *d);

/* ---- kind.c: layout and registry helpers (for hot reload and loaders) ---- */

/* Offset of field `field` / total record size under a description's layout
 * (declared order, 8-byte aligned; the size is at least 8). Lets a world read
 * records laid out by a description that has since been replaced. */
size_t keel__layout_offset(const keel_kind_desc *d, int field);
size_t keel__layout_size(const keel_kind_desc *d);
/* keel__record_fini for a record laid out by `d` (e.g. the old desc during relayout). */
void keel__desc_record_fini(const keel_kind_desc *d, void *record);
bool keel__kind_key_valid(const char *key);  /* ns:name, [a-z0-9_]+ both sides */
bool keel__kind_rejected(keel_kind_id k);   /* some declared kind names k in rejects */

/* ---- builtins.c ---- */
/* Declares the built-in kinds (called by keel_init). */
keel_status keel__builtins_register(keel_diags *d);

/* ---- util ---- */
char *keel__strdup(const char *s);
char *keel__strfmt(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
char *keel__vstrfmt(const char *fmt, va_list ap); /* consumes ap */
/* "entity 'Name' (uuid)" or "the scene root" (entity index i of w), malloc'd: for messages. */
char *keel__entity_label(const keel_world *w, uint32_t i);
/* Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF): what YAML can hold. */
bool keel__utf8_valid(const char *s);
/* A scalar whose text holds a NUL byte (libyaml decodes "\0"): a keel string is a C string. */
static inline bool keel__node_has_nul(const keel_node *n)
{
    return n->kind == KEEL_NODE_SCALAR && n->text && memchr(n->text, '\0', n->len);
}
void *keel__xrealloc(void *p, size_t n); /* aborts on OOM: keel treats OOM as fatal */
void *keel__xcalloc(size_t n, size_t size); /* zeroed; aborts on OOM too */

/* ---- io.c: the syscall seam (tests swap it to inject faults) ---- */
#include <sys/types.h>
struct keel__io_ops {
    int (*open)(const char *path, int flags, mode_t mode);
    ssize_t (*write)(int fd, const void *buf, size_t n);
    int (*fsync)(int fd);
    int (*close)(int fd);
    int (*rename)(const char *from, const char *to);
    int (*unlink)(const char *path);
};
/* NULL puts the real syscalls back. */
void keel__io_set_ops(const struct keel__io_ops *ops);
const struct keel__io_ops *keel__io_default_ops(void);

/* ---- yaml_read.c: YAML text -> keel_node tree, limits enforced ---- */

/* Refuses anchors, aliases, non-core tags, several documents and duplicate
 * keys (ParseError); document size, nesting depth, collection length and
 * string length (LimitExceeded). An empty document gives a null scalar. */
keel_status keel__yaml_parse(const char *text, size_t len, const keel_limits *lim,
                             const char *file, keel_node **out, keel_diags *d);
/* The same, with every node part taken from `arena` (NULL: malloc): the tree
 * is then freed only by keel__arena_free, never by keel_node_free. */
typedef struct keel__arena keel__arena;
keel__arena *keel__arena_new(void);
void keel__arena_free(keel__arena *a);
keel_status keel__yaml_parse_arena(const char *text, size_t len, const keel_limits *lim, const char *file,
                                   keel__arena *arena, keel_node **out, keel_diags *d);

/* ---- scene_write.c ---- */
/* true: bodies through keel_body_encode instead of straight from records (tests compare both). */
void keel__scene_write_via_encode(bool on);


/* ---- bytes.c: little-endian buffers for the binary formats ---- */
typedef struct keel__buf {
    uint8_t *p;
    size_t len, cap;
} keel__buf;
uint8_t *keel__buf_grow(keel__buf *b, size_t n); /* returns where the n new bytes go */
void keel__buf_u8(keel__buf *b, uint8_t v);
void keel__buf_u32(keel__buf *b, uint32_t v);
void keel__buf_u64(keel__buf *b, uint64_t v);
void keel__buf_f64(keel__buf *b, double d);
void keel__buf_bytes(keel__buf *b, const void *p, size_t n);
void keel__put_u32(uint8_t *at, uint32_t v);
uint32_t keel__get_u32(const uint8_t *p);
uint64_t keel__get_u64(const uint8_t *p);

#endif
