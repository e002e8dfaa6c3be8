/* lua_internal.h — internals shared by the files of the Lua module keel.core (not API). */
#ifndef KEEL_LUA_INTERNAL_H
#define KEEL_LUA_INTERNAL_H

#include <stdbool.h>
#include <string.h>

#include <lua.h>
#include <lauxlib.h>

#include "keel.h"
#include "lua_host.h"
#include "bind.h" /* the one core header the bindings include */

#define KEEL_LUA_WORLD "keel.World"
#define KEEL_LUA_ENTITY "keel.Entity"
#define KEEL_LUA_COMPONENT "keel.Component"
#define KEEL_LUA_ITER "keel.Query"
#define KEEL_LUA_COMMAND "keel.Command"
#define KEEL_LUA_ERROR "keel.Error"

#define KEEL_LUA_MAX_DEPTH 16 /* callbacks nested inside callbacks */
/* A general path kept out of its hot path's function (which then needs no big frame); a hot
 * path's piece kept in it (no call, no frame) even where the compiler would not inline it. */
#if defined(__GNUC__)
#define KEEL_LUA_NOINLINE __attribute__((noinline))
#define KEEL_LUA_INLINE inline __attribute__((always_inline))
#else
#define KEEL_LUA_NOINLINE
#define KEEL_LUA_INLINE inline
#endif
#define KEEL_LUA_MEMO_KEYS 16 /* field names w:step keeps on its stack for the hooks it runs */
#define KEEL_LUA_MAX_FIELDS 1024 /* fields of one Lua kind (more: LimitExceeded) */

/* ---- for other binding files (lua_persist.c) ---- */

int keel_lua_open_persist(lua_State *L); /* pushes the `persist` table */
/* The keel_world of a World argument (raises when it is not one, or closed). */
keel_world *keel_lua_checkworld(lua_State *L, int idx);
/* Pushes nil and an error object built from `d`; returns 2. Frees d's contents. */
int keel__lua_fail(lua_State *L, keel_diags *d);
/* Raises an error object built from `d` (code `s` when d holds no error).
 * Frees d's contents first, so nothing leaks across the longjmp. */
int keel__lua_raise(lua_State *L, keel_status s, keel_diags *d);
/* Keel strings are C strings: a Lua string (at idx) holding a NUL byte would be cut short there. */
static inline bool keel__lua_has_nul(lua_State *L, int idx)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    return strlen(s) != len;
}
/* Pushes d's diagnostics as an array of { code, message, path, file, line, col, severity }. */
void keel__lua_push_diags(lua_State *L, const keel_diags *d);
/* Raises an error object with one diagnostic. */
int keel__lua_raisef(lua_State *L, keel_status s, const char *fmt, ...);
/* After a core call: when s failed, frees *inv (unless NULL) and raises d's error; else frees d's contents. */
static inline void keel__lua_check(lua_State *L, keel_status s, keel_diags *d, keel_cmd *inv)
{
    if (s != KEEL_OK) {
        if (inv) keel_cmd_free(inv);
        keel__lua_raise(L, s, d);
    }
    if (d->items || d->count || d->errors || d->warnings) keel_diags_free(d); /* most calls add nothing */
}

/* ---- userdata types and argument errors ---- */

/* One per userdata type. Its metatable is kept in the registry under the struct's address
 * and holds `[address] = true`: checking a handle is a lua_rawgetp on its metatable, not
 * luaL_testudata's lookup by name (hashed and compared on every call).
 * Every World has its own copies of the Entity and Component metatables (user values 3 and 4)
 * holding `[1] = the World`: a handle reaches and keeps alive its World through its
 * metatable, so handles carry no user value (16 bytes less, and the GC marks them at once
 * instead of queueing each one to traverse). */
typedef struct keel_lua_type {
    const char *name; /* "keel.World": the metatable's __name and the word in misuse errors */
} keel_lua_type;
extern const keel_lua_type keel__lua_mt_world, keel__lua_mt_entity, keel__lua_mt_comp, keel__lua_mt_cmd,
    keel__lua_mt_iter;
/* Makes (or, opened again, fetches) the metatable of type t and leaves it on top. */
void keel__lua_newmt(lua_State *L, const keel_lua_type *t);
void keel__lua_setmt(lua_State *L, const keel_lua_type *t); /* on the value on top */
void *keel__lua_testudata(lua_State *L, int idx, const keel_lua_type *t); /* NULL when not one */
/* The userdata at idx; raises InvalidArgument "bad argument #idx (keel.X expected, got TYPE)". */
void *keel__lua_checkudata(lua_State *L, int idx, const keel_lua_type *t);
/* Raises InvalidArgument "bad argument #idx (<fmt...>)": an error object, where
 * luaL_argerror would raise a string. */
