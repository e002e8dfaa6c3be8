/* keel.h — the public C API of libkeel: kinds, worlds, entities, slots, commands, files. */
#ifndef KEEL_H
#define KEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libkeel is built with hidden visibility: what this header declares is the
 * whole exported API (the keel__* of core/'s private headers stay inside the library). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define KEEL_VERSION_STRING "0.1.0"
#define KEEL_DOCUMENT_VERSION 1 /* the `keel:` key of a scene document */

/* ======================================================================
 * Status codes and diagnostics
 *
 * Every fallible call returns a keel_status and, when given a non-NULL
 * keel_diags, appends one diagnostic per problem found. KEEL_OK is 0.
 * Unless a declaration says otherwise, a world or query argument must not
 * be NULL, and a stale entity handle is NotFound (readers answer false, NULL,
 * 0 or KEEL_NO_ENTITY).
 *
 * Each lifecycle below has an example that tests/header_examples_test.sh
 * compiles and runs, in a directory holding a copy of the repository's
 * scenes/. An example is a whole program, a function the others share
 * (report below, hp_within_max), or else the body of an int function
 * (non-zero: failure) called between keel_init() and keel_shutdown().
 * They report failures with this helper:
 *
 * Example:
 *     void report(const char *what, keel_status st, const keel_diags *d)
 *     {
 *         char line[1024];
 *         fprintf(stderr, "%s: %s\n", what, keel_status_name(st));
 *         for (size_t i = 0; i < d->count; i++)
 *             fprintf(stderr, "  %s\n", keel_diag_format(&d->items[i], line, sizeof line));
 *     }
 * ====================================================================== */

typedef enum keel_status {
    KEEL_OK = 0,
    KEEL_NOT_FOUND,         /* no such entity, kind, slot, field, file */
    KEEL_UNSUPPORTED,       /* cannot apply to this thing (unknown component, readonly field) */
    KEEL_PROTECTED_ENTITY,  /* the scene root: destroy, duplicate, rename, reparent, disable */
    KEEL_INVALID_OPERATION, /* multiplicity, requires/rejects, cycle, singleton slot */
    KEEL_INVALID_ARGUMENT,  /* wrong type, out of range, not finite, bad UUID */
    KEEL_LIMIT_EXCEEDED,    /* a configured limit */
    KEEL_PARSE_ERROR,       /* not well-formed or not of the schema */
    KEEL_IO_ERROR,          /* the file system said no */
    KEEL_CONFLICT,          /* an unresolved entry of a merged scene's `conflicts:` list (keel merge) */
    KEEL_DIVERGED           /* a replay's state differs from its recording's (design/replay.md) */
} keel_status;
#define KEEL_STATUS_LAST_ KEEL_DIVERGED

/* "NotFound", "Unsupported", ... exactly as DESIGN.md spells them; "OK" for 0. */
const char *keel_status_name(keel_status s);

typedef enum keel_severity { KEEL_SEV_ERROR = 0, KEEL_SEV_WARNING } keel_severity;

typedef struct keel_diag {
    keel_status code;
    keel_severity severity;
    char *message; /* never NULL */
    char *path;    /* "entities[3].components[1].body.range"; "" when none */
    char *file;    /* NULL unless it came from a file */
    int line, col; /* 1-based; 0 when unknown */
    size_t more;   /* a summary ("and N more ..."): how many left-out diagnostics it stands for; else 0 */
} keel_diag;

/* A list keeps its first KEEL_DIAGS_LISTED diagnostics in full; past that, one summary item
 * per severity and code counts the rest ("and N more errors: InvalidArgument"), so a bad
 * input of any size gives a list of bounded size. errors and warnings count them all. */
#define KEEL_DIAGS_LISTED 1000

typedef struct keel_diags {
    keel_diag *items;
    size_t count, cap;
    size_t errors;   /* how many errors were added, listed or summarised */
    size_t warnings; /* how many warnings, likewise */
} keel_diags;

/* Zeroes `d`; nothing is allocated until the first item. The items and their strings
 * belong to `d` until keel_diags_free. */
void keel_diags_init(keel_diags *d);
void keel_diags_free(keel_diags *d); /* safe on a zeroed or freed struct, and NULL */
/* Appends and returns `code` (so `return keel_diag_add(...)` reads well).
 * `d` may be NULL: then nothing is recorded but the code is still returned. */
keel_status keel_diag_add(keel_diags *d, keel_severity sev, keel_status code,
                          const char *path, const char *file, int line, int col,
                          const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 8, 9)))
#endif
    ;
/* An error with no file position: what a hook or validate callback reports before returning its
 * status (`return KEEL_ERROR(c->diags, KEEL_INVALID_ARGUMENT, "hp", "hp %d is negative", hp);`). */
#define KEEL_ERROR(d, code, path, ...) \
    keel_diag_add((d), KEEL_SEV_ERROR, (code), (path), NULL, 0, 0, __VA_ARGS__)
/* The first error's code, KEEL_OK when there is none. */
keel_status keel_diags_status(const keel_diags *d);
/* Moves every item of `src` to the end of `dst`, prefixing paths with `prefix`
 * (joined with '.') when non-empty, and summarising past dst's cap; `src` is left empty. */
void keel_diags_append(keel_diags *dst, keel_diags *src, const char *prefix);
/* "FILE:LINE:COL: error: CODE: message (at path)" into buf; returns buf.
 * Parts that are unknown are left out; a line longer than `cap` is truncated.
 * No file but a position: "LINE:COL: error: ...". */
const char *keel_diag_format(const keel_diag *g, char *buf, size_t cap);

/* ======================================================================
 * UUIDs: canonical lowercase 8-4-4-4-12; any version read, v4 generated.
 * The nil UUID (all zero) means "none" in asset and entity fields.
 * ====================================================================== */

typedef struct keel_uuid { uint8_t bytes[16]; } keel_uuid;

keel_uuid keel_uuid_v4(void);                          /* from getrandom(2) */
bool keel_uuid_parse(const char *s, keel_uuid *out);   /* false on anything non-canonical */
void keel_uuid_format(keel_uuid u, char out[37]);      /* NUL-terminated */
bool keel_uuid_is_nil(keel_uuid u);                    /* all 16 bytes zero */
bool keel_uuid_equal(keel_uuid a, keel_uuid b);        /* byte for byte */

/* ======================================================================
 * Document trees (keel_node)
 *
 * A generic tree of maps, sequences and scalars with source positions. The
 * YAML reader produces it; unknown components keep their body as one, with
 * each scalar's original text and style, so it is written back unchanged.
 * Bodies handed to keel_add and to migrations are keel_nodes too.
 * ====================================================================== */

typedef enum keel_node_kind { KEEL_NODE_SCALAR = 0, KEEL_NODE_SEQ, KEEL_NODE_MAP } keel_node_kind;

typedef enum keel_node_style {
    KEEL_STYLE_ANY = 0,     /* let the writer choose */
    KEEL_STYLE_PLAIN,
    KEEL_STYLE_SINGLE,
    KEEL_STYLE_DOUBLE,
    KEEL_STYLE_LITERAL,
    KEEL_STYLE_FOLDED,
    KEEL_STYLE_FLOW,        /* collections written in flow style */
    KEEL_STYLE_BLOCK
} keel_node_style;

typedef struct keel_node keel_node;
struct keel_node {
    keel_node_kind kind;
    keel_node_style style;
    int line, col;     /* 1-based source position; 0 when built in memory */
    char *text;        /* scalars: the text as written (NUL-terminated); collections: push and
                        * put's private record (capacity, key index), freed with the node */
    size_t len;        /* scalars: length of text */
    size_t count;      /* SEQ: items; MAP: pairs */
    keel_node *items;  /* SEQ: count items; MAP: 2*count, key then value */
};

/* Heap nodes owned by the caller: free with keel_node_free, or hand to push/put.
 * Never NULL (running out of memory aborts, as everywhere in libkeel). A scalar
 * copies `text` (NULL: ""); the collections start empty. */
keel_node *keel_node_new_scalar(const char *text, keel_node_style style);
keel_node *keel_node_new_seq(void);
keel_node *keel_node_new_map(void);
/* Takes ownership of `item`: its struct is moved into the parent's array and
 * the pointer freed. Returns the stored child (valid until the next push). */
/* NULL, with the child freed, when push's parent is not a SEQ or put's not a MAP (or key is NULL). */
keel_node *keel_node_push(keel_node *seq, keel_node *item);
/* Sets `key` (copied) to `value` (taken as by push; NULL: a null scalar): an existing
 * key's value is freed and replaced in place, else the pair is appended. Returns the
 * stored value, valid until the map next grows. */
keel_node *keel_node_put(keel_node *map, const char *key, keel_node *value);
/* A deep copy (text, style and positions kept) that the caller frees; NULL for NULL. */
keel_node *keel_node_copy(const keel_node *n);
void keel_node_free(keel_node *n);       /* frees a heap node and its children */
void keel_node_clear(keel_node *n);      /* frees the children of an embedded node */
const keel_node *keel_node_get(const keel_node *map, const char *key); /* NULL when absent */
bool keel_node_equal(const keel_node *a, const keel_node *b);          /* structure + text */
/* YAML 1.2 core-schema reading of a scalar. Quoted scalars are always strings.
 * The readers answer false, leaving `*out` alone, for anything else (a collection,
 * a quoted scalar, other text); `out` may be NULL to test only. */
bool keel_node_is_null(const keel_node *n); /* "", ~, null/Null/NULL; true for a NULL node */
bool keel_node_as_bool(const keel_node *n, bool *out);   /* true/True/TRUE, false/False/FALSE */
bool keel_node_as_int(const keel_node *n, int64_t *out); /* [-+]dec, 0o octal, 0x hex; false past int64 */
bool keel_node_as_float(const keel_node *n, double *out); /* ints read as floats too */
/* Shortest decimal text that strtod reads back to exactly `v` ("0.1", "-0", "1e-07" style
 * avoided: "1e-7"). Non-finite values give ".nan", ".inf", "-.inf". Returns length. */
int keel_format_double(double v, char *buf, size_t cap);

/* ======================================================================
 * Field types and values
 * ====================================================================== */

typedef enum keel_type {
    KEEL_T_BOOL = 0,
    KEEL_T_INT,     /* int64 */
    KEEL_T_FLOAT,   /* double */
    KEEL_T_VEC2,
    KEEL_T_VEC3,
    KEEL_T_VEC4,
    KEEL_T_QUAT,    /* x, y, z, w; stored normalized */
    KEEL_T_COLOR,   /* r, g, b, a */
    KEEL_T_ENUM,    /* stored as the choice index; written as the choice name */
    KEEL_T_STRING,
    KEEL_T_ASSET,   /* asset UUID or nil */
    KEEL_T_ENTITY,  /* entity UUID or nil */
    KEEL_T_COUNT_
} keel_type;

const char *keel_type_name(keel_type t);           /* "vec3" */
bool keel_type_parse(const char *name, keel_type *out); /* "vec3" -> KEEL_T_VEC3; false for NULL or unknown */
int keel_type_width(keel_type t);                  /* vectors: 2/3/4; others 1 */
size_t keel_type_size(keel_type t);                /* bytes of the field inside a record */

/* Record layout, so C code can read records directly (queries hand out records):
 *   bool     -> bool (padded to 8)       int    -> int64_t
 *   float    -> double                   vecN/quat/color -> double[N]
 *   enum     -> int64_t (choice index)   string -> char * (owned, never NULL; "" when empty)
 *   asset, entity -> keel_uuid (nil = none)
 * Fields are laid out in declared order, each aligned to 8 bytes. */

typedef struct keel_value {
    keel_type type;
    bool nil;           /* asset/entity: no value */
    union {
        bool b;
        int64_t i;      /* int, and enum (choice index) */
        double f;
        double v[4];
        const char *s;  /* string: borrowed; valid until the next write to that field */
        keel_uuid u;    /* asset, entity */
    } as;
} keel_value;

