/* lua_hook.c — the hooks of Lua-declared kinds: the C trampolines that run them with a reused
 * `self` table (fields copied in, changed ones written back: lua_self.c), batches, validate and
 * migrate, and the kind machinery (Lua kinds' and shadows) that hooks and systems' selves use. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "bind.h" /* keel__field_set_many and hook batches */


static const char *const phase_keys[KEEL_PHASE_COUNT_] = {
    "awake", "start", "fixed_update", "update", "late_update", "on_destroy", "on_transfer", "on_message"
};

/* ---- lifetime ---- */

static void lk_unref(lua_State *L, keel_lua_kind *lk)
{
    for (int i = 0; i < KEEL_PHASE_COUNT_; i++) luaL_unref(L, LUA_REGISTRYINDEX, lk->hook[i]);
    luaL_unref(L, LUA_REGISTRYINDEX, lk->validate);
    luaL_unref(L, LUA_REGISTRYINDEX, lk->migrate);
    luaL_unref(L, LUA_REGISTRYINDEX, lk->keys);
    luaL_unref(L, LUA_REGISTRYINDEX, lk->derived);
    luaL_unref(L, LUA_REGISTRYINDEX, lk->renames);
    for (int i = 0; i < KEEL_LUA_MAX_DEPTH; i++) {
        luaL_unref(L, LUA_REGISTRYINDEX, lk->self_tab[i]);
        luaL_unref(L, LUA_REGISTRYINDEX, lk->filled[i]);
    }
}

static void lk_destroy(keel_lua_kind *lk)
{
    /* refs can only be dropped from inside this state; otherwise they die with it */
    if (lk->ctx->alive && keel__lua_cur.ctx == lk->ctx && keel__lua_cur.L) lk_unref(keel__lua_cur.L, lk);
    keel__lua_ctx_release(lk->ctx);
    keel__lua_kinds_freed++; /* every memo taken before is void */
    free(lk->offsets);
    free(lk);
}

static void lk_user_free(void *user)
{
    keel_lua_kind *lk = user;
    lk->dead = true;
    if (lk->busy == 0) lk_destroy(lk);
}

static bool lk_prepare(keel_lua_kind *lk, keel_kind_id k)
{
    if (lk->ready) return true;
    lk->kd = keel_kind_describe(k);
    for (size_t i = 0; i < lk->nfields; i++) lk->offsets[i] = keel_kind_field_offset(k, (int)i);
    lk->ready = true;
    return true;
}

/* The state to run on, or NULL when this kind's state is not the one running keel now. */
static lua_State *lk_state(keel_lua_kind *lk)
{
    if (!lk->ctx->alive || keel__lua_cur.ctx != lk->ctx) return NULL;
    return keel__lua_cur.L;
}

/* ---- errors and callbacks under way ---- */

static int tostring_call(lua_State *L)
{
    luaL_tolstring(L, 1, NULL);
    return 1;
}

/* Pushes the text of the value at idx and returns it. Protected: a __tostring (or __name) that
 * raises or returns no string gives a fixed text instead, so a strange error object can never
 * escape the trampoline that is recording it (it would unwind through the core mid-step). */
static const char *safe_tostring(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    lua_pushcfunction(L, tostring_call);
    lua_pushvalue(L, idx);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK || lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 1);
        lua_pushfstring(L, "(error object is a %s value; its __tostring failed)", luaL_typename(L, idx));
    }
    return lua_tostring(L, -1);
}

/* The failure of a pcall (error value on top) as a diagnostic; returns its status. Reads the
 * error with raw accesses and protected text only: it runs no metamethod that could raise. */