int keel__lua_argerror(lua_State *L, int idx, const char *fmt, ...);
/* Pushes a userdata owning one malloc'd block (*box, NULL until the caller stores it): a
 * raise that unwinds before the caller frees it leaves it to the collector, not leaked. */
void **keel__lua_newbox(lua_State *L);
/* Pushes the World udata of the Entity or Component handle at idx; returns its index. */
int keel__lua_push_handle_world(lua_State *L, int idx);

/* ---- per lua_State context ---- */

typedef struct keel_lua_kind keel_lua_kind;

/* A kind's field names as this state's interned Lua strings (lua_component.c): a handle's
 * `c.x` finds its field by comparing the key's address, not its characters. Fields named like
 * a handle's methods or properties are left out (those names mean the method or property). */
typedef struct keel_lua_fields {
    uint64_t stamp;       /* keel__kind_declarations() + 1 when built; 0: not built */
    uint32_t n;
    const void **names;   /* lua_topointer of each name (a string object anchored in the registry
                           * table at ctx->names_ref, so no other object has that address) */
    int *index;           /* the field of names[i] */
    uint32_t *offsets;    /* by field index: its offset in the record */
    unsigned char *types; /* by field index: its keel_type */
} keel_lua_fields;

/* One per lua_State that opened keel.core. Lives until the state is closed and
 * every kind it declared is gone (refs counts both), so trampolines of kinds
 * declared from a closed state can see `alive == false` and do nothing. */
typedef struct keel_lua_ctx {
    lua_State *main;
    bool alive;
    int refs;
    int worlds_ref;    /* registry: { [lightuserdata keel_world*] = World udata }, weak values */
    int systems_ref;   /* registry: the declared systems, in declaration order (lua_system.c) */
    int loading_ref;   /* during keel.load/parse: worlds wrapped by hooks (candidates), else LUA_NOREF */
    int depth;         /* callback nesting */
    int migrating;     /* migrate steps running (they know no world: every close refuses meanwhile) */
    keel_world *self_w[KEEL_LUA_MAX_DEPTH];
    keel_comp self_c[KEEL_LUA_MAX_DEPTH];
    keel_lua_kind *self_k[KEEL_LUA_MAX_DEPTH];
    bool self_gone[KEEL_LUA_MAX_DEPTH]; /* an on_destroy run at the commit: its component is gone */
    bool self_outside[KEEL_LUA_MAX_DEPTH]; /* a system's `each`: not its component's own hook (readonly holds) */
    keel_lua_kind **shadows; /* by kind id: self machinery of kinds not declared from this state (systems) */
    size_t shadow_cap;
    keel_entity *each_list; /* a system's `each`: the entities of its pass (lua_system.c), reused */
    size_t each_cap;
    bool each_busy;         /* in use by the pass under way (a nested one takes a userdata) */
    /* kept passes (lua_pass.c): each_list is reused while its world's structure holds; a stamp
     * also names the count of worlds freed, since a freed world's address can come back */
    uint64_t world_frees; /* worlds this state's extension saw freed */
    keel__pass_stamp each_st;
    uint64_t each_frees;
    size_t each_count;
    bool each_kept;                   /* each_list holds each_count entities of each_st's world and structure */
    int self_tab[KEEL_LUA_MAX_DEPTH]; /* registry refs of the self table in use per depth */
    int self_mt[KEEL_LUA_MAX_DEPTH];  /* registry refs of the per-depth self metatables */
    keel_lua_fields *fields;          /* by kind id (lua_component.c) */
    size_t fields_cap;
    int names_ref;                    /* registry: { [field name] = true }, keeps those strings */
    struct { const char *key; keel_kind_id k; uint64_t stamp; } kind_memo[64]; /* kind keys by address */
    keel__ext_type ext;               /* what this state attaches to every world it wraps (lua_system.c) */
    int http_open;                    /* this state's open channel servers (channel/lua_http.c) */
    struct keel_lua_timers *timers;   /* lua_timer.c: its timers' records and functions, freed with the ctx */
} keel_lua_ctx;

/* A Lua-declared kind's hooks and self machinery (lua_hook.c; a system's pass reads it inline). */
struct keel_lua_kind {
    keel_lua_ctx *ctx;
    int hook[KEEL_PHASE_COUNT_]; /* registry refs, LUA_NOREF when absent */
    int validate, migrate, keys;
    int derived;                 /* registry ref: { [2f+1] = get, [2f+2] = set } of derived fields, or LUA_NOREF */
    int renames;                 /* registry ref: the spec's renames table, or LUA_NOREF */
    int self_tab[KEEL_LUA_MAX_DEPTH];
    int filled[KEEL_LUA_MAX_DEPTH]; /* kinds with entity fields: what each one's self got (see fill_self) */
    size_t nfields;
    size_t *offsets;             /* filled on first call (from the registry) */
    const keel_kind_desc *kd;    /* the registry's description (valid while this kind is alive) */
    bool ready, has_entity, dead;
    bool shadow;                 /* a kind this state did not declare (see keel__lua_self_kind) */
    int busy;                    /* calls running: a replaced kind is freed after the last */
};