/* ======================================================================
 * Kinds (the process-wide registry)
 *
 * Example:
 *     static const keel_field_desc fields[] = {
 *         { .key = "hp", .type = KEEL_T_INT, .has_default = true,
 *           .def = { .type = KEEL_T_INT, .as.i = 100 }, .has_min = true, .min = 0 },
 *         { .key = "max_hp", .type = KEEL_T_INT, .has_default = true,
 *           .def = { .type = KEEL_T_INT, .as.i = 100 }, .has_min = true, .min = 1 },
 *     };
 *     keel_kind_desc k = { .key = "game:health", .version = 1, .multiplicity = KEEL_ONE,
 *                          .fields = fields, .field_count = 2, .validate = hp_within_max };
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_kind_id id = KEEL_NO_KIND;
 *     keel_status st = keel_kind_declare(&k, &id, &d); // desc copied: k may go away
 *     if (st != KEEL_OK) report(k.key, st, &d);
 *     keel_diags_free(&d);
 *     return st != KEEL_OK || keel_kind_field(id, "max_hp") != 1;
 * ====================================================================== */

typedef uint32_t keel_kind_id;      /* process-local, never persisted; 0 = none */
#define KEEL_NO_KIND ((keel_kind_id)0)

/* An entity handle: generation << 32 | index; 0 = none. The generation carries its world's tag
 * (unique among live worlds, new at every keel_world_stop) and a count of the index's reuses, so
 * a handle of a destroyed entity, of another world or of an earlier epoch names nothing: every
 * function taking one treats it as not alive (NotFound). */
typedef uint64_t keel_entity;
#define KEEL_NO_ENTITY ((keel_entity)0)

#define KEEL_SLOT_AUTO UINT32_MAX   /* keel_add: a one kind's slot 0, a many kind's max+1 */

typedef struct keel_world keel_world;

/* A component's address: entity + kind + slot. There is no component UUID. */
typedef struct keel_comp {
    keel_entity entity;
    keel_kind_id kind;
    uint32_t slot;
} keel_comp;

typedef enum keel_multiplicity { KEEL_ONE = 0, KEEL_MANY } keel_multiplicity;

enum keel_field_flags {
    KEEL_FIELD_TRANSIENT = 1u << 0, /* shown, not saved */
    KEEL_FIELD_READONLY = 1u << 1,  /* shown, not written from outside (Unsupported) */
    KEEL_FIELD_HIDDEN = 1u << 2,    /* the kind's own bookkeeping */
    KEEL_FIELD_RUNTIME = 1u << 3,   /* saved in save games, never in scene files or cooked scenes
                                     * (a countdown, an AI's state); not with TRANSIENT */
    KEEL_FIELD_SYNC = 1u << 4       /* replicated to client worlds (keel_net_*); on a client
                                     * world only the network writes it (InvalidOperation) */
};
#define KEEL_SYNC_INTERVAL_MAX 1200 /* keel_kind_desc.sync_interval: ticks between deltas */
#define KEEL_SYNC_RADIUS_MAX 10000.0 /* keel_kind_desc.sync_radius: a host's default max_radius */

enum keel_kind_flags {
    KEEL_KIND_NOSAVE = 1u << 0,      /* runtime only: never written to any file */
    KEEL_KIND_EDITOR_ONLY = 1u << 1, /* kept in YAML, dropped by cooking */
    KEEL_KIND_ROOT_ONLY = 1u << 2,   /* only on the scene root (core:world_settings) */
    KEEL_KIND_NOT_ON_ROOT = 1u << 3  /* never on the scene root (core:transform: the scene has no place) */
};

struct keel_call;
/* A derived field (see keel_field_desc.get/set): `call->record` is the component's record (on a
 * file load or for the defaults not yet in a world: call->world NULL), `call->user` the kind's
 * desc.user. get reads the stored fields into *out (of the field's type); set writes them from a
 * checked value; a non-OK status refuses (a set's changes are undone). */
typedef keel_status (*keel_field_get_fn)(const struct keel_call *call, int field, keel_value *out);
typedef keel_status (*keel_field_set_fn)(const struct keel_call *call, int field, const keel_value *v);
#define KEEL_TOOLTIP_MAX 1024 /* bytes of a kind's or field's tooltip */

typedef struct keel_field_desc {
    const char *key;
    keel_type type;
    bool has_default;
    keel_value def;               /* enum: def.as.i is the choice index */
    bool has_min, has_max;
    double min, max;              /* int and float fields, and each vector component */
    bool min_exclusive, max_exclusive; /* "> 0" rather than ">= 0" */
    const char *const *choices;   /* enum */
    size_t choice_count;
    unsigned flags;               /* keel_field_flags */
    const char *tooltip;          /* NULL: none; UTF-8, at most KEEL_TOOLTIP_MAX bytes */
    /* Derived: both or neither; the field holds no storage of its own (a read is get's value, a
     * write runs the range check then set, in the writer's transaction). Bool, int, float,
     * vectors, quat, color and enum fields only. */
    keel_field_get_fn get;
    keel_field_set_fn set;
} keel_field_desc;

typedef enum keel_phase {
    KEEL_PHASE_AWAKE = 0,
    KEEL_PHASE_START,
    KEEL_PHASE_FIXED_UPDATE,
    KEEL_PHASE_UPDATE,
    KEEL_PHASE_LATE_UPDATE,
    KEEL_PHASE_ON_DESTROY,
    KEEL_PHASE_ON_TRANSFER, /* after keel_transfer moved the component in; call.from is the source world */
    KEEL_PHASE_ON_MESSAGE,  /* a message delivered to the component: keel_call_message */
    KEEL_PHASE_COUNT_
} keel_phase;
const char *keel_phase_name(keel_phase p); /* "awake", "fixed_update", ... */

/* What a hook is called with. `record` points at the component's state and is
 * valid for the duration of the call only. */
typedef struct keel_call {
    keel_world *world;
    keel_comp comp;
    void *record;
    keel_phase phase;
    double dt;
    void *user;           /* the kind's desc.user */
    keel_diags *diags;    /* a hook that fails adds its message here */
    keel_world *from;     /* on_transfer: the world the component came from; NULL otherwise */
} keel_call;

/* A hook returns KEEL_OK, or any other status to fail: the core then rolls the
 * call back (see keel_step). */
typedef keel_status (*keel_hook_fn)(const keel_call *call);
/* Runs after every write through the registry (record already updated);
 * returning non-OK rejects the write and the old value is put back; the
 * write's caller gets that status (and the hook's diagnostic, if it added one).
 * Example:
 *     keel_status hp_within_max(const keel_call *c, int field)
 *     {
 *         const int64_t *f = c->record; // hp, max_hp: int fields in declared order
 *         if (f[0] <= f[1]) return KEEL_OK;
 *         return KEEL_ERROR(c->diags, KEEL_INVALID_ARGUMENT, "hp", "hp is above max_hp");
 *     }
 */
typedef keel_status (*keel_validate_fn)(const keel_call *call, int field);
/* One migration step: rewrites `body` (a MAP) from version to_version-1 to
 * to_version, in place. */
typedef keel_status (*keel_migrate_fn)(keel_node *body, int to_version, void *user,
                                       keel_diags *diags);

typedef struct keel_kind_desc {
    const char *key;          /* "ns:name", [a-z0-9_]+ on both sides */
    const char *display;      /* NULL: derived from the key */
    const char *category;     /* NULL: "General" */
    int version;              /* >= 1; 0 is read as 1 */
    keel_multiplicity multiplicity;
    uint32_t max;             /* many: 0 = unbounded */
    const char *const *requires;
    size_t requires_count;
    const char *const *rejects;
    size_t rejects_count;
    unsigned flags;           /* keel_kind_flags */
    const keel_field_desc *fields;
    size_t field_count;
    keel_hook_fn hooks[KEEL_PHASE_COUNT_]; /* NULL = none; a kind with none costs nothing per step */
    keel_validate_fn validate;
    keel_migrate_fn migrate;
    void *user;
    void (*user_free)(void *user); /* called when the kind is replaced or the registry shut down */
    bool builtin;
    uint32_t sync_interval;   /* 0: default (1 when a field syncs); else its deltas go every Nth
                               * network tick, 1..KEEL_SYNC_INTERVAL_MAX (more: InvalidArgument) */
    const char *tooltip;      /* NULL: none; UTF-8, at most KEEL_TOOLTIP_MAX bytes */
    double sync_radius;       /* 0: the host's radius; else finite, > 0, at most the host's max_radius */
    bool no_summon;           /* summon = false: channel/MCP component.add and object.spawn refuse it */
} keel_kind_desc;

/* Registers the built-in kinds. Call once before anything else; safe to call twice.
 * keel_shutdown frees the registry (every world must be freed first).
 * Example:
 *     int main(void)
 *     {
 *         keel_diags d;
 *         keel_diags_init(&d);
 *         keel_status st = keel_init();
 *         // declare the game's kinds here (keel_kind_declare), then:
 *         if (st == KEEL_OK) st = keel_registry_freeze(&d);
 *         keel_world *w = st == KEEL_OK ? keel_world_new("Main") : NULL;
 *         if (w) st = keel_step(w, 1.0 / 60, &d); // once a frame
 *         if (st != KEEL_OK) report("startup", st, &d);
 *         keel_world_free(w); // every world before keel_shutdown; NULL is a no-op
 *         keel_diags_free(&d);
 *         keel_shutdown();
 *         return st != KEEL_OK || !w;
 *     }
 */
keel_status keel_init(void);
/* Frees every kind (calling each desc.user_free); keel_init may start over after it. */
void keel_shutdown(void);

/* Declares a kind. A new key gets a new id. An existing key keeps its id and
 * has its behaviour replaced; when the fields changed, live components in every
 * world are carried over by field name (same name and type; an enum by choice
 * name, a choice no longer offered taking the default). Unknown components
 * held under this key in any world are adopted: decoded (migrated when older),
 * made live in the same slots, and awoken.
 * One that the entity's stack would refuse under the kind's rules (multiplicity,
 * max, requires, rejects, root only) stays unknown, with a warning in `d`.
 * Refused (InvalidArgument): a bad key, a field type out of range, a duplicate
 * field key, a default outside min/max or not among the choices, max on a one
 * kind, version < 1, a kind no entity could hold (requiring itself, requiring and
 * rejecting one kind, ROOT_ONLY with NOT_ON_ROOT, unknown flags), a field name or
 * choice that is not UTF-8. After keel_registry_freeze, requires/rejects naming an
 * unregistered key are refused too (NotFound).
 * Redeclaring (InvalidOperation, the old declaration kept): a built-in kind; from a
 * validate or migrate callback; a new rule (one, max, requires, rejects, root
 * placement) that a live component in some world would break (each one named). A
 * carried-over value outside new bounds, or an enum choice that is gone, takes the
 * default (a warning in `d`). A hook may redeclare kinds, but a C hook must not
 * redeclare its own kind: its records move. */
keel_status keel_kind_declare(const keel_kind_desc *desc, keel_kind_id *out, keel_diags *d);
/* Checks that every requires/rejects names a registered kind (NotFound each). */
keel_status keel_registry_freeze(keel_diags *d);

keel_kind_id keel_kind_find(const char *key);          /* KEEL_NO_KIND when absent */
size_t keel_kind_count(void);                          /* registered kinds, built-ins included */
keel_kind_id keel_kind_at(size_t i);                   /* sorted by key; KEEL_NO_KIND past the end */
/* The kind's stored description (strings and arrays owned by the registry;
 * display/category filled in). Valid until the kind is redeclared. NULL for
 * KEEL_NO_KIND or an id not registered. */
const keel_kind_desc *keel_kind_describe(keel_kind_id k);
int keel_kind_field(keel_kind_id k, const char *field); /* index or -1 (no such field or kind) */
/* Bytes of one record (see the layout rule; at least 8, even with no fields) and a
 * field's byte offset in it. Both change when a redeclaration changes the fields.
 * 0 for an unregistered kind or a field index out of range. */
size_t keel_kind_record_size(keel_kind_id k);
size_t keel_kind_field_offset(keel_kind_id k, int field);
/* Checks a value against a field's type, finiteness, range and choices
 * (InvalidArgument), normalizing quats. Does not run validate. */
keel_status keel_field_check(keel_kind_id k, int field, keel_value *v, keel_diags *d);