keel_status keel__lua_record_error(lua_State *L, keel_diags *d, const char *what)
{
    int top = lua_gettop(L);
    keel_status code = KEEL_INVALID_OPERATION;
    const char *msg = NULL;
    if (lua_type(L, top) == LUA_TTABLE) {
        lua_pushliteral(L, "code");
        const char *cn = lua_rawget(L, top) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
        for (int s = KEEL_NOT_FOUND; cn && s <= KEEL_STATUS_LAST_; s++)
            if (strcmp(cn, keel_status_name((keel_status)s)) == 0) code = (keel_status)s;
        lua_pushliteral(L, "message");
        int mt = lua_rawget(L, top);
        if (mt == LUA_TSTRING || mt == LUA_TNUMBER) msg = lua_tostring(L, -1); /* stays on the stack */
    }
    if (!msg) msg = safe_tostring(L, top);
    char where[256];
    int line = 0;
    if (keel__lua_error_where(L, top, where, sizeof where)) { /* "chunk:line": the diagnostic's file and line */
        char *colon = strrchr(where, ':');
        line = atoi(colon + 1);
        *colon = '\0';
    }
    if (line && lua_type(L, top) == LUA_TTABLE) /* as tostring(err) writes it */
        keel_diag_add(d, KEEL_SEV_ERROR, code, "", where, line, 0, "%s: %s:%d: %s: %s", what, where, line,
                      keel_status_name(code), msg);
    else keel_diag_add(d, KEEL_SEV_ERROR, code, "", line ? where : NULL, line, 0, "%s: %s", what, msg);
    lua_settop(L, top);
    return code;
}

bool keel__lua_in_callback(const keel_lua_ctx *ctx, const keel_world *w)
{
    if (ctx->migrating) return true;
    for (int i = 0; i < ctx->depth; i++)
        if (ctx->self_w[i] == w) return true;
    return false;
}

void keel__lua_refuse_in_callback(lua_State *L, const keel_world *w, const char *what)
{
    if (keel_world_in_callback(w))
        keel__lua_raisef(L, KEEL_INVALID_OPERATION, "%s refuses while a callback transaction is open", what);
}

/* ---- trampolines ---- */

static void push_call_entity(lua_State *L, keel_lua_ctx *ctx, keel_world *w, keel_entity e, bool fast)
{
    if (fast && keel__lua_cur.w == w) {
        keel__lua_push_entity_cached(L, 1, keel__lua_cur.cache_idx, e); /* w:step has the World at 1 */
        return;
    }
    keel__lua_push_world_of(L, ctx, w);
    keel__lua_push_entity(L, lua_gettop(L), e);
    lua_remove(L, -2);
}