void keel__lua_ctx_release(keel_lua_ctx *ctx);
keel_lua_ctx *keel__lua_upctx(lua_State *L); /* the ctx upvalue of module functions */
keel_lua_ctx *keel__lua_state_ctx(lua_State *L); /* L's own, from its registry */

/* The state that entered keel last (from a binding function); trampolines run on it. */
typedef struct keel_lua_frame {
    lua_State *L;
    keel_lua_ctx *ctx;
    keel_world *w;     /* the world whose entity cache sits at cache_idx, or NULL */
    int cache_idx;
    int memo_idx;      /* w:step reserves 3 stack slots: the last depth-0 hook's function, self, keys, */
                       /* then KEEL_LUA_MEMO_KEYS slots for its field names (when it has no more), */
    void *tag;         /* then one holding this lightuserdata: proof that those indices are ours */
    void *memo_kind;
    unsigned long memo_gen; /* keel__lua_kinds_freed when memo_kind was taken (addresses get reused) */
    int memo_phase;
} keel_lua_frame;
extern keel_lua_frame keel__lua_cur;
/* True when a trampoline runs directly under w:step's C frame (keel__lua_world_run): its reserved
 * slots are valid, the World is at 1 and its entity cache at cache_idx. */
static inline bool keel__lua_in_step_frame(lua_State *L)
{
    return keel__lua_cur.L == L && keel__lua_cur.tag && keel__lua_cur.memo_idx &&
           lua_touserdata(L, keel__lua_cur.memo_idx + 3 + KEEL_LUA_MEMO_KEYS) == keel__lua_cur.tag;
}
/* Bumps on every entry into the core from Lua: a trampoline whose callback made no entry
 * knows its record did not move. */
extern unsigned long keel__lua_entries;
extern unsigned long keel__lua_kinds_freed;

/* Whether L runs a __gc finalizer now (Lua 5.4.4 on answers -1 to lua_gc there). A finalizer runs
 * at whatever allocation set the collector off, often in the middle of a call into keel that holds
 * a world, a record or a kind's description across that allocation: what would free those (w:close,
 * w:stop, keel.kind) refuses there. */
static inline bool keel__lua_in_finalizer(lua_State *L) { return lua_gc(L, LUA_GCISRUNNING, 0) < 0; }

/* Every binding function that can run hooks (through the core) brackets the call. */
#define KEEL_LUA_ENTER(L_, ctx_) \
    keel_lua_frame saved_frame_ = keel__lua_cur; \
    keel__lua_entries++; \
    keel__lua_cur = (keel_lua_frame){ .L = (L_), .ctx = (ctx_) }
#define KEEL_LUA_LEAVE() (keel__lua_cur = saved_frame_)

/* ---- World ---- */

typedef struct keel_lua_world {
    keel_world *w;     /* NULL once closed */
    keel_lua_ctx *ctx;
    bool owned;        /* false: a world made by C code, borrowed */
    uint64_t epoch;
    size_t cache_inserts;
    uint32_t *gens;    /* by entity index: the generation of the cached handle, 0 none */
    size_t gens_cap;
    size_t spawn_cap;  /* the array part of the spawn handles' table (World user value 5; lua_spawn.c) */
    size_t comp_inserts, comp_kept; /* the component handle caches (lua_component.c): since and at the last sweep */
    struct keel_lua_qcache *queries; /* w:query's kept queries (lua_query.c) */
    size_t query_count;
    unsigned long query_clock;
    char *path;              /* w.path: the scene file it was loaded from or adopted (NULL: none) */
    uint64_t saved_revision; /* w.saved_revision: the revision at that load or save, else at its making */
} keel_lua_world;