/* ======================================================================
 * Worlds
 *
 * Example:
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_world *w = keel_world_new("Demo");
 *     if (!w) return 1;
 *     keel_kind_id tk = keel_kind_find("core:transform");
 *     keel_entity e = KEEL_NO_ENTITY;
 *     keel_comp t;
 *     keel_value v = { .type = KEEL_T_VEC3, .as.v = { 0, 1.5, 0 } };
 *     keel_status st = keel_spawn(w, "Player", KEEL_NO_ENTITY, NULL, &e, NULL, &d);
 *     if (st == KEEL_OK) st = keel_add(w, e, tk, NULL, &t, NULL, &d);
 *     if (st == KEEL_OK) st = keel_set(w, t, keel_kind_field(tk, "position"), &v, NULL, &d);
 *     if (st == KEEL_OK) st = keel_get(w, t, keel_kind_field(tk, "scale"), &v, &d); // 1 1 1
 *     keel_query *q = keel_query_new(w, &tk, 1);
 *     for (size_t r = 0, n = q ? keel_query_update(q) : 0; r < n; r++)
 *         printf("%g\n", ((const keel_transform *)keel_query_column(q, 0)[r])->position[1]);
 *     keel_query_free(q);
 *     if (st == KEEL_OK) st = keel_destroy(w, e, NULL, &d); // e is stale now: NotFound
 *     if (st != KEEL_OK) report("world", st, &d);
 *     keel_world_free(w);
 *     keel_diags_free(&d);
 *     return st != KEEL_OK;
 * ====================================================================== */

/* How the editor grid is drawn (settings.grid.display). */
typedef enum keel_grid_display { KEEL_GRID_LINES = 0, KEEL_GRID_DOTS, KEEL_GRID_NONE } keel_grid_display;

typedef struct keel_grid {
    bool enabled;
    double origin[3];
    double orientation[4]; /* normalized quaternion */
    double base_spacing;   /* > 0 */
    int64_t major_line_every; /* >= 1 */
    /* How it looks (registry.md, "Grid and scene settings"): r, g, b, a each in [0, 1]. */
    double minor_color[4], major_color[4];
    double u_color[4], v_color[4]; /* the grid plane's two axis lines */
    double fade;                   /* >= 0: distance at which lines fade out; 0 = never */
    keel_grid_display display;
} keel_grid;

/* The grid a new world has (README, "Grid and scene settings", lists the values). */
keel_grid keel_grid_default(void);

/* A fresh v4 scene UUID; NULL on OOM. A NULL name, or one that is not valid UTF-8 or is
 * longer than 64 KiB, is "" (keel_world_set_name refuses it instead). */
keel_world *keel_world_new(const char *name);
/* NULL is a no-op; runs no hooks. Inside a callback of w it does nothing (keel_world_in_callback). */
void keel_world_free(keel_world *w);
/* Retires the world, then frees it: its lifts are discarded, then every component that got
 * awake gets its on_destroy, each entity after its children and the scene root's components
 * last, each in its own transaction (as keel_destroy runs them). A hook that fails is one error
 * in `d` (path ENTITY/KIND[SLOT], its own code and message) and the close goes on; the world is
 * freed either way. Returns KEEL_OK or the first failure's code. InvalidOperation, and nothing
 * retired or freed, during its step or inside one of its callbacks. NULL: KEEL_OK. */
keel_status keel_world_close(keel_world *w, keel_diags *d);
keel_uuid keel_world_uuid(const keel_world *w);        /* never nil */
keel_status keel_world_set_uuid(keel_world *w, keel_uuid u, keel_diags *d); /* nil: InvalidArgument */
/* Never NULL; borrowed: valid until keel_world_set_name or keel_world_free. */
const char *keel_world_name(const keel_world *w);
/* A NULL name or one not valid UTF-8 is InvalidArgument; over 64 KiB (what a scene file
 * may hold) LimitExceeded. */
keel_status keel_world_set_name(keel_world *w, const char *name, keel_diags *d);
/* The editor grid (scene settings), inside the world: valid until the world is freed. */
const keel_grid *keel_world_grid(const keel_world *w);
/* Copies `g`, normalizing the orientation. InvalidArgument (grid unchanged): `g` NULL,
 * a non-finite origin or orientation, a zero quaternion, base_spacing not > 0,
 * major_line_every < 1. */
keel_status keel_world_set_grid(keel_world *w, const keel_grid *g, keel_diags *d);
typedef struct keel_cmd keel_cmd; /* "Inverse commands" below */
/* The scene's name and grid as one undoable command: `name` NULL keeps the name, `grid` NULL
 * keeps the grid; both are checked (as keel_world_set_name and keel_world_set_grid) before
 * either changes. `inverse` (may be NULL) gets a KEEL_CMD_SETTINGS that puts back both. */
keel_status keel_world_set_settings(keel_world *w, const char *name, const keel_grid *grid, keel_cmd *inverse,
                                    keel_diags *d);

/* The world's random generator (design/replay.md): xoshiro256** seeded by splitmix64 from the
 * world's seed, which until keel_world_set_seed is derived from the scene UUID. Its state is part
 * of the world: play's stop puts it back, save games, dumps and recordings carry it, so a replay
 * draws the same numbers. keel_random_unit is in [0, 1); keel_random_int in [lo, hi]
 * (InvalidArgument when lo > hi). keel_random_set_state: InvalidArgument for a state of zeros.
 *
 * Example:
 *     keel_world *a = keel_world_new("A"), *b = keel_world_new("B");
 *     keel_world_set_seed(a, 42);
 *     keel_world_set_seed(b, 42);
 *     int bad = keel_world_seed(a) != 42;
 *     int64_t x = 0, y = 0;
 *     bad |= keel_random_int(a, 1, 6, &x, NULL) != KEEL_OK || x < 1 || x > 6;
 *     bad |= keel_random_int(b, 1, 6, &y, NULL) != KEEL_OK || x != y; // same seed, same draw
 *     double u = keel_random_unit(a);
 *     bad |= u < 0 || u >= 1;
 *     bad |= keel_random_int(a, 2, 1, &x, NULL) != KEEL_INVALID_ARGUMENT;
 *     keel_world_free(a);
 *     keel_world_free(b);
 *     return bad;
 */
int64_t keel_world_seed(const keel_world *w);
void keel_world_set_seed(keel_world *w, int64_t seed);   /* restarts the generator */
uint64_t keel_random_u64(keel_world *w);
double keel_random_unit(keel_world *w);
keel_status keel_random_int(keel_world *w, int64_t lo, int64_t hi, int64_t *out, keel_diags *d);
/* The seed and the generator's state (either may be NULL); false while both are still those
 * derived from the scene UUID (no seed set, nothing drawn: a dump then writes no settings.random). */
bool keel_random_state(const keel_world *w, int64_t *seed, uint64_t state[4]);
keel_status keel_random_set_state(keel_world *w, int64_t seed, const uint64_t state[4], keel_diags *d);
uint64_t keel_world_revision(const keel_world *w);   /* bumps on every change */
uint64_t keel_world_epoch(const keel_world *w);      /* process-unique id of this world's incarnation */
/* The scene root: a protected object that is never listed among entities. */
keel_entity keel_world_root(const keel_world *w);
size_t keel_world_entity_count(const keel_world *w); /* live entities, root excluded */
/* A capacity hint: room for `entities` live entities in all, so spawning up to there
 * regrows neither the entity table nor the UUID index. Never shrinks; changes nothing visible. */
void keel_world_reserve(keel_world *w, size_t entities);

/* ======================================================================
 * Inverse commands
 *
 * Every authoring command fully happens or changes nothing, and (when
 * `inverse` is non-NULL) fills in the command that undoes it. Inverses name
 * entities by UUID, so they stay valid across undo of a destroy. On failure
 * `*inverse` is left KEEL_CMD_NONE. keel_cmd_free is safe on that, on a
 * zeroed keel_cmd and twice.
 *
 * Example:
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_world *w = keel_world_new("Undo");
 *     if (!w) return 1;
 *     keel_cmd undo = { 0 }, redo = { 0 };
 *     keel_entity e = KEEL_NO_ENTITY;
 *     keel_status st = keel_spawn(w, "Crate", KEEL_NO_ENTITY, NULL, &e, NULL, &d);
 *     keel_uuid id = keel_entity_uuid(w, e);
 *     if (st == KEEL_OK) st = keel_destroy(w, e, &undo, &d);      // undo: a SPAWN
 *     if (st == KEEL_OK) st = keel_cmd_apply(w, &undo, &redo, &d); // redo: a DESTROY
 *     if (st == KEEL_OK && !keel_alive(w, keel_find(w, id))) st = KEEL_NOT_FOUND; // e stays stale
 *     if (st != KEEL_OK) report("undo", st, &d);
 *     keel_cmd_free(&undo);
 *     keel_cmd_free(&redo);
 *     keel_world_free(w);
 *     keel_diags_free(&d);
 *     return st != KEEL_OK;
 * ====================================================================== */

typedef enum keel_cmd_type {
    KEEL_CMD_NONE = 0,
    KEEL_CMD_SPAWN,        /* restore an entity from `tree` (entity document form), at `index` among siblings */
    KEEL_CMD_DESTROY,      /* entity */
    KEEL_CMD_ADD,          /* entity, kind_key, slot, tree = body (or preserved unknown body), version;
                              index = place in the membership list (SIZE_MAX = append) */
    KEEL_CMD_REMOVE,       /* entity, kind_key, slot */
    KEEL_CMD_SET,          /* entity, kind_key, slot, field, value */
    KEEL_CMD_REPARENT,     /* entity, parent (nil = top level), index */
    KEEL_CMD_RENAME,       /* entity, name */
    KEEL_CMD_ENABLE,       /* entity, enabled */
    KEEL_CMD_ENABLE_COMPONENT, /* entity, kind_key, slot, enabled */
    KEEL_CMD_BATCH,        /* items, applied in order */
    KEEL_CMD_SETTINGS      /* name (NULL = keep), grid (NULL = keep): keel_world_set_settings */
} keel_cmd_type;

/* A command names its entity by UUID; the nil UUID names the scene root (its components). */
typedef struct keel_cmd keel_cmd;
struct keel_cmd {
    keel_cmd_type type;
    keel_uuid entity;
    keel_uuid parent;
    char *kind_key;
    uint32_t slot;
    int version;
    char *field;
    keel_value value;      /* strings owned by the command */
    char *name;
    bool enabled;
    size_t index;          /* position among siblings; SIZE_MAX = append */
    keel_node *tree;
    keel_cmd *items;
    size_t item_count;
    keel_grid *grid;       /* SETTINGS only; owned by the command */
};

/* Applies `cmd` (read only; the caller keeps it) by calling the matching command above,
 * so it answers what that command answers; a SET is checked as keel_set (readonly is
 * Unsupported). NotFound: an entity or parent UUID not in `w`, a SET field not in the kind;
 * InvalidArgument: an unknown type, a SPAWN without `tree`, an ADD without `kind_key`.
 * KEEL_CMD_NONE is OK and does nothing. An ADD of an unregistered (or newer) kind goes to
 * keel_add_unknown. A BATCH is all or nothing; its inverse lists the items' inverses in
 * reverse order. `*inverse` is the caller's to keel_cmd_free. */
keel_status keel_cmd_apply(keel_world *w, const keel_cmd *cmd, keel_cmd *inverse, keel_diags *d);
void keel_cmd_free(keel_cmd *cmd); /* frees the contents (not the struct); leaves it KEEL_CMD_NONE */

/* ======================================================================
 * Entities
 * ====================================================================== */

/* Spawns an entity as the last child of `parent` (KEEL_NO_ENTITY: top level).
 * `uuid` NULL: a fresh v4. A UUID already in the world is InvalidOperation;
 * the nil UUID is InvalidArgument; a stale parent NotFound; a name not valid
 * UTF-8 InvalidArgument, over 64 KiB LimitExceeded. `*out` is KEEL_NO_ENTITY on failure. */
keel_status keel_spawn(keel_world *w, const char *name, keel_entity parent,
                       const keel_uuid *uuid, keel_entity *out, keel_cmd *inverse, keel_diags *d);
