/* lua_system.c — the C side of systems (lua/keel/system.lua holds their registry and order):
 * the runner called at the end of each step phase, a world-wide callback transaction for one
 * call, a system's `each` over a world (the hooks' self tables, one transaction per call), and
 * the record of a system's failure. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "lua_pass.h"
#include "bind.h"
#include "channel/lua_http.h"
#include "keel_stats.h"

static keel_phase phase_of(const char *name)
{
    for (int p = 0; p < KEEL_PHASE_COUNT_; p++)
        if (strcmp(keel_phase_name((keel_phase)p), name) == 0) return (keel_phase)p;
    return KEEL_PHASE_COUNT_;
}

void keel__lua_run_systems(lua_State *L, keel_lua_ctx *ctx, keel_world *w, keel_phase phase, double dt)
{
    if (ctx->systems_ref == LUA_NOREF || !lua_checkstack(L, 6)) return;
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->systems_ref);
    keel__lua_push_world_of(L, ctx, w);
    lua_pushstring(L, keel_phase_name(phase));
    lua_pushnumber(L, dt);
    lua_pushboolean(L, keel_world_stats_enabled(w)); /* profiling: the runner times each system */
    (void)lua_pcall(L, 4, 0, 0);                     /* each system's failure is caught and recorded inside */
    lua_settop(L, top);
}

/* ---- the binding's extension on each world a Lua state wraps (model/ext.h) ---- */

/* At the end of each phase, after the C systems and before the core delivers the phase's
 * messages: this state's Lua systems; after late_update, this state's servers answer their
 * requests (between frames). The state is the extension's own, not whichever runs now: a
 * world stepped from C, or beside another state's worlds, still runs its own systems. */
static void lua_phase_end(keel_world *w, void *state, keel_phase phase, double dt)
{
    keel_lua_ctx *ctx = state;
    if (!ctx->alive || phase >= KEEL_PHASE_COUNT_) return;
    /* the running thread when it is this state's (a coroutine may be stepping), else the main one */
    lua_State *L = keel__lua_cur.ctx == ctx && keel__lua_cur.L ? keel__lua_cur.L : ctx->main;
    if (!lua_checkstack(L, 10)) return;
    keel__lua_run_systems(L, ctx, w, phase, dt);
    if (phase == KEEL_PHASE_LATE_UPDATE && ctx->http_open) keel__lua_http_step(L, ctx, w);
}

static void lua_ext_free(keel_world *w, void *state)
{
    (void)w;
    keel_lua_ctx *ctx = state;
    ctx->world_frees++; /* no kept pass may name this address again (lua_pass.c) */
    ctx->each_kept = false;
    keel__lua_ctx_release(state);
}

void keel__lua_ext_init(keel_lua_ctx *ctx)
{
    /* the type lives in the state's context: two states wrapping one world each attach */
    ctx->ext = (keel__ext_type){ .name = "lua", .order = 20, .phase_end = lua_phase_end, .free = lua_ext_free };
}

void keel__lua_attach(keel_lua_ctx *ctx, keel_world *w)
{
    if (keel__ext_get(w, &ctx->ext)) return;
    ctx->refs++; /* released with the world: a world can outlive the state that wrapped it */
    keel__ext_add(w, &ctx->ext, ctx);
    keel__msg_codec_set(w, &keel__lua_msg_codec, ctx); /* a recording writes its messages' data */
}

/* keel.core.systems.set_runner(fn): what runs a phase's systems (system.lua's runner). */
static int m_systems_runner(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    if (lua_type(L, 1) != LUA_TFUNCTION) return keel__lua_argerror(L, 1, "a function expected, got %s", luaL_typename(L, 1));
    if (ctx->systems_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, ctx->systems_ref);
    lua_pushvalue(L, 1);
    ctx->systems_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

int keel__lua_pcall_result(lua_State *L, int st)
{
    if (st == LUA_OK) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lua_pushboolean(L, 0);
    lua_insert(L, -2);
    return 2;
}

/* w:_atomic(fn, ...) -> true | false, err: fn(...) as one callback transaction of w (its writes
 * and structural changes roll back when it raises). */
static int w_atomic(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TFUNCTION) return keel__lua_argerror(L, 2, "a function expected, got %s", luaL_typename(L, 2));
    int nargs = lua_gettop(L) - 2;
    keel__hook_txn t;
    keel__callback_open(lw->w, &t);
    int st = lua_pcall(L, nargs, 0, 0);
    keel_world *w = lw->w; /* still open: close refuses during a step */
    if (w) keel__callback_close(w, &t, st == LUA_OK ? KEEL_OK : KEEL_INVALID_OPERATION);
    return keel__lua_pcall_result(L, st);
}