keel_lua_world *keel__lua_checklw(lua_State *L, int idx);
/* Pushes a World userdata for `w` (owning it when `owned`). */
void keel__lua_push_world(lua_State *L, keel_lua_ctx *ctx, keel_world *w, bool owned);
/* Pushes the World userdata of `w` (from the weak map; wraps it borrowed when absent). */
void keel__lua_push_world_of(lua_State *L, keel_lua_ctx *ctx, keel_world *w);
void keel__lua_open_world(lua_State *L);
/* The world at idx was just loaded from `path` (NULL: parsed from text): its checkpoint is now. */
void keel__lua_world_loaded(lua_State *L, int idx, const char *path);
int keel__lua_w_lift(lua_State *L);     /* w:lift(e) -> keel.Lift (lua_lift.c) */
void keel__lua_open_lift(lua_State *L); /* the keel.Lift metatable */
/* ---- lua_message.c ---- */
int keel__lua_e_send(lua_State *L);      /* e:send(name, data) */
int keel__lua_w_broadcast(lua_State *L); /* w:broadcast(name, data) */
/* Pushes the message being delivered (name, data, sender) for an on_message hook; returns 3. */
int keel__lua_push_message(lua_State *L, keel_lua_ctx *ctx, const keel_call *call); /* name, data, sender */
void keel__lua_open_message(lua_State *L, keel_lua_ctx *ctx);
uint64_t keel__lua_kind_source(const char *key, void *ud); /* ud: a lua_State; a Lua kind's source hash (lua_kind.c) */
/* A message payload: a copy of the plain data at idx (raises InvalidArgument otherwise), released with *release. */
void *keel__lua_payload_new(lua_State *L, keel_lua_ctx *ctx, int idx, void (**release)(void *));
extern const keel__msg_codec keel__lua_msg_codec; /* message payloads as bytes, for recordings */
/* ---- lua_system.c ---- */
/* Runs the systems of `phase` on w, in order (called at the end of the phase's hooks). */
void keel__lua_run_systems(lua_State *L, keel_lua_ctx *ctx, keel_world *w, keel_phase phase, double dt);
/* The state's extension (lua_system.c): set up once per context, attached to each world it wraps. */
void keel__lua_ext_init(keel_lua_ctx *ctx);
void keel__lua_attach(keel_lua_ctx *ctx, keel_world *w);
void keel__lua_open_system(lua_State *L, keel_lua_ctx *ctx); /* adds set_runner to the table on top (keel.core.systems) */
void keel__lua_open_net(lua_State *L, keel_lua_ctx *ctx); /* lua_net.c: keel.net in the table on top */
/* lua_net.c: keel.kind{}'s client_update (spec at index 1, checked by lua_kind.c), remembered after a declaration */
void keel__lua_net_note_kind(lua_State *L, const char *key);
extern const luaL_Reg keel__lua_system_world_methods[]; /* w:_atomic, w:_each, w:_fault_system */
/* lua_stats.c: w:stats, w:_stats_system; keel.core.systems.clock; `w.profiling = on` */
extern const luaL_Reg keel__lua_stats_world_methods[];
int keel__lua_stats_clock(lua_State *L);
int keel__lua_stats_newindex(lua_State *L, keel_lua_world *lw);

/* ---- Queries (lua_query.c) and commands (lua_command.c): World methods of their own ---- */

extern const luaL_Reg keel__lua_query_methods[];   /* entities, each, query, count */
void keel__lua_queries_free(keel_lua_world *lw);    /* the queries w:query kept (the World is going) */
void keel__lua_open_query(lua_State *L);            /* the keel.Query metatable */
extern const luaL_Reg keel__lua_command_methods[]; /* _apply */
void keel__lua_open_command(lua_State *L);          /* the keel.Command metatable */
/* A system pass's live entities in run order (lua_system.c), in ctx's reused buffer unless a pass
 * already holds it (then a userdata pushed for it): *owned says which (release: ctx->each_busy). */
/* What a system's protected run returns: true, or false and the error lua_pcall left on top. */
int keel__lua_pcall_result(lua_State *L, int st);
keel_entity *keel__lua_visit_list(lua_State *L, keel_lua_ctx *ctx, keel_world *w, size_t *count, bool *owned);
extern const luaL_Reg keel__lua_columns_world_methods[]; /* _columns (lua_columns.c) */
extern const luaL_Reg keel__lua_settings_methods[]; /* _settings, _set_setting (lua_settings.c) */
void keel__lua_open_settings(lua_State *L);         /* the keel.Settings metatable */
void keel__lua_push_settings(lua_State *L, int world); /* w.settings: a live view */
extern const luaL_Reg keel__lua_rescene_methods[]; /* watch, _rebase (lua_rescene.c) */
void keel__lua_open_rescene(lua_State *L);          /* keel.core._merge, _merge_take, _hash, _loaded */
void keel__lua_rescene_loaded(lua_State *L, int world, const char *path); /* keel.load: its file */
void keel__lua_push_cmd(lua_State *L, keel_cmd *cmd); /* takes the contents; leaves *cmd NONE */

/* ---- Entity ---- */

/* Handles hold no epoch of their own: lw->epoch never changes (lw->w only turns NULL), so
 * h->lw->epoch is the one they were made with (16 bytes less a handle: less GC debt a spawn). */
typedef struct keel_lua_entity {
    keel_lua_world *lw;
    keel_entity e;
} keel_lua_entity;

/* Pushes the (cached) handle of `e`; world udata at world_idx. `cache` is the world's handle
 * cache index when the caller has it on its stack, else 0. */
void keel__lua_push_entity(lua_State *L, int world_idx, keel_entity e);
void keel__lua_push_entity_cached(lua_State *L, int world_idx, int cache, keel_entity e);
/* The same, for the World lw at world_idx, inline: the hot loops (hooks, systems, queries) take
 * the cached handle without fetching lw from the stack again. */