/* Runs on_destroy, destroys every component record, drops preserved bodies,
 * reparents children to the top level, retires the handle. The root is
 * ProtectedEntity. During a step the entity is dead at once and freed at the
 * phase boundary. A stale handle is NotFound (as for every entity command).
 * Inside a callback transaction (keel_world_in_callback) the entity is dead at
 * once but on_destroy waits for the outermost commit: it runs then, once per
 * component, in the order the destroys were made (keel_remove's too), with
 * call->record the component's last record and call->comp.entity the dead
 * handle; a destroy that rolls back runs none. */
keel_status keel_destroy(keel_world *w, keel_entity e, keel_cmd *inverse, keel_diags *d);
/* Moves `e` to the end of `parent`'s children (KEEL_NO_ENTITY: top level).
 * A cycle is InvalidOperation; the hierarchy depth limit (256) LimitExceeded. */
keel_status keel_reparent(keel_world *w, keel_entity e, keel_entity parent, keel_cmd *inverse, keel_diags *d);
/* `name` is copied; names need not be unique. InvalidArgument: NULL or not valid UTF-8;
 * LimitExceeded: over 64 KiB (as for keel_spawn); ProtectedEntity: the root. */
keel_status keel_rename(keel_world *w, keel_entity e, const char *name, keel_cmd *inverse, keel_diags *d);
/* Sets e's own flag; a disabled entity and all its descendants run no hooks
 * (keel_entity_active). ProtectedEntity: the root. */
keel_status keel_set_enabled(keel_world *w, keel_entity e, bool enabled, keel_cmd *inverse, keel_diags *d);
/* Duplicates e and its subtree under `parent` (KEEL_NO_ENTITY: e's own parent):
 * every membership entry with the same slots, preserved unknown bodies included,
 * fresh UUIDs; entity fields pointing inside the subtree are remapped. */
keel_status keel_duplicate(keel_world *w, keel_entity e, keel_entity parent, keel_entity *out,
                           keel_cmd *inverse, keel_diags *d);
/* Moves e and its whole subtree out of `src` into `dst` under `parent` (KEEL_NO_ENTITY: top
 * level), as one: UUIDs, names, hierarchy, component records, slots, versions, enabled flags
 * and unknown components are kept; no on_destroy and no awake run; each component's
 * KEEL_PHASE_ON_TRANSFER hook runs in dst after the move (call.from = src), and moved
 * components first run in dst's next step. Everything is checked first and a refusal moves
 * nothing: InvalidArgument (NULL or the same world), InvalidOperation (a callback transaction
 * or step open in either world; a UUID of the subtree already alive in dst, named),
 * NotFound (e not alive in src, parent not alive in dst), ProtectedEntity (the root),
 * LimitExceeded (the depth limit in dst). Afterwards src's handles to the moved entities are
 * stale; *out (may be NULL) is e's handle in dst. Entity fields pointing inside the subtree
 * keep pointing (by UUID); others read as not alive in dst unless that UUID lives there.
 *
 * Example:
 *     keel_world *a = keel_world_new("level"), *b = keel_world_new("inventory");
 *     keel_entity sword = KEEL_NO_ENTITY, moved = KEEL_NO_ENTITY;
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_status st = keel_spawn(a, "Sword", KEEL_NO_ENTITY, NULL, &sword, NULL, &d);
 *     if (st == KEEL_OK) st = keel_transfer(a, sword, b, KEEL_NO_ENTITY, &moved, &d);
 *     int failed = st != KEEL_OK || keel_alive(a, sword) || !keel_alive(b, moved) ||
 *                  strcmp(keel_entity_name(b, moved), "Sword") != 0;
 *     keel_diags_free(&d);
 *     keel_world_free(a);
 *     keel_world_free(b);
 *     return failed;
 */
keel_status keel_transfer(keel_world *src, keel_entity e, keel_world *dst, keel_entity parent, keel_entity *out,
                          keel_diags *d);

/* Prefabs. A template is an ordinary world, usually a scene loaded with keel_load_opts.no_awake
 * (nothing in it runs; it is never stepped). keel_instantiate copies every entity of `tmpl`
 * into `dst` with fresh UUIDs: names, hierarchy, sibling order, enabled flags, component
 * records, slots and unknown components are kept; entity fields naming an entity of the
 * template name its copy instead (as keel_duplicate). The template's root components are not
 * copied. The top-level copies go under opts->parent (KEEL_NO_ENTITY: the top level), renamed
 * to opts->name when it is not NULL. opts->before_awake, when set, gets the copies before
 * anything sees them, in a private staging world (its handles mean nothing in dst): it may
 * write fields, add or remove components. Then every copy's kind rules are checked, and only
 * then are the copies published in dst and their components awoken (pre-order, membership
 * order). A refusal (the callback's status, a kind rule, InvalidArgument for a bad name,
 * NotFound for a parent not alive in dst, LimitExceeded for the depth limit) leaves dst as it
 * was and runs no hook. Allowed inside a callback transaction of dst: a rollback destroys the
 * copies. The top-level copies' handles go to out[0..cap) in the template's order; *count
 * (may be NULL) is how many there are. tmpl is read, never changed; tmpl == dst is allowed.
 * `opts` NULL: all defaults.
 *
 * Example:
 *     keel_status raise_y(keel_world *stage, const keel_entity *tops, size_t n, void *user, keel_diags *d)
 *     {
 *         keel_kind_id tk = keel_kind_find("core:transform");
 *         keel_value v = { .type = KEEL_T_VEC3, .as.v = { 0, *(double *)user, 0 } };
 *         keel_comp c;
 *         for (size_t k = 0; k < n; k++) {
 *             if (!keel_get_comp(stage, tops[k], tk, KEEL_SLOT_AUTO, &c)) continue;
 *             keel_status st = keel_set(stage, c, keel_kind_field(tk, "position"), &v, NULL, d);
 *             if (st != KEEL_OK) return st;
 *         }
 *         return KEEL_OK;
 *     }
 *
 * Example:
 *     const char *yaml = "keel: 1\nscene: {uuid: 5f0e3c52-7a51-4a53-9d6e-2b1c9c1f0a01, name: Crate}\n"
 *                        "entities:\n- uuid: 5f0e3c52-7a51-4a53-9d6e-2b1c9c1f0a02\n  name: Crate\n"
 *                        "  components:\n  - {kind: core:transform, version: 1, slot: 0, body: {}}\n";
 *     keel_load_opts lo = keel_load_opts_default();
 *     lo.no_awake = true;
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_world *tmpl = NULL, *w = keel_world_new("level");
 *     keel_status st = keel_scene_parse(yaml, strlen(yaml), &lo, &tmpl, &d);
 *     double y = 2;
 *     keel_instantiate_opts o = { .name = "Crate 1", .before_awake = raise_y, .user = &y };
 *     keel_entity a = KEEL_NO_ENTITY, b = KEEL_NO_ENTITY;
 *     size_t n = 0;
 *     if (st == KEEL_OK) st = keel_instantiate(w, tmpl, &o, &a, 1, &n, &d);
 *     if (st == KEEL_OK) st = keel_instantiate(w, tmpl, NULL, &b, 1, &n, &d);
 *     keel_kind_id tk = keel_kind_find("core:transform");
 *     keel_comp c;
 *     keel_value v = { 0 };
 *     if (st == KEEL_OK && keel_get_comp(w, a, tk, KEEL_SLOT_AUTO, &c))
 *         st = keel_get(w, c, keel_kind_field(tk, "position"), &v, &d);
 *     int failed = st != KEEL_OK || n != 1 || v.as.v[1] != 2 || strcmp(keel_entity_name(w, a), "Crate 1") != 0 ||
 *                  keel_uuid_equal(keel_entity_uuid(w, a), keel_entity_uuid(w, b));
 *     keel_diags_free(&d);
 *     keel_world_free(tmpl);
 *     keel_world_free(w);
 *     return failed;
 */
typedef struct keel_instantiate_opts {
    keel_entity parent; /* of dst; KEEL_NO_ENTITY: the top level */
    const char *name;   /* every top-level copy's name; NULL: the template's */
    /* called with the staged top-level copies; a status other than KEEL_OK refuses the whole */
    keel_status (*before_awake)(keel_world *stage, const keel_entity *tops, size_t n, void *user, keel_diags *d);
    void *user;
} keel_instantiate_opts;
keel_status keel_instantiate(keel_world *dst, const keel_world *tmpl, const keel_instantiate_opts *opts,
                             keel_entity *out, size_t cap, size_t *count, keel_diags *d);

/* Play mode. keel_world_play remembers the world as it is now (a deep copy: entities,
 * components, slots, names, hierarchy, fields, unknown components, settings and counters);
 * keel_world_stop puts all of it back exactly (a dump before play equals one after stop, the
 * revision included) as a new epoch: every handle taken before stop, the root's included,
 * is stale afterwards. Faults recorded while playing are kept. Both refuse with
 * InvalidOperation inside a callback or a step, play when already playing and stop when not.
 *
 * Example:
 *     keel_world *w = keel_world_new("level");
 *     keel_entity crate = KEEL_NO_ENTITY;
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_status st = keel_spawn(w, "Crate", KEEL_NO_ENTITY, NULL, &crate, NULL, &d);
 *     uint64_t rev = keel_world_revision(w);
 *     if (st == KEEL_OK) st = keel_world_play(w, &d);
 *     if (st == KEEL_OK) st = keel_destroy(w, crate, NULL, &d); // play breaks things
 *     if (st == KEEL_OK) st = keel_world_stop(w, &d);
 *     int failed = st != KEEL_OK || keel_world_entity_count(w) != 1 || keel_alive(w, crate) ||
 *                  keel_world_revision(w) != rev || !keel_find_name(w, "Crate");
 *     keel_diags_free(&d);
 *     keel_world_free(w);
 *     return failed;
 */
keel_status keel_world_play(keel_world *w, keel_diags *d);
keel_status keel_world_stop(keel_world *w, keel_diags *d);
bool keel_world_playing(const keel_world *w); /* between play and stop */

/* Lift: e's subtree taken out of play without being destroyed. Its entities are not alive to
 * lookups, queries, steps, dumps or saves (keel_alive is false, keel_find misses them), but no
 * hook runs and their handles, slots, records and versions are kept. keel_lift_restore puts
 * everything back exactly, in the same place in the hierarchy and run order (at the top level
 * when the parent is gone) and the same handles; keel_lift_discard removes it for good, as
 * keel_destroy would, each on_destroy once. Both free the lift. While a world has lifts,
 * keel_scene_save, keel_persist_save, keel_transfer and play/stop refuse (InvalidOperation),
 * and a kind with lifted components may not change its fields; keel_world_free discards them.
 * Refused inside a callback or step (InvalidOperation); NotFound / ProtectedEntity as for
 * keel_destroy. A restore is InvalidOperation when one of the subtree's UUIDs came alive
 * meanwhile (the lift stays open).
 *
 * Example:
 *     keel_world *w = keel_world_new("level");
 *     keel_entity boss = KEEL_NO_ENTITY;
 *     keel_lift *lift = NULL;
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_status st = keel_spawn(w, "Boss", KEEL_NO_ENTITY, NULL, &boss, NULL, &d);
 *     if (st == KEEL_OK) st = keel_lift_entity(w, boss, &lift, &d);
 *     int failed = st != KEEL_OK || keel_alive(w, boss) || keel_world_entity_count(w) != 0;
 *     if (st == KEEL_OK) st = keel_lift_restore(lift, &d);
 *     failed = failed || st != KEEL_OK || !keel_alive(w, boss);
 *     keel_diags_free(&d);
 *     keel_world_free(w);
 *     return failed;
 */
typedef struct keel_lift keel_lift;
keel_status keel_lift_entity(keel_world *w, keel_entity e, keel_lift **out, keel_diags *d);
keel_status keel_lift_restore(keel_lift *lift, keel_diags *d);
keel_status keel_lift_discard(keel_lift *lift, keel_diags *d);
size_t keel_world_lift_count(const keel_world *w); /* open lifts */