/* ---- w:_each(kinds, fn, dt): a system's `each` over w ---- */

typedef struct each_run {
    keel_lua_world *lw;
    size_t n;                              /* queried kinds */
    keel_kind_id kinds[KEEL_LUA_MAX_DEPTH];
    keel_lua_kind *lk[KEEL_LUA_MAX_DEPTH]; /* their self machinery (held) */
    int base;                              /* ctx->depth when the system began */
    bool in_call;                          /* a call's transaction is open: a raise is its failure */
    bool owns_list;                        /* the pass took ctx->each_list */
    lua_Integer visited;                   /* calls made (w:_each's second result) */
    keel__hook_txn txn;
} each_run;

/* The live entities in run order (the root is not visited): the list is made before the first
 * call, as a phase's run list is. In ctx's reused buffer, or (a pass inside a pass) a userdata
 * pushed for it; *owned says which. */
keel_entity *keel__lua_visit_list(lua_State *L, keel_lua_ctx *ctx, keel_world *w, size_t *count, bool *owned)
{
    size_t cap = keel_world_entity_count(w), n = 0;
    keel_entity *list;
    *owned = !ctx->each_busy;
    if (*owned && keel__lua_list_kept(ctx, w)) { /* the structure has not moved: the same list */
        ctx->each_busy = true;
        *count = ctx->each_count;
        return ctx->each_list;
    }
    if (*owned) {
        if (cap > ctx->each_cap) {
            keel_entity *grown = realloc(ctx->each_list, cap * sizeof *grown);
            if (!grown) luaL_error(L, "out of memory");
            ctx->each_list = grown;
            ctx->each_cap = cap;
        }
        list = ctx->each_list;
        ctx->each_busy = true;
    } else {
        list = lua_newuserdatauv(L, (cap ? cap : 1) * sizeof *list, 0);
    }
    for (keel_entity e = keel_next(w, 0); e && n < cap; e = keel_next(w, e)) list[n++] = e;
    *count = n;
    if (*owned) keel__lua_list_keep(ctx, w, n);
    return list;
}

#define EACH_KEEP_MAX 256 /* values read back left on the stack before a settop drops them */

/* keel__lua_self_write's plain-float path, leaving the values it reads on the stack (the caller
 * sets the top once in a while). False when it does not apply: nothing was written, and
 * keel__lua_self_write decides. */
static inline bool write_floats(lua_State *L, const keel__lua_self *s, keel_world *w, keel_comp c, char *rec,
                                uint32_t row)
{
    const keel_lua_kind *lk = s->lk;
    if (!rec || !s->floats || lk->dead || lk->kd->validate) return false;
    int fields[KEEL_LUA_MEMO_KEYS];
    double vals[KEEL_LUA_MEMO_KEYS];
    size_t n = 0;
    int self = s->self, kbase = s->kbase, nf = (int)lk->nfields;
    const size_t *off = lk->offsets;
    for (int i = 0; i < nf; i++) {
        lua_pushvalue(L, kbase + i);
        if (lua_rawget(L, self) != LUA_TNUMBER) return false;
        double f = (double)lua_tonumber(L, -1);
        if (f == *(const double *)(rec + off[i])) continue;
        if (!isfinite(f)) return false;
        vals[n] = f;
        fields[n++] = i;
    }
    return !n || keel__field_copy_floats(w, c, rec, row, n, fields, vals);
}

/* A field of a pass whose selves are all plain floats: the fill and copy-back walk these. */
typedef struct flat_field {
    int key, self; /* stack indices: its name, its self table */
    size_t off;    /* its offset in the record */
    unsigned sel;  /* its self's number in the query */
} flat_field;