static keel_status hook_tramp(const keel_call *call)
{
    keel_lua_kind *lk = call->user;
    lua_State *L = lk_state(lk);
    if (!L || lk->dead) return KEEL_OK;
    int ref = lk->hook[call->phase];
    if (ref == LUA_NOREF) return KEEL_OK;
    keel_lua_ctx *ctx = lk->ctx;
    int depth = ctx->depth;
    if (depth >= KEEL_LUA_MAX_DEPTH)
        return KEEL_ERROR(call->diags, KEEL_LIMIT_EXCEEDED, "", "callbacks nested more than %d deep", KEEL_LUA_MAX_DEPTH);
    lk_prepare(lk, call->comp.kind);
    const keel_kind_desc *kd = lk->kd;
    keel_world *w = call->world;
    int top = lua_gettop(L), fn, self, keys, kbase = 0;
    bool fast = depth == 0 && keel__lua_in_step_frame(L);
    if (!fast && !lua_checkstack(L, 12)) /* w:step's frame has room for what a call pushes */
        return KEEL_ERROR(call->diags, KEEL_LIMIT_EXCEEDED, "", "Lua stack overflow");
    if (fast) {
        /* inside w:step: the function, self and keys of the last kind stay in reserved slots */
        fn = keel__lua_cur.memo_idx;
        self = fn + 1;
        keys = fn + 2;
        if (keel__lua_cur.memo_kind != lk || keel__lua_cur.memo_phase != (int)call->phase ||
            keel__lua_cur.memo_gen != keel__lua_kinds_freed) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
            lua_replace(L, fn);
            keel__lua_push_self(L, lk, depth);
            lua_replace(L, self);
            lua_rawgeti(L, LUA_REGISTRYINDEX, lk->keys);
            lua_replace(L, keys);
            for (size_t i = 0; i < lk->nfields && lk->nfields <= KEEL_LUA_MEMO_KEYS; i++) {
                lua_rawgeti(L, keys, (lua_Integer)i + 1);
                lua_replace(L, keys + 1 + (int)i);
            }
            keel__lua_cur.memo_kind = lk;
            keel__lua_cur.memo_gen = keel__lua_kinds_freed;
            keel__lua_cur.memo_phase = (int)call->phase;
        }
        if (lk->nfields <= KEEL_LUA_MEMO_KEYS) kbase = keys + 1;
    } else {
        fn = top + 1;
        self = top + 2;
        keys = top + 3;
        lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
        keel__lua_push_self(L, lk, depth);
        lua_rawgeti(L, LUA_REGISTRYINDEX, lk->keys);
    }
    int widx = keel__lua_push_world_if(L, lk, w);
    /* an on_destroy the core ran at the commit, on the record its component left behind */
    bool gone = call->phase == KEEL_PHASE_ON_DESTROY && keel_record(w, call->comp) != call->record;
    ctx->self_w[depth] = w;
    ctx->self_c[depth] = call->comp;
    ctx->self_k[depth] = lk;
    ctx->self_gone[depth] = gone;
    ctx->self_outside[depth] = false;
    ctx->depth++; /* before the fill: a nil-valued key goes through self's __newindex, which checks it */
    lk->busy++;
    keel__lua_fill_self(L, lk, kd, w, call->record, self, keys, kbase, widx, depth);
    lua_pushvalue(L, fn);
    lua_pushvalue(L, self);
    push_call_entity(L, ctx, w, call->comp.entity, fast);
    int nargs = 2;
    if (call->phase == KEEL_PHASE_UPDATE || call->phase == KEEL_PHASE_FIXED_UPDATE || call->phase == KEEL_PHASE_LATE_UPDATE) {
        lua_pushnumber(L, call->dt);
        nargs = 3;
    }
    if (call->phase == KEEL_PHASE_ON_TRANSFER) {
        if (call->from) keel__lua_push_world_of(L, ctx, call->from);
        else lua_pushnil(L);
        nargs = 3;
    }
    if (call->phase == KEEL_PHASE_ON_MESSAGE)
        nargs = 2 + keel__lua_push_message(L, ctx, call); /* name, data, sender */
    keel_status s = KEEL_OK;
    unsigned long entries = keel__lua_entries;
    if (lua_pcall(L, nargs, 0, 0) != LUA_OK) s = keel__lua_record_error(L, call->diags, phase_keys[call->phase]);
    else if (!lk->dead && !gone && /* a gone component takes no write-back */
             !keel__lua_write_back_committed(L, lk, kd, w, call->comp,
                                             entries == keel__lua_entries ? call->record : NULL, self, keys, kbase,
                                             depth, NULL, call->diags, &s))
        s = keel__lua_write_back(L, lk, kd, w, call->comp, entries == keel__lua_entries ? call->record : NULL,
                                 self, keys, depth, true, call->diags);
    ctx->depth--;
    lua_settop(L, top);
    if (--lk->busy == 0 && lk->dead) lk_destroy(lk);
    return s;
}

/* ---- batches: one protected call runs a stretch of a kind's hooks (see keel__batch) ---- */

typedef struct lua_batch {
    keel__batch *b;
    keel_lua_kind *lk;
    bool in_item;      /* an item's hook is running: if the protected call fails, it is that item's failure */
} lua_batch;

/* write_back_committed for a batch of plain floats (names at kbase, self at 5), with no
 * conversion or check left to make: the values read stay on the stack (the caller's settop drops
 * them). False when it does not apply or a field is not a finite number: then nothing was
 * written and the general path decides. */
static bool write_back_floats(lua_State *L, keel_lua_kind *lk, keel_world *w, const keel__hook_txn *t,
                              const char *rec, int kbase)
{
    if (!rec || lk->kd->validate) return false;
    int fields[KEEL_LUA_MEMO_KEYS];
    double vals[KEEL_LUA_MEMO_KEYS];
    size_t n = 0;
    for (size_t i = 0; i < lk->nfields; i++) {
        lua_pushvalue(L, kbase + (int)i);
        if (lua_rawget(L, 5) != LUA_TNUMBER) return false;
        double f = (double)lua_tonumber(L, -1);
        if (f == *(const double *)(rec + lk->offsets[i])) continue;
        if (!isfinite(f)) return false;
        vals[n] = f;
        fields[n++] = (int)i;
    }
    /* finite plain floats: nothing the write path checks can refuse them */
    return !n || keel__field_copy_floats(w, t->call.comp, t->call.record, t->row, n, fields, vals);
}