/* Whether lw's handle cache was given a handle of e (this generation of its index). */
static inline bool keel__lua_gen_cached(const keel_lua_world *lw, keel_entity e)
{
    uint32_t i = (uint32_t)e;
    return i < lw->gens_cap && lw->gens[i] == (uint32_t)(e >> 32);
}
static inline void keel__lua_push_entity_lw(lua_State *L, const keel_lua_world *lw, int world_idx, int cache,
                                            keel_entity e)
{
    uint32_t i = (uint32_t)e;
    if (keel__lua_gen_cached(lw, e)) {
        if (lua_rawgeti(L, cache, (lua_Integer)i + 1) == LUA_TUSERDATA) return;
        lua_pop(L, 1);
    }
    keel__lua_push_entity_cached(L, world_idx, cache, e);
}
/* Checks a live entity handle (NotFound when stale). */
keel_lua_entity *keel__lua_checkentity(lua_State *L, int idx);
/* Why handle h is not an entity of world w (NULL: of its own world), or NULL when it is one: alive
 * (the root counts) in the current epoch of an open world. The one answer for every place that
 * takes an entity handle (worlds.md "One answer for another world's handle"): another world's, an
 * earlier epoch's, a closed world's and a destroyed entity's handle are all stale, NotFound. */
const char *keel__lua_entity_stale(const keel_lua_entity *h, const keel_world *w);
/* The entity handle at idx, an entity of w (NULL: of its own world); else raises NotFound
 * "stale handle: <what> <why>" (what: "the parent"...). */
keel_lua_entity *keel__lua_check_entity_of(lua_State *L, int idx, const keel_world *w, const char *what);
keel_lua_entity *keel__lua_toentity(lua_State *L, int idx); /* NULL when not an Entity */
/* The kind key string at idx (raises InvalidArgument naming argument idx - 1 otherwise). */
const char *keel__lua_checkkey(lua_State *L, int idx);
void keel__lua_open_entity(lua_State *L);

/* ---- spawn (lua_spawn.c) and the World's handle cache (lua_world.c) ---- */

int keel__lua_w_spawn(lua_State *L);  /* w:spawn([name | spec]) */
int keel__lua_w__spawn(lua_State *L); /* w:_spawn: w:spawn, and its inverse command */
/* e's handle kept by w:spawn, pushed; false (nothing pushed) when there is none. */
bool keel__lua_spawn_take(lua_State *L, int world_idx, const keel_lua_world *lw, keel_entity e);
/* Puts the handle on top in the cache (at `cache`) as e's (the handle stays on top). */
void keel__lua_cache_put(lua_State *L, keel_lua_world *lw, int cache, keel_entity e);
/* Pushes a new handle of e (not cached). Inline: w:spawn makes one per entity. */
static inline keel_lua_entity *keel__lua_entity_handle(lua_State *L, int world_idx, keel_lua_world *lw,
                                                       keel_entity e)
{
    keel_lua_entity *h = lua_newuserdatauv(L, sizeof *h, 0);
    h->lw = lw;
    h->e = e;
    lua_getiuservalue(L, world_idx, 3); /* the World's Entity metatable: it keeps the World alive */
    lua_setmetatable(L, -2);
    return h;
}
/* Raises InvalidArgument for a key of the table at t that is not among `known` (lua_load.c). */
void keel__lua_check_keys(lua_State *L, int t, const char *what, const char *const *known);

/* ---- Component ---- */

/* A loaded component's handles are cached per world and kind (slot 0 ones: by entity index), so
 * the same component gets the same handle back while it lives; a component found live under
 * the world's structure counter `live - 1` keeps its record at `rec` until that counter moves,
 * and a field read or write then needs no lookup (bind.h keel__world_structure). */
typedef struct keel_lua_comp {
    keel_lua_world *lw;
    keel_comp c;       /* c.kind is KEEL_NO_KIND for an unknown one: key in user value 1 */
    uint64_t serial;   /* keel_member.serial of the component: a new one in the same slot is not it */
    uint64_t live;     /* keel__world_structure + 1 when last found live; 0: check in full */
    void *rec;         /* its record then */
    uint32_t row;      /* and its storage row */
    uint32_t tag;      /* KEEL_LUA_COMP_TAG: with the block's size, how a metamethod tells a handle */
} keel_lua_comp;
#define KEEL_LUA_COMP_TAG 0x6b636f6du /* written only by lua_component.c's constructors */

struct keel__comp_info;
/* Pushes a handle for c (world udata at world_idx). `key` non-NULL: unknown component. */
void keel__lua_push_comp(lua_State *L, int world_idx, keel_comp c, const char *key);
/* Pushes the (cached) handle of the live component `ci` describes. `cache`: the index of the
 * kind's handle cache (keel__lua_comp_cache) when the caller holds it, else 0. */