/* write_floats over self s's fields in the pass's list (from f). */
static inline bool write_flat(lua_State *L, const keel__lua_self *s, keel_world *w, keel_comp c, char *rec,
                              uint32_t row, const flat_field *f)
{
    const keel_lua_kind *lk = s->lk;
    if (!rec || lk->dead || lk->kd->validate) return false;
    int fields[KEEL_LUA_MEMO_KEYS];
    double vals[KEEL_LUA_MEMO_KEYS];
    size_t n = 0, nf = lk->nfields;
    for (size_t i = 0; i < nf; i++) {
        lua_pushvalue(L, f[i].key);
        if (lua_rawget(L, f[i].self) != LUA_TNUMBER) return false;
        double v = (double)lua_tonumber(L, -1);
        if (v == *(const double *)(rec + f[i].off)) continue;
        if (!isfinite(v)) return false;
        vals[n] = v;
        fields[n++] = (int)i;
    }
    return !n || keel__field_copy_floats(w, c, rec, row, n, fields, vals);
}

/* Runs inside lua_pcall: 1 the each_run, 2 the World, 3 the function, 4 dt, 5 the system's cache
 * table or nil. Each call is its own callback transaction; a raise ends the system (the caller
 * rolls the open call back). With a cache, the entities visited come from the last pass's kept
 * verdicts while they hold (lua_pass.c): from the first call that moves the world's pass stamp
 * on, the rest of the list is judged entity by entity, as without. */