static bool update_phase(keel_phase p)
{
    return p == KEEL_PHASE_UPDATE || p == KEEL_PHASE_FIXED_UPDATE || p == KEEL_PHASE_LATE_UPDATE;
}

/* A batch item's self, as hook_tramp sets it at depth 0. */
static void item_begin(lua_batch *lb, const keel_call *call)
{
    keel_lua_ctx *ctx = lb->lk->ctx;
    ctx->self_w[0] = lb->b->w;
    ctx->self_c[0] = call->comp;
    ctx->self_k[0] = lb->lk;
    ctx->self_gone[0] = false;
    ctx->self_outside[0] = false;
    ctx->depth = 1;
    lb->in_item = true;
}

/* Calls a batch item's hook (the function at 4, self at 5, the World at 2, its handle cache at
 * 3): the record to copy back to, NULL when the hook entered keel (which may have moved it). */
static KEEL_LUA_INLINE const char *item_call(lua_State *L, const keel_lua_world *lw, const keel_call *call, int nargs)
{
    lua_pushvalue(L, 4);
    lua_pushvalue(L, 5);
    keel__lua_push_entity_lw(L, lw, 2, 3, call->comp.entity);
    if (nargs == 3) lua_pushnumber(L, call->dt);
    unsigned long entries = keel__lua_entries;
    lua_call(L, nargs, 0);
    return entries == keel__lua_entries ? call->record : NULL;
}

/* A batch item's copy-back of self (at 5, its keys at 6, the names from kbase) by the general path. */
static KEEL_LUA_INLINE keel_status item_write_back(lua_State *L, keel_lua_kind *lk, const keel_kind_desc *kd,
                                                   keel_world *w, const keel_call *call, const char *rec, int kbase)
{
    keel_status s = KEEL_OK;
    if (!keel__lua_write_back_committed(L, lk, kd, w, call->comp, rec, 5, 6, kbase, 0, NULL, call->diags, &s))
        s = keel__lua_write_back(L, lk, kd, w, call->comp, rec, 5, 6, 0, true, call->diags);
    return s;
}

#define BATCH_KEEP_MAX 64 /* values read back left on the stack before a settop drops them */

/* batch_loop's items when every field is a plain float (names at 7, self at 5, the function at
 * 4): the fill and copy-back with no per-field dispatch. The values the copy-back reads stay on
 * the stack and are dropped once in a while (a settop costs more than the test). */
static void batch_floats(lua_State *L, lua_batch *lb, int nf, int nargs, int base)
{
    keel__batch *b = lb->b;
    keel_lua_kind *lk = lb->lk;
    keel_lua_ctx *ctx = lk->ctx;
    keel_world *w = b->w;
    const keel_lua_world *lw = lua_touserdata(L, 2);
    const keel_call *call = &b->txn.call;
    while (keel__batch_next(b)) {
        const size_t *off = lk->offsets;
        item_begin(lb, call);
        for (int i = 0; i < nf; i++) {
            lua_pushvalue(L, 7 + i);
            lua_pushnumber(L, *(const double *)(call->record + off[i]));
            lua_rawset(L, 5);
        }
        const char *rec = item_call(L, lw, call, nargs);
        keel_status s = KEEL_OK;
        if (!lk->dead && !write_back_floats(L, lk, w, &b->txn, rec, 7)) {
            lua_settop(L, base);
            s = item_write_back(L, lk, lk->kd, w, call, rec, 7);
        }
        ctx->depth = 0;
        lb->in_item = false;
        if (lua_gettop(L) > base + BATCH_KEEP_MAX) lua_settop(L, base);
        keel__batch_done(b, s);
    }
}

/* Runs inside lua_pcall: 1 the lua_batch, 2 the World, 3 its handle cache. Each item as hook_tramp
 * would at depth 0, with lua_call: an error unwinds to batch_run, which fails that item only. */