bool keel_alive(const keel_world *w, keel_entity e);  /* false for stale handles and KEEL_NO_ENTITY */
keel_entity keel_find(const keel_world *w, keel_uuid u);      /* O(1); root not found */
keel_entity keel_find_name(const keel_world *w, const char *name); /* first in run order */
keel_uuid keel_entity_uuid(const keel_world *w, keel_entity e);     /* nil when not alive, and for the root */
const char *keel_entity_name(const keel_world *w, keel_entity e);   /* NULL when not alive */
keel_entity keel_entity_parent(const keel_world *w, keel_entity e); /* KEEL_NO_ENTITY at top level */
bool keel_entity_enabled(const keel_world *w, keel_entity e);       /* its own flag */
bool keel_entity_active(const keel_world *w, keel_entity e);        /* it and all ancestors enabled */
size_t keel_entity_child_count(const keel_world *w, keel_entity e); /* root: top-level count */
/* The i-th child (root: top level). Walks on from the previous call's answer, so a loop
 * over i is O(1) a step until the next structural change. That answer is cached in the
 * world: unlike the other readers, this one must not run on one world from two threads
 * at once (the sibling walk below may). */
keel_entity keel_entity_child(const keel_world *w, keel_entity e, size_t i);
/* O(1) sibling walk (root: top level); KEEL_NO_ENTITY at the end:
 *   for (keel_entity c = keel_entity_first_child(w, e); c; c = keel_entity_next_sibling(w, c)) ... */
keel_entity keel_entity_first_child(const keel_world *w, keel_entity e);
keel_entity keel_entity_next_sibling(const keel_world *w, keel_entity e); /* none for the root or stale e */
/* Hierarchy pre-order walk (the run order), root excluded:
 *   for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) ... */
keel_entity keel_next(const keel_world *w, keel_entity prev);
/* Derived world transform, column-major 4x4 (parent world x local). Identity
 * when the entity has no core:transform. */
keel_status keel_world_matrix(const keel_world *w, keel_entity e, double out[16]);
/* The same, taken apart: position, rotation (unit quaternion x y z w, w >= 0) and scale (each
 * axis's length; x negative when the matrix mirrors). A parent's non-uniform scale under a
 * rotation shears, which these three cannot say: keel_world_matrix is the exact answer then.
 * NotFound (and identity) when e is not alive. */
keel_status keel_world_transform(const keel_world *w, keel_entity e, double position[3], double rotation[4],
                                 double scale[3]);

/* ======================================================================
 * Components (membership and slots)
 * ====================================================================== */

typedef struct keel_add_opts {
    uint32_t slot;           /* KEEL_SLOT_AUTO, or an explicit free slot (restores, loads) */
    const keel_node *body;   /* MAP of field values by name; NULL: all defaults */
    int version;             /* version `body` was written in; 0 = the kind's */
    bool strict;             /* an enum choice the kind no longer offers: error, not warning */
    /* For a host's own loader, which adds a whole scene before anything may look at it (keel's
     * scene and cooked readers do): kind rules hold only once every component is in, and awake
     * must not see a half-built world. Call keel_check_rules per entity and keel_awake_all once
     * everything is added; a world left between the two is not valid. */
    bool skip_rules;         /* multiplicity/requires/rejects checked later, by keel_check_rules */
    bool no_awake;           /* awake runs later, by keel_awake_all */
    const char *path;        /* diagnostics path prefix for body errors */
    const char *file;        /* diagnostics file */
} keel_add_opts;
#define KEEL_ADD_OPTS_INIT { KEEL_SLOT_AUTO, NULL, 0, false, false, false, NULL, NULL }

/* Adds a component. InvalidOperation: a second one-kind component, a slot other
 * than 0 for a one kind, an occupied slot, beyond max, no slot left (the next,
 * max + 1, would be KEEL_SLOT_AUTO), a missing requirement, a
 * rejected pair (either direction), a root-only kind off the root, a not-on-root
 * kind (core:transform) on the root. LimitExceeded: more than
 * 256 components on one entity, or a body a scene file could not hold (over 64 KiB as
 * saved; keel_set refuses a string that would make it so too). NotFound: a stale entity, a kind not registered.
 * `opts` NULL: KEEL_ADD_OPTS_INIT. */
keel_status keel_add(keel_world *w, keel_entity e, keel_kind_id k, const keel_add_opts *opts,
                     keel_comp *out, keel_cmd *inverse, keel_diags *d);
/* Adds an entry for a kind that is not registered (or written in a newer version
 * than the registered kind): key, version, slot and the body tree (copied; NULL:
 * empty). It runs nothing and refuses edits. InvalidArgument: a malformed key, a
 * body that is not a MAP, a version below 1; InvalidOperation: a registered kind at
 * or below its version (use keel_add), an occupied slot; LimitExceeded: a body past
 * the scene reader's limits (64 KiB in all, strings 64 KiB, collections 65,536 items,
 * 27 levels deep). */
keel_status keel_add_unknown(keel_world *w, keel_entity e, const char *key, int version,
                             uint32_t slot, const keel_node *body, keel_diags *d);
/* Removes by key and slot (known or unknown). A one kind may pass KEEL_SLOT_AUTO.
 * Removing a component another present one requires is InvalidOperation. The
 * inverse re-adds the saved body in the same slot. Its on_destroy runs first, or,
 * inside a callback transaction, at the commit (as keel_destroy's). */
keel_status keel_remove(keel_world *w, keel_entity e, const char *key, uint32_t slot,
                        keel_cmd *inverse, keel_diags *d);
/* Multiplicity, requires/rejects and root rules for e's whole stack. */
keel_status keel_check_rules(keel_world *w, keel_entity e, const char *path, keel_diags *d);
/* Runs awake for every component that has not had it (after a load). */
keel_status keel_awake_all(keel_world *w, keel_diags *d);

typedef struct keel_member {
    keel_kind_id kind;       /* KEEL_NO_KIND when unknown */
    const char *key;         /* always set */
    uint32_t slot;
    bool loaded;             /* false: unknown kind, body preserved */
    bool enabled;
    bool faulted;
    int version;             /* kind version (loaded) or the file's version (unknown) */
    uint64_t counter;        /* bumps on every write to this component */
    const keel_node *preserved; /* unknown only */
    uint64_t serial;         /* unique in the world, never reused: a component re-added in the same
                                slot has a new one (handles compare it to refuse a stale use) */
} keel_member;

/* The entity's membership list (root: its components), known and unknown entries, in
 * membership order; 0 for a stale entity. */
size_t keel_member_count(const keel_world *w, keel_entity e);
/* Fills `*out` with entry i; false (out untouched) for a stale entity or i past the end.
 * `key` and `preserved` are borrowed: valid until e's membership changes or the kind is
 * redeclared. */
bool keel_member_at(const keel_world *w, keel_entity e, size_t i, keel_member *out);
/* Finds by kind and slot; KEEL_SLOT_AUTO: the lowest slot. */
bool keel_get_comp(const keel_world *w, keel_entity e, keel_kind_id k, uint32_t slot, keel_comp *out);
bool keel_comp_alive(const keel_world *w, keel_comp c); /* the entity is alive and holds c (loaded) */
uint64_t keel_comp_serial(const keel_world *w, keel_comp c); /* keel_member.serial; 0 when not alive */
/* The record of a live component; NULL otherwise. Valid until the next
 * structural change to that kind's storage. */
void *keel_record(const keel_world *w, keel_comp c);
uint64_t keel_comp_counter(const keel_world *w, keel_comp c); /* keel_member.counter; 0 when not alive */
bool keel_comp_enabled(const keel_world *w, keel_comp c);     /* its own flag; false when not alive */
/* Whether c is faulted: a hook of it failed, and its hooks are skipped until its kind is
 * redeclared (hot reload) or keel_comp_clear_fault (NotFound / Unsupported as keel_get). */
bool keel_comp_faulted(const keel_world *w, keel_comp c);
keel_status keel_comp_clear_fault(keel_world *w, keel_comp c, keel_diags *d);
/* A disabled component runs no hooks; its fields can still be read and written.
 * NotFound and Unsupported as for keel_get. */
keel_status keel_comp_set_enabled(keel_world *w, keel_comp c, bool enabled, keel_cmd *inverse, keel_diags *d);

/* Reads a field (strings borrowed from the record). NotFound: a stale entity, no
 * such component or slot, a field index out of range; Unsupported: the component
 * is unknown (not loaded). keel_set and keel_reset answer the same. */
keel_status keel_get(const keel_world *w, keel_comp c, int field, keel_value *out, keel_diags *d);
/* Writes through the registry: check (type, finite, range, choices) -> write
 * -> validate hook (may reject; then the old value is back) -> counter and
 * world revision bump -> journal (when inside a step callback).
 * A readonly field is Unsupported, except from the component's own hooks.
 * `v` NULL, or of a type the field cannot take: InvalidArgument. Conversions it
 * does take: an INT into a float field; a FLOAT with an integral value into an
 * int field; any vector of the right width into vec/quat/color fields; a STRING
 * naming a choice into an enum field; a UUID STRING into an asset/entity field.
 * LimitExceeded: a string over 64 KiB, or one that makes the body a save writes larger
 * than 64 KiB (keel_scene_load would refuse it); the old value stays. */
keel_status keel_set(keel_world *w, keel_comp c, int field, const keel_value *v,
                     keel_cmd *inverse, keel_diags *d);
/* Back to the declared default; field -1 resets every field. */
keel_status keel_reset(keel_world *w, keel_comp c, int field, keel_diags *d);
/* The component's fields as a MAP node in declared order (transient and runtime fields
 * included only when `with_transient`: the scene form leaves them out); entity and asset
 * fields as UUID text. */
keel_node *keel_body_encode(const keel_world *w, keel_comp c, bool with_transient);

/* ======================================================================
 * Iteration and queries
 * ====================================================================== */

/* Dense per-kind storage: i in [0, count) gives owner, slot and record. Raw rows: the
 * scene root's components are among them (owner keel_world_root), and during a step (or
 * while a callback transaction is open) a component removed or destroyed stays until the
 * phase boundary (or the transaction's close) with owner KEEL_NO_ENTITY (skip those; its
 * record is dead). Queries never list either. */
/* Removal moves the last row into the hole: rows and record pointers are valid until the
 * next structural change to kind k. Past the end (or a kind this world never held): count 0,
 * owner KEEL_NO_ENTITY, slot 0, record NULL. */
size_t keel_storage_count(const keel_world *w, keel_kind_id k);
keel_entity keel_storage_owner(const keel_world *w, keel_kind_id k, size_t i);
uint32_t keel_storage_slot(const keel_world *w, keel_kind_id k, size_t i);
void *keel_storage_record(const keel_world *w, keel_kind_id k, size_t i);

/* Entities holding all of `kinds` (each at its lowest slot). The row set is
 * cached and rebuilt only after a structural change. */
typedef struct keel_query keel_query;
keel_query *keel_query_new(keel_world *w, const keel_kind_id *kinds, size_t n); /* NULL on OOM */
void keel_query_free(keel_query *q); /* NULL is a no-op */
size_t keel_query_update(keel_query *q);               /* refreshes when stale; row count */
keel_entity keel_query_entity(const keel_query *q, size_t row); /* KEEL_NO_ENTITY past the last row */
void **keel_query_column(const keel_query *q, size_t k); /* record pointers, one per row; NULL: k >= n */
/* The aligned fast path. When each queried kind's storage holds exactly the query's rows
 * in the same order (row r of every storage belongs to query row r: the usual case for
 * kinds added together and removed together), the rows come as a few contiguous runs of
 * records, one per storage page (64, 128, 256, ... rows). For run `chunk` (0, 1, ... while
 * it returns non-zero) the call gives the count of rows, the first query row in `*first`
 * and in base[k] kind k's first record; the next one is keel_kind_record_size(kinds[k])
 * bytes on. 0 when the rows are not aligned (then use keel_query_column) or past the end.
 * Valid after keel_query_update, until the next structural change. */
size_t keel_query_chunk(const keel_query *q, size_t chunk, void **base, size_t *first);
/* Whether keel_query_chunk gives runs, as of the last keel_query_update (false before it). */
bool keel_query_aligned(const keel_query *q);