static int each_loop(lua_State *L)
{
    each_run *r = lua_touserdata(L, 1);
    keel_world *w = r->lw->w;
    keel_lua_ctx *ctx = r->lw->ctx;
    double dt = lua_tonumber(L, 4);
    size_t n = r->n;
    luaL_checkstack(L, (int)n + 8, NULL);
    lua_getiuservalue(L, 2, 1); /* 6: the World's entity handle cache */
    keel__lua_self sel[KEEL_LUA_MAX_DEPTH];
    for (size_t i = 0; i < n; i++) keel__lua_self_push(L, r->lk[i], r->base + (int)i, &sel[i]);
    size_t count;
    const keel_entity *list = keel__lua_visit_list(L, ctx, w, &count, &r->owns_list);
    keel__lua_kept *kept = lua_istable(L, 5) ? keel__lua_kept_begin(L, ctx, 5, 2, w, n, count) : NULL;
    bool fast = kept && kept->valid; /* kept->recording otherwise */
    /* what the copy-backs leave on the stack (write_floats: every self's values, kept up to
     * KEEP_MAX), a call's arguments and a fill's pair on top */
    luaL_checkstack(L, EACH_KEEP_MAX + 2 * (int)n * KEEL_LUA_MEMO_KEYS + (int)n + 16, NULL);
    int top = lua_gettop(L);
    /* every self plain floats (the common case): their fields in one list, self by self */
    bool floats = true;
    for (size_t i = 0; i < n; i++) floats = floats && sel[i].floats;
    flat_field flat[KEEL_LUA_MAX_DEPTH * KEEL_LUA_MEMO_KEYS];
    int first[KEEL_LUA_MAX_DEPTH], nflat = 0;
    for (size_t i = 0; i < n && floats; i++) {
        first[i] = nflat;
        for (size_t j = 0; j < sel[i].lk->nfields; j++)
            flat[nflat++] = (flat_field){ sel[i].kbase + (int)j, sel[i].self, sel[i].lk->offsets[j], (unsigned)i };
    }
    keel_comp c[KEEL_LUA_MAX_DEPTH];
    void *rec[KEEL_LUA_MAX_DEPTH];
    uint32_t row[KEEL_LUA_MAX_DEPTH];
    keel_diags d = { 0 };
    uint64_t decls = 0;
    bool checked = false;
    size_t v = 0, j = 0; /* the next list position (judged one by one), the next kept item */
    for (;;) {
        keel_entity e;
        if (fast) {
            if (j && !keel__lua_kept_holds(ctx, kept, w)) { /* the last call moved it: judge the rest */
                fast = false;
                v = kept->at[j - 1] + 1;
                continue;
            }
            if (j == kept->count) break;
            e = kept->e[j];
            for (size_t i = 0; i < n; i++) {
                c[i] = (keel_comp){ e, r->kinds[i], kept->slot[j * n + i] };
                rec[i] = kept->rec[j * n + i];
                row[i] = kept->row[j * n + i];
            }
            j++;
        } else {
            if (v >= count) break;
            if (kept && kept->recording && !keel__lua_kept_holds(ctx, kept, w)) kept->recording = false;
            e = list[v++];
            /* gone, not holding them all, or not taking part in this step */
            if (!keel__each_visit(w, e, n, r->kinds, c, rec, row)) continue;
            if (kept && kept->recording) keel__lua_kept_push(kept, e, v - 1, c, (void *const *)rec, row, count);
        }
        r->visited++;
        /* redeclared meanwhile (asked again only after a declaration: nothing else changes the answer) */
        uint64_t now = keel__kind_declarations();
        if (!checked || now != decls) {
            for (size_t i = 0; i < n; i++)
                if (!keel__lua_self_kind_current(r->lk[i], r->kinds[i])) return 0;
            decls = now;
            checked = true;
        }
        keel__callback_open(w, &r->txn);
        r->in_call = true;
        for (size_t i = 0; i < n; i++) {
            int dp = sel[i].depth;
            if (!floats) {
                keel__lua_self_fill(L, &sel[i], w, c[i], rec[i], 2);
                continue;
            }
            ctx->self_w[dp] = w;
            ctx->self_c[dp] = c[i];
            ctx->self_k[dp] = sel[i].lk;
            ctx->self_gone[dp] = false;
            ctx->self_outside[dp] = true;
        }
        for (int f = 0; f < nflat; f++) { /* every self plain floats: raw sets, nothing else runs */
            lua_pushvalue(L, flat[f].key);
            lua_pushnumber(L, *(const double *)((const char *)rec[flat[f].sel] + flat[f].off));
            lua_rawset(L, flat[f].self);
        }
        ctx->depth = r->base + (int)n;
        lua_pushvalue(L, 3);
        keel__lua_push_entity_lw(L, r->lw, 2, 6, e);
        for (size_t i = 0; i < n; i++) lua_pushvalue(L, sel[i].self);
        lua_pushnumber(L, dt);
        unsigned long entries = keel__lua_entries;
        lua_call(L, (int)n + 2, 0);
        keel_status st = KEEL_OK;
        for (size_t i = 0; i < n && st == KEEL_OK; i++) {
            /* the core entered (by the call or an earlier self's validate): records may have moved */
            bool moved = entries != keel__lua_entries;
            if (!moved && floats && write_flat(L, &sel[i], w, c[i], rec[i], row[i], flat + first[i])) continue;
            if (!moved && !floats && write_floats(L, &sel[i], w, c[i], rec[i], row[i])) continue;
            st = keel__lua_self_write(L, &sel[i], w, c[i], moved ? NULL : rec[i], row[i], &d);
        }
        /* the values write_floats left: dropped once in a while (settop costs more than a test) */
        if (lua_gettop(L) > top + EACH_KEEP_MAX) lua_settop(L, top);
        if (st != KEEL_OK) keel__lua_raise(L, st, &d); /* the caller rolls this call back */
        if (d.items) keel_diags_free(&d);
        ctx->depth = r->base;
        r->in_call = false;
        keel__callback_close(w, &r->txn, KEEL_OK);
    }
    if (kept) keel__lua_kept_end(kept);
    return 0;
}

/* w:_each(kinds, fn, dt [, cache]) -> true | false, err: fn(e, self1, ..., selfN, dt) for every entity
 * holding each kind of the list (lowest slot), in run order, skipping what does not take part in
 * this step. Each call is one transaction; the first that fails is rolled back and ends the pass. */