static int batch_loop(lua_State *L)
{
    lua_batch *lb = lua_touserdata(L, 1);
    keel__batch *b = lb->b;
    keel_lua_kind *lk = lb->lk;
    keel_lua_ctx *ctx = lk->ctx;
    keel_world *w = b->w;
    const keel_kind_desc *kd = lk->kd;
    /* the field names, then (batch_floats) up to BATCH_KEEP_MAX values kept plus an item's own
     * pushes: a fill's pair, the call's four, the nfields values its copy-back reads */
    luaL_checkstack(L, 2 * (int)lk->nfields + BATCH_KEEP_MAX + 16, NULL);
    lua_rawgeti(L, LUA_REGISTRYINDEX, lk->hook[b->phase]); /* 4 */
    keel__lua_push_self(L, lk, 0);                           /* 5 */
    lua_rawgeti(L, LUA_REGISTRYINDEX, lk->keys);             /* 6 */
    int kbase = 0;
    if (lk->nfields <= KEEL_LUA_MEMO_KEYS) {
        kbase = 7;
        for (size_t i = 0; i < lk->nfields; i++) lua_rawgeti(L, 6, (lua_Integer)i + 1);
    }
    int widx = lk->has_entity ? 2 : 0;
    int nargs = update_phase(b->phase) ? 3 : 2;
    int nf = (int)lk->nfields;
    bool floats = kbase && keel__lua_all_plain_floats(lk, kd);
    int base = lua_gettop(L);
    if (floats) {
        batch_floats(L, lb, nf, nargs, base);
        return 0;
    }
    const keel_lua_world *lw = lua_touserdata(L, 2);
    while (keel__batch_next(b)) {
        const keel_call *call = &b->txn.call;
        item_begin(lb, call);
        keel__lua_fill_self(L, lk, kd, w, call->record, 5, 6, kbase, widx, 0);
        const char *rec = item_call(L, lw, call, nargs);
        keel_status s = KEEL_OK;
        if (!lk->dead) s = item_write_back(L, lk, kd, w, call, rec, kbase);
        ctx->depth = 0;
        lb->in_item = false;
        lua_settop(L, base);
        keel__batch_done(b, s);
    }
    return 0;
}

static void batch_run(keel__batch *b)
{
    keel_lua_kind *lk = b->user;
    lua_State *L = lk_state(lk);
    /* only straight under w:step (its World and handle cache at 1 and 2), not nested */
    if (!L || lk->dead || lk->ctx->depth != 0 || !keel__lua_in_step_frame(L) || keel__lua_cur.w != b->w ||
        lk->hook[b->phase] == LUA_NOREF || !lua_checkstack(L, 8)) {
        while (keel__batch_next(b)) keel__batch_done(b, hook_tramp(&b->txn.call));
        return;
    }
    lk_prepare(lk, keel__batch_kind(b));
    lua_batch lb = { b, lk, false };
    lk->busy++;
    int top = lua_gettop(L);
    for (;;) {
        lua_pushcfunction(L, batch_loop);
        lua_pushlightuserdata(L, &lb);
        lua_pushvalue(L, 1);
        lua_pushvalue(L, keel__lua_cur.cache_idx);
        if (lua_pcall(L, 3, 0, 0) == LUA_OK) break;
        if (!lb.in_item) { /* failed between items (out of memory): the rest one by one */
            lua_settop(L, top);
            while (keel__batch_next(b)) keel__batch_done(b, hook_tramp(&b->txn.call));
            break;
        }
        keel_status s = keel__lua_record_error(L, b->txn.call.diags, phase_keys[b->phase]);
        lua_settop(L, top);
        lk->ctx->depth = 0;
        lb.in_item = false;
        keel__batch_done(b, s); /* then resume after it */
    }
    lua_settop(L, top);
    if (--lk->busy == 0 && lk->dead) lk_destroy(lk);
}

/* ---- kinds for a system's `each` (lua_system.c) ---- */

/* The shadow of a kind this state did not declare: self machinery with no hooks, owned by ctx. */
/* A kind record for nfields fields, its offsets zero and every reference LUA_NOREF (raises on
 * out of memory): what a Lua kind and a shadow share. */