/* ======================================================================
 * Lifecycle
 *
 * keel_step: start (components not yet started), fixed_update zero or more
 * times (accumulator, fixed step default 1/60 s), update, late_update.
 * Order: root first, then hierarchy pre-order, membership order within an
 * entity. Things spawned or added during a step first run in the next step.
 * Every hook call is a transaction: on failure its field writes and structural
 * changes are rolled back, the component is marked faulted (no more hooks), and
 * the failure is recorded once. The step goes on.
 * ====================================================================== */

/* InvalidOperation: called from inside a step; InvalidArgument: dt negative or not
 * finite. Hook failures do not fail the step: they are faults (keel_fault_at). */
keel_status keel_step(keel_world *w, double dt, keel_diags *d);
/* fixed_update runs at most 8 times a step; the rest of a long dt is dropped (no spiral of
 * death after a pause). A fixed_dt that is not finite and > 0 is ignored. */
void keel_world_set_fixed_dt(keel_world *w, double fixed_dt);
double keel_world_fixed_dt(const keel_world *w);       /* seconds; 1/60 until set */
bool keel_world_in_step(const keel_world *w);          /* inside keel_step (so inside its hooks) */
/* Whether a callback transaction of w is open (a hook of w is running, at any depth). While
 * one is, what would let a file or another world see state that may still roll back refuses:
 * keel_scene_dump, keel_scene_save, keel_cook and keel_persist_save are InvalidOperation
 * ("keel_scene_save refuses while a callback transaction is open"), keel_baseline_capture
 * returns NULL and keel_world_free does nothing. NULL: false. */
bool keel_world_in_callback(const keel_world *w);
uint64_t keel_world_frame(const keel_world *w);        /* completed steps */

typedef uint64_t keel_timer_id; /* 0: none; never reused in a process */

typedef struct keel_fault {
    keel_uuid entity;
    const char *kind;
    uint32_t slot;
    keel_phase phase;
    const char *message;
    keel_timer_id timer; /* a timer's failure: its id (kind "", entity its owner's or the root's); else 0 */
    const char *system;  /* a system's failure (keel_system_add, keel.system in Lua): its name; else NULL */
    const char *where;   /* "chunk:line" of the Lua code that raised it (a Lua callback); else NULL */
    size_t count;        /* how many failures it stands for (>= 1): see below */
    uint64_t frame;      /* keel_world_frame when it was recorded */
} keel_fault;
/* Every fault since the world was made, oldest first; never cleared. keel_fault_at: NULL
 * past the end. The same failure again in the same frame (same kind, system, phase,
 * message and where, as when a bug fails every component of a kind) is not listed again:
 * the first entry's count grows. The fault belongs to the world: the pointer is valid until the next fault
 * is recorded, its strings until keel_world_free. */
size_t keel_fault_count(const keel_world *w);
const keel_fault *keel_fault_at(const keel_world *w, size_t i);

/* ======================================================================
 * Timers: runtime state, never written to scene files or save games
 *
 * World time is the sum of the dt given to keel_step (keel_world_time). A
 * timer falls due `seconds` after it was made (keel_timer_every: every
 * `seconds` after that); due timers fire at the start of the update phase of
 * the step in which they fall due (after fixed_update, before any update
 * hook), in due-time order, ties in creation order. A repeating timer fires at
 * most once per step: when a step passes several of its periods it fires once
 * and its next due time is the first period end after now (the rest are
 * dropped, as fixed_update drops what is too far behind). A timer made while
 * timers fire waits for the next step. Each call is a transaction, as a hook:
 * a callback that returns non-OK has its field writes and structural changes
 * rolled back, the failure is recorded once as a fault whose `timer` is the
 * timer's id, the timer ends (a repeating one too, as a faulted component runs
 * no more hooks) and the step goes on.
 * A timer with an owner entity is cancelled when that entity is destroyed,
 * transferred to another world, or its world is freed; play mode's
 * keel_world_stop cancels every timer. Timers made or cancelled by a callback
 * that fails stay made or cancelled (timers are not journaled).
 *
 * Example:
 *     static int fired;
 *     static keel_status count_fire(const keel_timer_call *c)
 *     {
 *         (void)c;
 *         fired++;
 *         return KEEL_OK;
 *     }
 *     int main(void)
 *     {
 *         keel_diags d;
 *         keel_diags_init(&d);
 *         keel_init();
 *         keel_world *w = keel_world_new("Timers");
 *         keel_timer_id once = 0, tick = 0;
 *         double left = -1;
 *         keel_status st = keel_timer_after(w, 0.5, KEEL_NO_ENTITY, count_fire, NULL, &once, &d);
 *         if (st == KEEL_OK) st = keel_timer_every(w, 0.25, KEEL_NO_ENTITY, count_fire, NULL, &tick, &d);
 *         for (int i = 0; st == KEEL_OK && i < 4; i++) st = keel_step(w, 0.25, &d); // 1 s of world time
 *         int bad = st != KEEL_OK || fired != 5;                        // once, and tick 4 times
 *         bad |= keel_timer_remaining(w, once, &left) != KEEL_NOT_FOUND; // fired: gone
 *         bad |= keel_timer_remaining(w, tick, &left) != KEEL_OK || left != 0.25;
 *         bad |= keel_timer_cancel(w, tick) != KEEL_OK;
 *         keel_world_free(w);
 *         keel_diags_free(&d);
 *         keel_shutdown();
 *         return bad;
 *     }
 * ====================================================================== */

/* What a timer's callback is called with. */
typedef struct keel_timer_call {
    keel_world *world;
    keel_entity owner; /* KEEL_NO_ENTITY for a world timer */
    keel_timer_id id;
    void *user;
    keel_diags *diags; /* a callback that fails adds its message here */
} keel_timer_call;
/* Returns KEEL_OK, or any other status to fail (the call is rolled back, see above). */
typedef keel_status (*keel_timer_fn)(const keel_timer_call *call);

typedef struct keel_timer_desc {
    double seconds; /* once: finite >= 0; repeating: the period, finite > 0 */
    bool repeat;
    keel_entity owner; /* KEEL_NO_ENTITY: the world's; else a live entity of w */
    keel_timer_fn fn;
    void *user;
    void (*release)(void *user); /* optional: called once when the timer ends (fired once,
                                  * cancelled, owner gone, world freed or stopped), never
                                  * while its own callback runs */
} keel_timer_desc;

/* Makes a timer; *id (optional) its id. InvalidArgument: NULL w, desc or fn, bad seconds;
 * NotFound: the owner is not a live entity of w; InvalidOperation: w is being recorded and this
 * is outside a step (a recording cannot hold fn; hooks' timers are re-made by a replay). On
 * failure release is not called. */
keel_status keel_timer_add(keel_world *w, const keel_timer_desc *desc, keel_timer_id *id, keel_diags *d);
/* keel_timer_add, once / repeating, without a release function. */
keel_status keel_timer_after(keel_world *w, double seconds, keel_entity owner, keel_timer_fn fn, void *user,
                             keel_timer_id *id, keel_diags *d);
keel_status keel_timer_every(keel_world *w, double seconds, keel_entity owner, keel_timer_fn fn, void *user,
                             keel_timer_id *id, keel_diags *d);
/* NotFound when the timer has ended (fired once, cancelled, owner gone) or never was. A timer
 * may cancel itself from its callback. */
keel_status keel_timer_cancel(keel_world *w, keel_timer_id id);
/* Seconds until it is due (0 when due or firing); NotFound as keel_timer_cancel. */
keel_status keel_timer_remaining(const keel_world *w, keel_timer_id id, double *seconds);
/* Pending timers of w (those whose owner went are counted until the next step notices). */
size_t keel_timer_count(const keel_world *w);
double keel_world_time(const keel_world *w); /* the sum of every dt given to keel_step */

/* ======================================================================
 * Messages: runtime state, never written to scene files or save games
 *
 * keel_send queues a message to every component of one entity whose kind has
 * a KEEL_PHASE_ON_MESSAGE hook (membership order); keel_broadcast to every such
 * component of the world, in run order (the root first, then pre-order). The
 * data is copied at send, so the sender may reuse its buffer. Messages sent
 * during a phase are delivered at the end of that phase (after its systems,
 * C ones then Lua ones), in send order, C and Lua messages in one queue;
 * messages sent while delivering are delivered in the same pass, up to
 * 100,000 per pass: the rest are dropped with one LimitExceeded fault (kind
 * "message"). Messages sent outside a step are delivered at the start of the
 * next keel_step, before its first phase. A message to an entity destroyed
 * meanwhile is dropped silently; a disabled, inactive or faulted component
 * receives none. Each handler call is a transaction like any hook (a failure
 * rolls back, faults the component and is recorded). The hook reads the
 * message with keel_call_message(call): name, data/size, sender. A message sent from the Lua binding
 * reaches a C hook with data NULL and size 0 (its Lua table is for Lua hooks);
 * one sent from C reaches a Lua on_message with its bytes as a Lua string.
 *
 * Example:
 *     static int hits;
 *     static keel_status on_hit(const keel_call *c)
 *     {
 *         int amount = 0;
 *         const keel_message *m = keel_call_message(c);
 *         if (m->size == sizeof amount) memcpy(&amount, m->data, sizeof amount);
 *         hits += amount;
 *         return KEEL_OK;
 *     }
 *     int main(void)
 *     {
 *         keel_diags d;
 *         keel_diags_init(&d);
 *         keel_init();
 *         keel_kind_desc kd = { .key = "demo:target", .version = 1 };
 *         kd.hooks[KEEL_PHASE_ON_MESSAGE] = on_hit;
 *         keel_kind_id k = KEEL_NO_KIND;
 *         keel_status st = keel_kind_declare(&kd, &k, &d);
 *         keel_world *w = keel_world_new("Messages");
 *         keel_entity e = KEEL_NO_ENTITY;
 *         if (st == KEEL_OK) st = keel_spawn(w, "Target", KEEL_NO_ENTITY, NULL, &e, NULL, &d);
 *         if (st == KEEL_OK) st = keel_add(w, e, k, NULL, NULL, NULL, &d);
 *         int five = 5, two = 2;
 *         if (st == KEEL_OK) st = keel_send(w, e, "hit", &five, sizeof five, KEEL_NO_ENTITY, &d);
 *         if (st == KEEL_OK) st = keel_broadcast(w, "hit", &two, sizeof two, KEEL_NO_ENTITY, &d);
 *         int bad = hits != 0;                          // queued: nothing delivered yet
 *         if (st == KEEL_OK) st = keel_step(w, 1.0 / 60, &d); // delivered at the step's start
 *         bad |= st != KEEL_OK || hits != 7;
 *         keel_world_free(w);
 *         keel_diags_free(&d);
 *         keel_shutdown();
 *         return bad;
 *     }
 * ====================================================================== */

#define KEEL_MESSAGE_MAX_SIZE (64 * 1024) /* bytes of data */
#define KEEL_MESSAGE_MAX_PASS 100000      /* messages delivered in one pass */

typedef struct keel_message {
    const char *name;   /* never NULL */
    const void *data;   /* the copy made at send; NULL when size is 0 */
    size_t size;
    keel_entity sender; /* KEEL_NO_ENTITY when none */
    void *user;         /* a binding's own payload (the Lua binding: the message's table); else NULL */
} keel_message;

/* Queues a message to entity `to` of w. InvalidArgument: NULL w or name, an empty name, data
 * NULL with size > 0, size over KEEL_MESSAGE_MAX_SIZE; NotFound: `to` is not a live entity of
 * w. `sender`: any entity (given back as is), or KEEL_NO_ENTITY. */
keel_status keel_send(keel_world *w, keel_entity to, const char *name, const void *data, size_t size,
                      keel_entity sender, keel_diags *d);
/* Queues a message to every component with an on_message hook; the same refusals. */
keel_status keel_broadcast(keel_world *w, const char *name, const void *data, size_t size, keel_entity sender,
                           keel_diags *d);
/* The message an on_message hook call delivers (never NULL there); NULL for any other call. */
const keel_message *keel_call_message(const keel_call *call);
/* Messages queued and not yet delivered. */
size_t keel_message_count(const keel_world *w);