static int w_each(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (lua_type(L, 2) != LUA_TTABLE)
        return keel__lua_argerror(L, 2, "a list of kind keys expected, got %s", luaL_typename(L, 2));
    if (lua_type(L, 3) != LUA_TFUNCTION)
        return keel__lua_argerror(L, 3, "a function expected, got %s", luaL_typename(L, 3));
    if (lua_type(L, 4) != LUA_TNUMBER)
        return keel__lua_argerror(L, 4, "a number expected, got %s", luaL_typename(L, 4));
    double dt = lua_tonumber(L, 4);
    keel_lua_ctx *ctx = lw->ctx;
    /* A queried kind nobody holds: nothing to visit, and nothing allocated (steps of a world the
     * bundled systems do not concern stay free of garbage). */
    keel_kind_id kinds[KEEL_LUA_MAX_DEPTH]; /* more than that raises below */
    size_t n = lua_rawlen(L, 2);
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 2, (lua_Integer)i + 1);
        const char *key = lua_tostring(L, -1);
        keel_kind_id k = key ? keel_kind_find(key) : KEEL_NO_KIND;
        lua_pop(L, 1);
        if (!k || keel_storage_count(lw->w, k) == 0) {
            lua_pushboolean(L, 1);
            return 1;
        }
        if (i < KEEL_LUA_MAX_DEPTH) kinds[i] = k;
    }
    lua_settop(L, 5);                                 /* 5: the cache, or nil */
    each_run *r = lua_newuserdatauv(L, sizeof *r, 0); /* 6 */
    memset(r, 0, sizeof *r);
    r->lw = lw;
    r->n = n;
    r->base = ctx->depth;
    if (r->n == 0) return keel__lua_argerror(L, 2, "a list of at least one kind key expected");
    if (r->n > (size_t)(KEEL_LUA_MAX_DEPTH - ctx->depth))
        return keel__lua_raisef(L, KEEL_LIMIT_EXCEEDED,
                               "a system's query of %d kinds nests callbacks more than %d deep", (int)r->n,
                               KEEL_LUA_MAX_DEPTH);
    memcpy(r->kinds, kinds, r->n * sizeof *kinds);
    size_t held = 0;
    for (; held < r->n; held++)
        if (!(r->lk[held] = keel__lua_self_kind(L, ctx, r->kinds[held]))) break;
    KEEL_LUA_ENTER(L, ctx);
    int st = LUA_OK;
    if (held == r->n) {
        lua_pushcfunction(L, each_loop);
        lua_pushvalue(L, 6);
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 3);
        lua_pushnumber(L, dt);
        if (lua_istable(L, 5)) lua_pushvalue(L, 5);
        else lua_pushnil(L);
        st = lua_pcall(L, 5, 0, 0);
    }
    ctx->depth = r->base;
    if (r->owns_list) ctx->each_busy = false;
    if (r->in_call && lw->w) keel__callback_close(lw->w, &r->txn, KEEL_INVALID_OPERATION);
    KEEL_LUA_LEAVE();
    for (size_t i = 0; i < held; i++) keel__lua_self_kind_done(L, r->lk[i]);
    if (st == LUA_OK) { /* true, and the entities visited (the profiler's count) */
        lua_pushboolean(L, 1);
        lua_pushinteger(L, r->visited);
        return 2;
    }
    return keel__lua_pcall_result(L, st);
}

/* w:_fault_system(name, phase, message [, err]): a system's failure, once, in w:errors() (with the
 * position err carries, if any). */
static int w_fault_system(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    for (int i = 2; i <= 4; i++)
        if (lua_type(L, i) != LUA_TSTRING) return keel__lua_argerror(L, i, "a string expected, got %s", luaL_typename(L, i));
    keel_phase p = phase_of(lua_tostring(L, 3));
    char where[256];
    bool has_where = lua_gettop(L) >= 5 && keel__lua_error_where(L, 5, where, sizeof where);
    keel__fault_system(lw->w, (keel_uuid){ { 0 } }, lua_tostring(L, 2),
                       p == KEEL_PHASE_COUNT_ ? KEEL_PHASE_UPDATE : p, lua_tostring(L, 4),
                       has_where ? where : NULL);
    return 0;
}

const luaL_Reg keel__lua_system_world_methods[] = {
    { "_atomic", w_atomic }, { "_each", w_each }, { "_fault_system", w_fault_system }, { NULL, NULL }
};

void keel__lua_open_system(lua_State *L, keel_lua_ctx *ctx)
{
    lua_pushlightuserdata(L, ctx);
    lua_pushcclosure(L, m_systems_runner, 1);
    lua_setfield(L, -2, "set_runner");
    lua_pushcfunction(L, keel__lua_stats_clock);
    lua_setfield(L, -2, "clock");
}