static keel_lua_kind *lk_alloc(lua_State *L, keel_lua_ctx *ctx, size_t nfields)
{
    keel_lua_kind *lk = calloc(1, sizeof *lk);
    size_t *offsets = calloc(nfields ? nfields : 1, sizeof *offsets);
    if (!lk || !offsets) {
        free(lk);
        free(offsets);
        luaL_error(L, "out of memory");
        return NULL;
    }
    lk->ctx = ctx;
    lk->offsets = offsets;
    lk->nfields = nfields;
    for (int p = 0; p < KEEL_PHASE_COUNT_; p++) lk->hook[p] = LUA_NOREF;
    lk->validate = lk->migrate = lk->derived = lk->renames = LUA_NOREF;
    for (int i = 0; i < KEEL_LUA_MAX_DEPTH; i++) lk->self_tab[i] = lk->filled[i] = LUA_NOREF;
    return lk;
}

static keel_lua_kind *shadow_new(lua_State *L, keel_lua_ctx *ctx, keel_kind_id k, const keel_kind_desc *kd)
{
    keel_lua_kind *lk = lk_alloc(L, ctx, kd->field_count); /* no reference to ctx: it frees its shadows */
    lk->shadow = true;
    lua_createtable(L, (int)kd->field_count, 0);
    for (size_t i = 0; i < kd->field_count; i++) {
        lk->has_entity |= kd->fields[i].type == KEEL_T_ENTITY;
        lua_pushstring(L, kd->fields[i].key);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lk->keys = luaL_ref(L, LUA_REGISTRYINDEX);
    lk_prepare(lk, k);
    return lk;
}

static void shadow_free(lua_State *L, keel_lua_kind *lk)
{
    if (L) lk_unref(L, lk);
    keel__lua_kinds_freed++; /* its address may come back as a Lua kind's: memos taken before are void */
    free(lk->offsets);
    free(lk);
}

/* Whether shadow lk still describes k's declaration (same description, fields and offsets). */
static bool shadow_current(const keel_lua_kind *lk, keel_kind_id k, const keel_kind_desc *kd)
{
    if (lk->kd != kd || lk->nfields != kd->field_count) return false;
    for (size_t i = 0; i < lk->nfields; i++)
        if (lk->offsets[i] != keel_kind_field_offset(k, (int)i)) return false;
    return true;
}

keel_lua_kind *keel__lua_self_kind(lua_State *L, keel_lua_ctx *ctx, keel_kind_id k)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (!kd) return NULL;
    keel_lua_kind *lk = kd->user;
    if (kd->user_free == lk_user_free && lk->ctx == ctx && !lk->dead) {
        lk_prepare(lk, k);
        lk->busy++;
        return lk;
    }
    if ((size_t)k >= ctx->shadow_cap) {
        size_t cap = ctx->shadow_cap ? ctx->shadow_cap : 16;
        while (cap <= (size_t)k) cap *= 2;
        keel_lua_kind **sh = realloc(ctx->shadows, cap * sizeof *sh);
        if (!sh) luaL_error(L, "out of memory");
        memset(sh + ctx->shadow_cap, 0, (cap - ctx->shadow_cap) * sizeof *sh);
        ctx->shadows = sh;
        ctx->shadow_cap = cap;
    }
    keel_lua_kind *sh = ctx->shadows[k];
    if (sh && !shadow_current(sh, k, kd)) {
        if (sh->busy) sh->dead = true; /* a call still uses it: freed after that */
        else shadow_free(L, sh);
        ctx->shadows[k] = sh = NULL;
    }
    if (!sh) ctx->shadows[k] = sh = shadow_new(L, ctx, k, kd);
    sh->busy++;
    return sh;
}

void keel__lua_self_kind_done(lua_State *L, keel_lua_kind *lk)
{
    if (--lk->busy || !lk->dead) return;
    if (lk->shadow) shadow_free(L, lk); /* replaced while in use: no longer in ctx's list */
    else lk_destroy(lk);
}

bool keel__lua_self_kind_current(const keel_lua_kind *lk, keel_kind_id k)
{
    return !lk->dead && (!lk->shadow || keel_kind_describe(k) == lk->kd); /* a Lua kind's replacement kills it */
}