void keel__lua_push_comp_info(lua_State *L, int world_idx, int cache, const struct keel__comp_info *ci);
/* The same for a loop that holds them: `cache` the kind's cache (an absolute or upvalue index),
 * `live` keel__world_structure(w) + 1 of the World at world_idx. */
void keel__lua_push_comp_fast(lua_State *L, int world_idx, int cache, const struct keel__comp_info *ci, uint64_t live);
/* Pushes the handle cache of kind k in the world at world_idx (made on first use). */
void keel__lua_comp_cache(lua_State *L, int world_idx, keel_kind_id k);
/* Gives a World's own Component metatable (at mt) its __index and __newindex: closures that
 * know the metatable, so telling one of the World's handles is one comparison. */
void keel__lua_comp_mt_own(lua_State *L, int mt);
/* The field of kind k the string key at idx names, by the key's address (-1: this cannot tell;
 * keel_kind_field can). */
int keel__lua_field_of(lua_State *L, keel_lua_ctx *ctx, keel_kind_id k, int idx);
/* keel_kind_find of the string at idx, remembered by the string's address. */
keel_kind_id keel__lua_kind_of(lua_State *L, keel_lua_ctx *ctx, int idx);
/* Frees what ctx's field tables hold (the state is closing). */
void keel__lua_fields_free(keel_lua_ctx *ctx);
void keel__lua_open_component(lua_State *L);
/* Component methods, shared with self tables: arg 1 is a Component. */
int keel__lua_comp_set(lua_State *L);
int keel__lua_comp_body(lua_State *L);
int keel__lua_comp_reset(lua_State *L);
int keel__lua_comp_unpack(lua_State *L);

/* ---- Loads (lua_load.c) and prefabs (lua_prefab.c) ---- */

int keel__lua_k_load(lua_State *L);  /* keel.load(path [, opts]) */
int keel__lua_k_parse(lua_State *L); /* keel.parse(text [, opts]) */
/* Before a core call that may wrap worlds from hooks (a load, an instantiate): collect the
 * worlds wrapped meanwhile; after, close those that are not `result` (freed by the core). */
int keel__lua_begin_load(lua_State *L, keel_lua_ctx *ctx);
void keel__lua_end_load(lua_State *L, keel_lua_ctx *ctx, int prev, keel_world *result);
/* keel.load's opts { strict, assets, limits } at idx (see lua_load.c); *assets for the caller to free. */
keel_status keel__lua_read_opts(lua_State *L, int idx, const char *scene, keel_load_opts *o, keel_assets **assets,
                                keel_diags *d);
extern const luaL_Reg keel__lua_prefab_methods[]; /* w:instantiate */
void keel__lua_open_prefab(lua_State *L);         /* [module, ctx] on top: adds prefab; pops ctx */

/* ---- Kinds (lua_kind.c) ---- */

void keel__lua_open_kind(lua_State *L); /* adds kind, kinds, kind_info to the table on top */

/* ---- Hooks of Lua kinds (lua_hook.c) ---- */

/* Makes the hook state of a declaration: registry refs to the spec's (argument 1's) hooks,
 * validate and migrate and to the keys table at `keys` (field names by index); points desc's
 * hooks, user and user_free at it. The registry owns it once keel_kind_declare succeeds. */
keel_lua_kind *keel__lua_hooks_new(lua_State *L, keel_lua_ctx *ctx, keel_kind_desc *desc, int keys, bool has_entity);
/* Frees it when the registry refused the declaration. */
void keel__lua_hooks_free(keel_lua_kind *lk);
/* A Lua kind k was declared: its stretches of a phase run through one protected call (bind.h). */
void keel__lua_kind_declared(keel_kind_id k);
/* Is a callback of `w` running (a hook of any phase or validate: its self is w's), or a migrate
 * step (of whatever world)? w:close refuses meanwhile: the callback's caller still uses w. */
bool keel__lua_in_callback(const keel_lua_ctx *ctx, const keel_world *w);
/* Raises InvalidOperation "<what> refuses while a callback transaction is open" when one of w is. */
void keel__lua_refuse_in_callback(lua_State *L, const keel_world *w, const char *what);

/* "chunk:line" of the Lua function that called the running C function (skipping keel's own Lua
 * modules, as error(msg, 2) skips a level); false when it was called from C. */
bool keel__lua_position(lua_State *L, char *buf, size_t cap);
/* The position an error value carries: a keel error object's `where`, or the "chunk:line" that
 * starts a Lua error string. Raw accesses only: it runs no metamethod. */
bool keel__lua_error_where(lua_State *L, int idx, char *buf, size_t cap);
/* A system's `each` (lua_system.c) gets the same reused self tables as hooks: one per queried
 * kind, each at its own depth. The machinery of kind k for this state, NULL when k is not
 * declared: its Lua declaration's, or one ctx keeps for a kind declared in C or by another
 * state (remade when that kind changes). Held until keel__lua_self_kind_done. */