/* ======================================================================
 * Systems: C gameplay code over a query, per world
 *
 * keel_system_add registers a system with world w: `each` is called once per
 * entity holding every kind of `query` (each at its lowest slot; entities in
 * run order, pre-order; the scene root is not visited; the list is made
 * before the first call), `run` once per phase. A phase's systems run after its
 * component hooks, C systems before the Lua binding's keel.system ones, in
 * `after` order: a topological order by name (ties in the order added; a
 * name not added yet constrains once it is), a cycle refused with
 * InvalidArgument naming it. Adding a name again replaces that system (keeping
 * its place) and clears its fault. Disabled or inactive entities, disabled
 * or faulted components and components added during this step are skipped.
 * Each call is a transaction: when it returns non-OK, its keel_set writes and
 * structural changes roll back, the system is faulted (skipped until
 * keel_system_reset or added again), the failure is recorded once as a fault
 * whose `system` is its name, and the step goes on. call->records[i] is
 * valid during the call; a write straight into it is not journaled (write
 * with keel_set to have it rolled back).
 *
 * Example:
 *     typedef struct mover { double x, vx; } mover; // fields x, vx: float
 *     static keel_status move(const keel_system_call *c)
 *     {
 *         const mover *m = c->records[0];
 *         keel_value v = { .type = KEEL_T_FLOAT, .as.f = m->x + m->vx * c->dt };
 *         return keel_set(c->world, c->comps[0], 0, &v, NULL, c->diags);
 *     }
 *     int main(void)
 *     {
 *         keel_diags d;
 *         keel_diags_init(&d);
 *         keel_init();
 *         keel_field_desc f[] = { { .key = "x", .type = KEEL_T_FLOAT }, { .key = "vx", .type = KEEL_T_FLOAT } };
 *         keel_kind_desc kd = { .key = "demo:mover", .version = 1, .fields = f, .field_count = 2 };
 *         keel_kind_id k = KEEL_NO_KIND;
 *         keel_status st = keel_kind_declare(&kd, &k, &d);
 *         keel_world *w = keel_world_new("Systems");
 *         keel_entity e = KEEL_NO_ENTITY;
 *         keel_comp c = { 0 };
 *         if (st == KEEL_OK) st = keel_spawn(w, "Mover", KEEL_NO_ENTITY, NULL, &e, NULL, &d);
 *         if (st == KEEL_OK) st = keel_add(w, e, k, NULL, &c, NULL, &d);
 *         keel_value vx = { .type = KEEL_T_FLOAT, .as.f = 2 };
 *         if (st == KEEL_OK) st = keel_set(w, c, 1, &vx, NULL, &d);
 *         keel_system_desc sd = { .name = "demo:move", .phase = KEEL_PHASE_UPDATE, .query = &k,
 *                                 .query_count = 1, .each = move };
 *         if (st == KEEL_OK) st = keel_system_add(w, &sd, &d);
 *         for (int i = 0; st == KEEL_OK && i < 4; i++) st = keel_step(w, 0.5, &d);
 *         keel_value x = { 0 };
 *         int bad = st != KEEL_OK || keel_get(w, c, 0, &x, &d) != KEEL_OK || x.as.f != 4;
 *         keel_world_free(w);
 *         keel_diags_free(&d);
 *         keel_shutdown();
 *         return bad;
 *     }
 * ====================================================================== */

/* What a system's callback is called with. */
typedef struct keel_system_call {
    keel_world *world;
    keel_phase phase;
    double dt;
    keel_entity entity;         /* each: the entity visited; run: KEEL_NO_ENTITY */
    const keel_comp *comps;     /* each: one per queried kind, in query order; run: NULL */
    void *const *records;       /* each: their records, valid during the call; run: NULL */
    size_t count;               /* each: query_count; run: 0 */
    void *user;                 /* desc.user */
    keel_diags *diags;          /* a callback that fails adds its message here */
} keel_system_call;
/* Returns KEEL_OK, or any other status to fail (rolled back and faulted, see above). */
typedef keel_status (*keel_system_fn)(const keel_system_call *call);

typedef struct keel_system_desc {
    const char *name;             /* non-empty; copied */
    keel_phase phase;             /* START, FIXED_UPDATE, UPDATE or LATE_UPDATE */
    const keel_kind_id *query;    /* each: at least one kind; copied */
    size_t query_count;
    const char *const *after;     /* names of systems this one runs after; copied */
    size_t after_count;
    keel_system_fn each, run;     /* exactly one */
    void *user;
} keel_system_desc;

/* Adds (or replaces) a system of w. InvalidArgument: NULL w or desc, a bad name or phase,
 * not exactly one of each/run, each without a query, a query kind that is not declared, an
 * `after` cycle ("`after` makes a cycle: a -> b -> a"): then w's systems are as before.
 * InvalidOperation: called from one of w's callbacks. */
keel_status keel_system_add(keel_world *w, const keel_system_desc *desc, keel_diags *d);
/* NotFound: w has no such system. InvalidOperation: called from one of w's callbacks. */
keel_status keel_system_remove(keel_world *w, const char *name, keel_diags *d);
/* Clears the system's fault: it runs again from the next phase. NotFound: no such system. */
keel_status keel_system_reset(keel_world *w, const char *name, keel_diags *d);
/* Whether w's system `name` is faulted (false when there is none). */
bool keel_system_faulted(const keel_world *w, const char *name);
/* w's systems in run order across phases (start, fixed_update, update, late_update): the
 * name of the i-th, NULL past the end. */
size_t keel_system_count(const keel_world *w);
const char *keel_system_name(const keel_world *w, size_t i);

/* ======================================================================
 * Renderer snapshot: immutable, extracted from the world; unknown components
 * are ignored.
 *
 * Example:
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_world *w = NULL;
 *     keel_status st = keel_scene_load("scenes/lighting_lab.yaml", NULL, &w, &d);
 *     keel_snapshot *s = st == KEEL_OK ? keel_snapshot_extract(w) : NULL;
 *     keel_world_free(w); // the snapshot holds copies: it outlives the world
 *     for (size_t i = 0; s && i < s->drawable_count; i++)
 *         printf("draw at %g %g %g\n", s->drawables[i].world[12], s->drawables[i].world[13],
 *                s->drawables[i].world[14]);
 *     if (s) printf("%zu lights, camera: %s\n", s->light_count, s->has_camera ? "yes" : "no");
 *     if (st != KEEL_OK) report("lighting_lab.yaml", st, &d);
 *     keel_snapshot_free(s); // NULL is a no-op
 *     keel_diags_free(&d);
 *     return st != KEEL_OK || !s;
 * ====================================================================== */

typedef struct keel_snap_drawable {
    keel_uuid entity;
    double world[16];
    keel_uuid mesh, material;
    double color[4];
    double metallic, roughness;
    bool casts_shadow;
} keel_snap_drawable;

typedef enum keel_light_type { KEEL_LIGHT_POINT = 0, KEEL_LIGHT_SPOT, KEEL_LIGHT_DIRECTIONAL } keel_light_type;

typedef struct keel_snap_light {
    keel_uuid entity;
    keel_light_type type;
    double world[16];
    double color[4];
    double intensity, range, inner_angle, outer_angle;
} keel_snap_light;

typedef struct keel_snapshot {
    keel_snap_drawable *drawables;
    size_t drawable_count;
    keel_snap_light *lights;
    size_t light_count;
    bool has_camera;
    keel_uuid camera_entity;
    double camera_world[16];
    int camera_projection;         /* index into core:camera's projection choices */
    double fov, near_plane, far_plane;
    double ambient[4];
} keel_snapshot;

keel_snapshot *keel_snapshot_extract(const keel_world *w); /* NULL on OOM */
void keel_snapshot_free(keel_snapshot *s);                /* NULL is a no-op */

/* Built-in record structs (match the kinds' field order and the layout rule). */
typedef struct keel_transform {
    double position[3];
    double rotation[4];
    double scale[3];
} keel_transform;

/* ======================================================================
 * Files: limits, assets, scenes, cooked scenes, save games
 *
 * Loaders publish a world only when there is no error (`*out` stays NULL);
 * warnings (unknown kinds, enum choices) come with a world. IOError: the file
 * system; LimitExceeded: a keel_limits bound; otherwise the earliest failing
 * stage's code (ParseError for the document itself; see DESIGN.md).
 *
 * Example:
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_world *w = NULL; // stays NULL when the load fails
 *     keel_status st = keel_scene_load("scenes/demo.yaml", NULL, &w, &d);
 *     if (st == KEEL_OK) st = keel_rename(w, keel_find_name(w, "Floor"), "Ground", NULL, &d);
 *     if (st == KEEL_OK) st = keel_scene_save(w, "demo_edited.yaml", &d);
 *     if (d.count) report("demo.yaml", st, &d); // errors, or a good load's warnings
 *     keel_world_free(w);
 *     keel_diags_free(&d);
 *     return st != KEEL_OK;
 * ====================================================================== */

typedef struct keel_limits {
    size_t document_size;        /* 64 MiB */
    size_t entities;             /* 1,000,000 */
    size_t components_per_entity;/* 256 */
    size_t body_size;            /* 64 KiB encoded */
    size_t string_length;        /* 64 KiB */
    size_t nesting_depth;        /* 32 */
    size_t hierarchy_depth;      /* 256 */
    size_t collection_length;    /* 65,536 */
} keel_limits;
keel_limits keel_limits_default(void); /* the values above */

typedef struct keel_assets keel_assets;
/* assets.yaml: a list of { uuid, path, type }. */
keel_status keel_assets_load(const char *path, keel_assets **out, keel_diags *d);
/* The same from `len` bytes of text (no NUL needed); `file` (may be NULL) names it in
 * diagnostics. Both: ParseError for malformed YAML, a bad entry, a bad or nil uuid, a
 * duplicate uuid (each bad entry listed); LimitExceeded past keel_limits_default(); load
 * adds IOError. `*out` is set only on success; the caller frees it with keel_assets_free. */
keel_status keel_assets_parse(const char *text, size_t len, const char *file, keel_assets **out, keel_diags *d);
void keel_assets_free(keel_assets *a); /* NULL is a no-op */
bool keel_assets_has(const keel_assets *a, keel_uuid u);           /* false for a NULL manifest */
/* NULL when absent; borrowed: valid until keel_assets_free. */
const char *keel_assets_path(const keel_assets *a, keel_uuid u);
/* The manifest a scene uses unless told otherwise: "assets.yaml" in the scene's directory, when
 * that file exists and is not the scene itself. A malloc'd path (caller frees), or NULL. */
char *keel_assets_beside(const char *scene_path);

/* How far a load has got, for a status line (keel_load_opts.progress). */
typedef struct keel_load_progress {
    const char *file; /* keel_load_opts.file (keel_scene_load's path); NULL when none was given */
    size_t bytes;     /* of the text read so far */
    size_t total;     /* the text's size in bytes */
    size_t entities;  /* records of `entities` built so far (each is built as soon as it is read) */
    bool done;        /* the last call of this load */
} keel_load_progress;
typedef void (*keel_load_progress_fn)(void *ctx, const keel_load_progress *p);

typedef struct keel_load_opts {
    keel_limits limits;
    bool strict;                 /* warnings about enums/assets become errors */
    const keel_assets *assets;   /* NULL: asset references are not checked */
    const char *file;            /* name used in diagnostics (keel_scene_parse) */
    bool no_awake;               /* a template (keel_instantiate's): awake never runs in the world, not at
                                  * the load, nor for an add or a component hot reload adopts */
    /* Called by keel_scene_parse and keel_scene_load: once as reading starts (bytes 0), after
     * every 64 KiB or so of text (bytes and entities never go down), and once with done set when
     * the world is built, before awake runs, or when the load stops early: bytes is then total
     * unless the YAML itself was refused. A cooked file gets only the first and the last. It may
     * print; it must not touch the world being loaded (there is none yet). NULL: none. */
    keel_load_progress_fn progress;
    void *progress_ctx;
} keel_load_opts;
/* Default limits, not strict, no assets, no file, the process's default progress hook. */
keel_load_opts keel_load_opts_default(void);
/* Sets the progress hook (and its ctx) that keel_load_opts_default() gives from now on; NULL:
 * none, as at the start. Process-wide: set it before loads start on other threads. The keel
 * program sets its terminal status line, so keel.load shows it too.
 * Example:
 *     static void show(void *ctx, const keel_load_progress *p)
 *     {
 *         size_t *calls = ctx;
 *         ++*calls;
 *         if (p->done) printf("%s: %zu of %zu bytes, %zu entities\n", p->file, p->bytes, p->total, p->entities);
 *     }
 *
 *     int main(void)
 *     {
 *         if (keel_init() != KEEL_OK) return 1;
 *         size_t calls = 0;
 *         keel_load_opts o = keel_load_opts_default();
 *         o.progress = show; // this load only; keel_load_progress_default(show, &calls) for every one
 *         o.progress_ctx = &calls;
 *         keel_world *w = NULL;
 *         keel_status st = keel_scene_load("scenes/demo.yaml", &o, &w, NULL);
 *         keel_world_free(w);
 *         keel_shutdown();
 *         return st != KEEL_OK || calls < 2;
 *     }
 */