void keel__lua_shadows_free(keel_lua_ctx *ctx)
{
    for (size_t k = 0; k < ctx->shadow_cap; k++)
        if (ctx->shadows[k]) shadow_free(NULL, ctx->shadows[k]); /* the state's registry goes with it */
    free(ctx->shadows);
    ctx->shadows = NULL;
    ctx->shadow_cap = 0;
}

static keel_status validate_tramp(const keel_call *call, int field)
{
    keel_lua_kind *lk = call->user;
    lua_State *L = lk_state(lk);
    if (!L || lk->dead || lk->validate == LUA_NOREF) return KEEL_OK;
    keel_lua_ctx *ctx = lk->ctx;
    int depth = ctx->depth;
    if (depth >= KEEL_LUA_MAX_DEPTH)
        return KEEL_ERROR(call->diags, KEEL_LIMIT_EXCEEDED, "", "callbacks nested more than %d deep", KEEL_LUA_MAX_DEPTH);
    if (!lua_checkstack(L, 12)) return KEEL_ERROR(call->diags, KEEL_LIMIT_EXCEEDED, "", "Lua stack overflow");
    const keel_kind_desc *kd = keel_kind_describe(call->comp.kind);
    lk_prepare(lk, call->comp.kind);
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, lk->validate);
    keel__lua_push_self(L, lk, depth);
    lua_rawgeti(L, LUA_REGISTRYINDEX, lk->keys);
    int widx = keel__lua_push_world_if(L, lk, call->world);
    ctx->self_w[depth] = call->world;
    ctx->self_c[depth] = call->comp;
    ctx->self_k[depth] = lk;
    ctx->self_gone[depth] = false;
    ctx->self_outside[depth] = false;
    ctx->depth++;
    lk->busy++;
    keel__lua_fill_self(L, lk, kd, call->world, call->record, top + 2, top + 3, 0, widx, depth);
    lua_pushvalue(L, top + 1);
    lua_pushvalue(L, top + 2);
    lua_pushstring(L, kd->fields[field].key);
    keel_status s = KEEL_OK;
    if (lua_pcall(L, 2, 2, 0) != LUA_OK) {
        s = keel__lua_record_error(L, call->diags, "validate");
    } else if ((lua_type(L, -2) == LUA_TBOOLEAN && !lua_toboolean(L, -2)) || (lua_isnil(L, -2) && !lua_isnil(L, -1))) {
        const char *msg = lua_tostring(L, -1);
        s = KEEL_ERROR(call->diags, KEEL_INVALID_ARGUMENT, kd->fields[field].key, "%s.%s: %s", kd->key,
                       kd->fields[field].key, msg ? msg : "rejected by validate");
    }
    ctx->depth--;
    lua_settop(L, top);
    if (--lk->busy == 0 && lk->dead) lk_destroy(lk);
    return s;
}

/* The declarative renames of version to_version (renames = { [v] = { old = "new" } }): before that
 * version's migrate step. A name already in the body is left as it is. */
static void apply_renames(lua_State *L, keel_lua_kind *lk, keel_node *body, int to_version)
{
    if (lk->renames == LUA_NOREF || !body || body->kind != KEEL_NODE_MAP) return;
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, lk->renames);
    if (lua_rawgeti(L, -1, to_version) == LUA_TTABLE) {
        for (size_t i = 0; i < body->count; i++) {
            keel_node *key = &body->items[2 * i];
            if (key->kind != KEEL_NODE_SCALAR || !key->text) continue;
            lua_getfield(L, -1, key->text);
            const char *to = lua_tostring(L, -1);
            if (to && !keel_node_get(body, to)) {
                keel_node *n = keel_node_new_scalar(to, key->style);
                int line = key->line, col = key->col;
                keel_node_clear(key);
                *key = *n;
                key->line = line;
                key->col = col;
                free(n);
            }
            lua_pop(L, 1);
        }
    }
    lua_settop(L, top);
}