keel_lua_kind *keel__lua_self_kind(lua_State *L, keel_lua_ctx *ctx, keel_kind_id k);
void keel__lua_self_kind_done(lua_State *L, keel_lua_kind *lk);
/* Whether lk's declaration is still the registry's (a kind redeclared meanwhile: stop using it). */
bool keel__lua_self_kind_current(const keel_lua_kind *lk, keel_kind_id k);
void keel__lua_shadows_free(keel_lua_ctx *ctx); /* the state is closing */

/* The failure of a pcall (error value on top) as a diagnostic "<what>: <message>" (with the error's
 * position as the diagnostic's file and line, and in the message); returns its status. */
keel_status keel__lua_record_error(lua_State *L, keel_diags *d, const char *what);

/* ---- Self tables (lua_self.c) ---- */

/* Is `c` the self of a running callback? (its own hooks may write readonly fields) */
bool keel__lua_is_self(keel_lua_ctx *ctx, keel_world *w, keel_comp c);
/* Writes pending changes of self tables showing `c` (before a write through a handle). */
keel_status keel__lua_self_flush(lua_State *L, keel_lua_ctx *ctx, keel_world *w, keel_comp c, keel_diags *d);
/* Re-fills self tables showing `c` after a write through a handle. */
void keel__lua_self_sync(lua_State *L, keel_lua_ctx *ctx, keel_world *w, keel_comp c);
typedef struct keel__lua_self {
    keel_lua_kind *lk;
    int depth;
    int self, keys, kbase; /* indices (stack or upvalue): the table, the keys table, the field names on
                            * the stack (0: none, read from keys) */
    bool floats;           /* every field an unbounded float: the fast fill and copy-back */
} keel__lua_self;
/* Pushes lk's self table of `depth`, its keys and (when few) its field names; fills *s. */
void keel__lua_self_push(lua_State *L, keel_lua_kind *lk, int depth, keel__lua_self *s);
/* Makes s's self the view of component c of w (record rec) for a system and fills it (the
 * World at widx, for entity fields). The caller raises ctx->depth past it. */
void keel__lua_self_fill(lua_State *L, keel__lua_self *s, keel_world *w, keel_comp c, const char *rec, int widx);
/* Writes back the fields of s's self that changed, as a system's write (readonly refused):
 * `rec` is c's record at storage row `row` when nothing entered the core since the fill, else NULL. */
keel_status keel__lua_self_write(lua_State *L, keel__lua_self *s, keel_world *w, keel_comp c, const char *rec,
                                 uint32_t row, keel_diags *d);
/* What the hook trampolines and batches (lua_hook.c) run a self through: */
/* Pushes the self table of this kind at this depth (made on first use). */
void keel__lua_push_self(lua_State *L, keel_lua_kind *lk, int depth);
/* Copies the record's fields into the self table at `self` (field names from the stack at kbase
 * when set, else from the keys table at `keys`), the self of `depth`; entity fields need the World
 * at widx. */
void keel__lua_fill_self(lua_State *L, keel_lua_kind *lk, const keel_kind_desc *kd, keel_world *w, const char *rec,
                         int self, int keys, int kbase, int widx, int depth);
/* The outermost callback's copy-back: every changed field converted and checked, then all stored
 * with no journal entry (`row`: a system's `each`, readonly refused). False when this path does not
 * apply (then nothing was written: keel__lua_write_back does it). */
bool keel__lua_write_back_committed(lua_State *L, keel_lua_kind *lk, const keel_kind_desc *kd, keel_world *w,
                                    keel_comp c, const char *rec, int self, int keys, int kbase, int depth,
                                    const uint32_t *row, keel_diags *d, keel_status *out);
/* Writes back the fields of `self` that differ from the record, one keel__field_set each (`rec`:
 * the record, or NULL when the core was entered since it was fetched; `internal`: the kind's own
 * hook, which may write readonly fields). */
keel_status keel__lua_write_back(lua_State *L, keel_lua_kind *lk, const keel_kind_desc *kd, keel_world *w,
                                 keel_comp c, const char *rec, int self, int keys, int depth, bool internal,
                                 keel_diags *d);
/* Whether every field is an unbounded float (the fast fill and copy-back apply). */
bool keel__lua_all_plain_floats(const keel_lua_kind *lk, const keel_kind_desc *kd);
/* Pushes the World udata of w when lk has entity fields (else nothing); returns its index or 0.
 * Inline: every hook call asks. */
static inline int keel__lua_push_world_if(lua_State *L, keel_lua_kind *lk, keel_world *w)
{
    if (!lk->has_entity) return 0;
    keel__lua_push_world_of(L, lk->ctx, w);
    return lua_gettop(L);
}

/* ---- Timers (lua_timer.c) ---- */