void keel_load_progress_default(keel_load_progress_fn fn, void *ctx);

/* Parse + validate + build + resolve + check + awake; publishes a new world or
 * returns every diagnostic and no world. Never runs code from the file. NULL text: InvalidArgument. */
keel_status keel_scene_parse(const char *text, size_t len, const keel_load_opts *o,
                             keel_world **out, keel_diags *d);
/* Reads a YAML scene or a cooked file (told apart by the KEELCOOK magic).
 * `o` NULL: keel_load_opts_default(). NULL path: InvalidArgument. */
keel_status keel_scene_load(const char *path, const keel_load_opts *o, keel_world **out, keel_diags *d);
/* Canonical YAML text (malloc'd, NUL-terminated; the caller frees it). InvalidOperation while a
 * callback transaction of w is open (keel_world_in_callback), as keel_scene_save. */
keel_status keel_scene_dump(const keel_world *w, char **out, size_t *len, keel_diags *d);
/* Atomic: temp file beside `path`, write, fsync, rename, fsync the directory. NULL path: InvalidArgument. */
keel_status keel_scene_save(const keel_world *w, const char *path, keel_diags *d);
/* Writes `len` bytes to `path` atomically (the helper behind every save). */
keel_status keel_write_atomic(const char *path, const void *data, size_t len, keel_diags *d);
/* The whole file into `*out` (malloc'd, NUL-terminated; the caller frees it) and its length
 * into `*len` (`len` may be NULL). IOError: cannot open or read; LimitExceeded: more than
 * `max` bytes. `*out` is untouched on failure. `path` must not be NULL. */
keel_status keel_read_file(const char *path, size_t max, char **out, size_t *len, keel_diags *d);

/* Cooked binary scene (see core/files/COOKED.md). keel_cook mallocs `*out` (the caller
 * frees it; NULL on failure); NULL w/out/len is InvalidArgument, an unknown
 * (undeclared) component Unsupported, an entity reference outside the scene or an
 * asset not in `assets` (or no `assets` at all) NotFound. keel_cook_read: `o` NULL
 * means defaults; bad bytes are ParseError. keel_cook: a kind requiring an editor_only/nosave one: InvalidOperation.
 * Example:
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_assets *a = NULL;
 *     keel_world *w = NULL, *back = NULL;
 *     void *data = NULL;
 *     size_t len = 0;
 *     keel_status st = keel_assets_load("scenes/assets.yaml", &a, &d);
 *     if (st == KEEL_OK) st = keel_scene_load("scenes/lighting_lab.yaml", NULL, &w, &d);
 *     if (st == KEEL_OK) st = keel_cook(w, a, &data, &len, &d);
 *     if (st == KEEL_OK) st = keel_write_atomic("lab.cooked", data, len, &d);
 *     if (st == KEEL_OK) st = keel_scene_load("lab.cooked", NULL, &back, &d);
 *     if (st != KEEL_OK) report("cook", st, &d);
 *     free(data);
 *     keel_world_free(back);
 *     keel_world_free(w);
 *     keel_assets_free(a);
 *     keel_diags_free(&d);
 *     return st != KEEL_OK;
 */
keel_status keel_cook(const keel_world *w, const keel_assets *assets, void **out, size_t *len, keel_diags *d);
/* Loads a cooked scene from memory (`data` is only read: the world copies what it keeps).
 * `*out` is NULL unless OK; InvalidArgument: NULL out, or NULL data with len > 0. */
keel_status keel_cook_read(const void *data, size_t len, const keel_load_opts *o, keel_world **out, keel_diags *d);

/* Save games: a running world as a difference from its authored baseline.
 * Example:
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_world *w = NULL, *fresh = NULL;
 *     keel_status st = keel_scene_load("scenes/demo.yaml", NULL, &w, &d);
 *     keel_baseline *base = st == KEEL_OK ? keel_baseline_capture(w) : NULL; // before play
 *     if (st == KEEL_OK) st = keel_destroy(w, keel_find_name(w, "Floor"), NULL, &d); // play
 *     keel_slot_info info = { .title = "Arena", .play_seconds = 42 }, got = { 0 };
 *     if (st == KEEL_OK) st = keel_persist_save(w, base, "slot1.sav", &info, &d);
 *     if (st == KEEL_OK) st = keel_persist_info("slot1.sav", &got, &d); // for a load menu
 *     if (st == KEEL_OK) st = keel_scene_load("scenes/demo.yaml", NULL, &fresh, &d);
 *     if (st == KEEL_OK) st = keel_persist_load(fresh, "slot1.sav", &d); // all or nothing
 *     if (st == KEEL_OK && keel_find_name(fresh, "Floor")) st = KEEL_INVALID_OPERATION;
 *     if (st != KEEL_OK) report("slot1.sav", st, &d);
 *     keel_slot_info_free(&got);
 *     keel_baseline_free(base);
 *     keel_world_free(fresh);
 *     keel_world_free(w);
 *     keel_diags_free(&d);
 *     return st != KEEL_OK;
 */
typedef struct keel_baseline keel_baseline;
/* NULL for a NULL world, and while a callback transaction of w is open (keel_world_in_callback). */
keel_baseline *keel_baseline_capture(const keel_world *w);
void keel_baseline_free(keel_baseline *b);                 /* NULL is a no-op */

typedef struct keel_slot_info {
    char *title;
    int64_t saved_at;         /* unix seconds */
    double play_seconds;
    keel_node *fields;        /* the game's own fields: a MAP of scalars, or NULL */
} keel_slot_info;
void keel_slot_info_free(keel_slot_info *i); /* NULL is a no-op; leaves it zeroed */

/* `info` NULL: no title; saved_at 0: now. InvalidArgument: a NULL world, base or
 * path, or a baseline of another scene; LimitExceeded: the state is too large;
 * InvalidOperation: a callback transaction of w is open (keel_world_in_callback).
 * info->fields that is not a MAP of scalars (a SEQ, even empty): InvalidArgument. */
keel_status keel_persist_save(const keel_world *w, const keel_baseline *base, const char *path,
                              const keel_slot_info *info, keel_diags *d);
/* Applies a save over `w` (the same scene freshly loaded); all or nothing.
 * InvalidArgument: NULL w or path; InvalidOperation: during a step; IOError;
 * ParseError: not a keel save, or damaged; NotFound, InvalidArgument or
 * InvalidOperation: the save does not fit `w` (another scene; entities missing,
 * or spawned ones already there). */
keel_status keel_persist_load(keel_world *w, const char *path, keel_diags *d);
/* Reads only the slot's info; `*out` is zeroed first and left empty on failure. */
keel_status keel_persist_info(const char *path, keel_slot_info *out, keel_diags *d);

/* Saves off the caller's thread (design/saving.md). The call captures the committed world at once
 * (a copy of its records: no encoding, no I/O) and a worker thread encodes the copy and writes it
 * atomically, as keel_scene_save / keel_persist_save would have at the call; the world may change
 * freely meanwhile. Refused at the call (no job, `*out` NULL) as the synchronous saves are:
 * InvalidArgument (NULL argument, a baseline of another scene, bad details), InvalidOperation (a
 * callback transaction is open, entities are lifted, or a job to the same file is still pending:
 * a synchronous save there is refused too). The save's own errors (IOError, ...) come only from
 * keel_job_done / keel_job_wait. Jobs on different files run at once. A persist job holds its
 * own reference to `base` (keel_baseline_free may come first). Kind declarations wait for
 * running jobs; jobs still running when the program exits are finished first. The capture's
 * memory is kept by the world between saves (about the size of its records and tables, freed
 * with the world), so later saves copy into pages already in use instead of fresh ones.
 * Example:
 *     keel_diags d;
 *     keel_diags_init(&d);
 *     keel_world *w = NULL;
 *     keel_job *job = NULL;
 *     keel_status st = keel_scene_load("scenes/demo.yaml", NULL, &w, &d);
 *     if (st == KEEL_OK) st = keel_save_async(w, "demo_async.yaml", &job, &d);
 *     if (st == KEEL_OK) st = keel_destroy(w, keel_find_name(w, "Floor"), NULL, &d); // not in the file
 *     keel_status done = KEEL_OK;
 *     while (st == KEEL_OK && !keel_job_done(job, &done, &d)) { } // a frame's work goes here
 *     if (st == KEEL_OK) st = done;
 *     if (st != KEEL_OK) report("demo_async.yaml", st, &d);
 *     keel_job_free(job);
 *     keel_world_free(w);
 *     keel_diags_free(&d);
 *     return st != KEEL_OK;
 */
typedef struct keel_job keel_job;
keel_status keel_save_async(const keel_world *w, const char *path, keel_job **out, keel_diags *d);
keel_status keel_persist_save_async(const keel_world *w, const keel_baseline *base, const char *path,
                                    const keel_slot_info *info, keel_job **out, keel_diags *d);
/* false while the job writes; then true, with the save's status in `*status` (may be NULL) and
 * a copy of its diagnostics appended to d (every call). A NULL job is done with InvalidArgument. */
bool keel_job_done(keel_job *j, keel_status *status, keel_diags *d);
/* Blocks until the job is done; returns its status (diagnostics as keel_job_done). */
keel_status keel_job_wait(keel_job *j, keel_diags *d);
const char *keel_job_path(const keel_job *j); /* as given to the call */
/* Lets go of the handle; a job still writing finishes on its own. NULL is a no-op. */
void keel_job_free(keel_job *j);
/* Blocks until every pending job taken from w (NULL: from any world) is done. keel_world_close
 * calls it. */
void keel_jobs_wait(const keel_world *w);

/* Save games as text (design/saving.md): `keel_save: 1`, details (title, saved_at, play_seconds,
 * the scene UUID, fields), spawned entities whole, destroyed UUIDs, changed entities (only what
 * differs: name, enabled, parent, removed kind[slot]s, per kind[slot] the fields that differ or a
 * component added whole) and recorded child orders. A slot dumped and cooked back is the same
 * bytes. keel_persist_dump: what keel_persist_save would write, as text (saved_at 0: now);
 * keel_persist_dump_slot: a slot file's text; keel_persist_load_text: as keel_persist_load, from
 * text (ParseError with file:line:col for malformed text, then the same checks, all or nothing);
 * keel_persist_cook_text: text to a slot file, written atomically; keel_persist_format_text: the
 * canonical text of a text (keel fmt). `*out` is malloc'd and NUL-terminated. */
keel_status keel_persist_dump(const keel_world *w, const keel_baseline *base, const keel_slot_info *info, char **out,
                              size_t *len, keel_diags *d);
keel_status keel_persist_dump_slot(const char *path, char **out, size_t *len, keel_diags *d);
keel_status keel_persist_load_text(keel_world *w, const char *text, size_t len, const char *file, keel_diags *d);
keel_status keel_persist_cook_text(const char *text, size_t len, const char *file, const char *path, keel_diags *d);
keel_status keel_persist_format_text(const char *text, size_t len, const char *file, char **out, size_t *out_len,
                                     keel_diags *d);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

/* The optional parts have their own headers: keel_merge.h (the three-way scene merge) and
 * keel_net.h (replication over ENet; absent from a KEEL_NET=OFF build). */

#ifdef __cplusplus
}
#endif
#endif /* KEEL_H */