static keel_status migrate_tramp(keel_node *body, int to_version, void *user, keel_diags *d)
{
    keel_lua_kind *lk = user;
    lua_State *L = lk_state(lk);
    if (L && !lk->dead && lua_checkstack(L, 8)) apply_renames(L, lk, body, to_version);
    if (lk->migrate == LUA_NOREF) return KEEL_OK;
    if (!L || lk->dead)
        return KEEL_ERROR(d, KEEL_UNSUPPORTED, "", "a Lua migration cannot run outside its Lua state");
    if (!lua_checkstack(L, 8)) return KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "Lua stack overflow");
    int top = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, lk->migrate);
    if (lua_rawgeti(L, -1, to_version) != LUA_TFUNCTION) {
        lua_settop(L, top);
        return KEEL_OK; /* no step for this version */
    }
    keel__lua_push_node(L, body); /* kept below the call: a step may change it in place */
    lua_pushvalue(L, -2);
    lua_pushvalue(L, -2);
    lk->busy++;
    lk->ctx->migrating++;
    keel_status s = KEEL_OK;
    int rc = lua_pcall(L, 1, 1, 0);
    lk->ctx->migrating--;
    if (rc != LUA_OK) {
        char what[32];
        snprintf(what, sizeof what, "migrate[%d]", to_version);
        s = keel__lua_record_error(L, d, what);
    } else {
        if (lua_isnil(L, -1)) lua_pop(L, 1); /* the step changed the table in place */
        keel_node *n = lua_type(L, -1) == LUA_TTABLE ? keel__lua_to_node(L, -1, 0) : NULL;
        if (n && n->kind == KEEL_NODE_SEQ && n->count == 0) { /* an empty table is an empty map */
            keel_node_free(n);
            n = keel_node_new_map();
        }
        if (!n || n->kind != KEEL_NODE_MAP) {
            keel_node_free(n);
            s = KEEL_ERROR(d, KEEL_INVALID_ARGUMENT, "", "migrate[%d] must return a table of YAML values", to_version);
        } else {
            keel_node_clear(body);
            *body = *n;
            free(n); /* the struct only: its contents moved into body */
        }
    }
    lua_settop(L, top);
    if (--lk->busy == 0 && lk->dead) lk_destroy(lk);
    return s;
}


/* ---- a declaration's hooks ---- */

/* A registry reference to the spec's (argument 1's) field `k` when it is of `type`, else LUA_NOREF. */
static int spec_ref(lua_State *L, const char *k, int type)
{
    if (lua_getfield(L, 1, k) == type) return luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 1);
    return LUA_NOREF;
}

keel_lua_kind *keel__lua_hooks_new(lua_State *L, keel_lua_ctx *ctx, keel_kind_desc *desc, int keys, bool has_entity)
{
    keel_lua_kind *lk = lk_alloc(L, ctx, desc->field_count);
    ctx->refs++;
    lk->has_entity = has_entity;
    for (int p = 0; p < KEEL_PHASE_COUNT_; p++)
        if ((lk->hook[p] = spec_ref(L, phase_keys[p], LUA_TFUNCTION)) != LUA_NOREF) desc->hooks[p] = hook_tramp;
    if ((lk->validate = spec_ref(L, "validate", LUA_TFUNCTION)) != LUA_NOREF) desc->validate = validate_tramp;
    if ((lk->migrate = spec_ref(L, "migrate", LUA_TTABLE)) != LUA_NOREF) desc->migrate = migrate_tramp;
    if ((lk->renames = spec_ref(L, "renames", LUA_TTABLE)) != LUA_NOREF) desc->migrate = migrate_tramp;
    lua_pushnil(L);
    if (lua_next(L, keys + 2)) { /* some field is derived (read_fields' table of get and set) */
        lua_pop(L, 2);
        lua_pushvalue(L, keys + 2);
        lk->derived = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_pushvalue(L, keys);
    lk->keys = luaL_ref(L, LUA_REGISTRYINDEX);
    desc->user = lk;
    desc->user_free = lk_user_free;
    return lk;
}

void keel__lua_hooks_free(keel_lua_kind *lk)
{
    lk_destroy(lk);
}

/* A Lua kind, once declared, runs its stretches of a phase through batch_run (bind.h). */
void keel__lua_kind_declared(keel_kind_id k)
{
    keel__kind_set_batch(k, batch_run);
}