extern const luaL_Reg keel__lua_timer_world_methods[];  /* after, every */
extern const luaL_Reg keel__lua_timer_entity_methods[]; /* after, every */
void keel__lua_open_timer(lua_State *L);                /* the keel.Timer metatable */
void keel__lua_timers_free(keel_lua_ctx *ctx);          /* the ctx's timer records (its last release) */
void keel__lua_timer_world_gone(const keel_lua_world *lw); /* world_gc: w:after's check forgets that udata */

/* ---- World transforms and the renderer snapshot (lua_transform.c) ---- */

extern const luaL_Reg keel__lua_transform_world_methods[];  /* snapshot */
/* ---- lua_replay.c ---- */
extern const luaL_Reg keel__lua_replay_world_methods[]; /* random */
/* Raises InvalidOperation when lw's world is a replay's (read-only) world. */
void keel__lua_world_writable(lua_State *L, keel_lua_world *lw);
/* Calls fn(ud, w, d) on the World at stack index 1 (the stack is cut to it) set up as w:step sets
 * it up for the hooks it runs (lua_world.c). */
keel_status keel__lua_world_run(lua_State *L, keel_lua_world *lw, keel_status (*fn)(void *ud, keel_world *w, keel_diags *d),
                                void *ud, keel_diags *d);
void keel__lua_open_replay(lua_State *L); /* keel.record, keel.replay; expects [module, ctx], pops ctx */
extern const luaL_Reg keel__lua_transform_entity_methods[]; /* world_transform */

/* ---- Derived fields of Lua kinds (lua_derived.c) ---- */

keel_status keel__lua_derived_get(const keel_call *call, int field, keel_value *out);
keel_status keel__lua_derived_set(const keel_call *call, int field, const keel_value *v);
void keel__lua_read_derived(lua_State *L, int f, int funcs, size_t i, keel_field_desc *fd);
void keel__lua_open_derived(lua_State *L); /* the record view's metatable */

/* ---- Values (lua_value.c) ---- */

/* Pushes a field value stored at `p` in a record (entity fields need the world at world_idx). */
void keel__lua_push_stored(lua_State *L, const keel_field_desc *fd, const void *p, keel_world *w, int world_idx);
/* Pushes a keel_value. */
void keel__lua_push_value(lua_State *L, const keel_field_desc *fd, const keel_value *v, keel_world *w, int world_idx);
/* Converts the Lua value at idx for field fd. Returns false with a message in err. */
bool keel__lua_to_value(lua_State *L, int idx, const keel_field_desc *fd, keel_world *w,
                        keel_value *out, char *err, size_t errcap);
/* The code of a keel__lua_to_value refusal: NotFound for a stale entity handle (its message
 * begins "stale handle", keel__lua_entity_stale), InvalidArgument for any other value. */
static inline keel_status keel__lua_value_code(const char *err)
{
    return strncmp(err, "stale handle", 12) == 0 ? KEEL_NOT_FOUND : KEEL_INVALID_ARGUMENT;
}
/* True when the Lua value at idx equals the stored field at p. */
bool keel__lua_same(lua_State *L, int idx, const keel_field_desc *fd, const void *p, keel_world *w);
/* Checks every key (NotFound) and value (InvalidArgument) of a body table for kind k. */
bool keel__lua_body_check(lua_State *L, keel_lua_ctx *ctx, int idx, keel_kind_id k, keel_world *w, keel_diags *d);
/* keel__lua_body_check that also keeps the checked values of up to cap fields (*n of them; *n > cap:
 * too many to keep); strings stay borrowed from the table. */
bool keel__lua_body_collect(lua_State *L, keel_lua_ctx *ctx, int idx, keel_kind_id k, keel_world *w, keel_diags *d,
                            int *fields, keel_value *vals, size_t cap, size_t *n);
/* keel_add (slot auto) of kind k, which has no awake hook nor validate, then the values
 * keel__lua_body_collect checked written in. */
keel_status keel__lua_add_values(keel_world *w, keel_entity e, keel_kind_id k, const int *fields, const keel_value *vals,
                                 size_t n, keel_comp *out, keel_diags *d);
/* A body table (field = value) -> a MAP node (checked against the kind). NULL with diag on error. */
keel_node *keel__lua_body_to_node(lua_State *L, int idx, keel_kind_id k, keel_world *w, keel_diags *d);
/* A YAML core-schema node -> plain Lua value, and back. */
void keel__lua_push_node(lua_State *L, const keel_node *n);
keel_node *keel__lua_to_node(lua_State *L, int idx, int depth);
/* keel_add with a Lua body table at body_idx (nil: defaults); all or nothing. */
keel_status keel__lua_add(lua_State *L, keel_lua_ctx *ctx, int body_idx, keel_world *w, keel_entity e, keel_kind_id k,
                          uint32_t slot, keel_comp *out, keel_cmd *inverse, keel_diags *d);
/* Pushes a table of every field of a live component. */
void keel__lua_push_body(lua_State *L, keel_world *w, keel_comp c, int world_idx);

#endif
