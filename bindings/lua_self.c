/* lua_self.c — the `self` tables of Lua kinds' callbacks: one reused table per kind and
 * nesting depth (made on first use), its metatable (the component's methods and properties, field
 * writes checked), the fill from a record and the copy-back of what changed; the same for a
 * system's `each`, and the flush and sync of selves showing a component written through a handle. */
#include <math.h>
#include <string.h>

#include "lua_internal.h"
#include "bind.h" /* keel__field_copy_back, keel__field_copy_floats and keel__field_set */

/* ---- self tables ---- */

static void push_self_mt(lua_State *L, keel_lua_ctx *ctx, int depth);

/* Pushes the self table of this kind at this depth (made on first use). */
void keel__lua_push_self(lua_State *L, keel_lua_kind *lk, int depth)
{
    if (lk->self_tab[depth] != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, lk->self_tab[depth]);
        return;
    }
    /* a hash part four times the fields: fewer keys share a main position, so lookups are shorter */
    lua_createtable(L, 0, 4 * (int)lk->nfields);
    for (size_t i = 0; i < lk->nfields; i++) { /* every key present: raw sets and gets need no metamethod */
        lua_pushstring(L, lk->kd->fields[i].key);
        lua_pushboolean(L, 0);
        lua_rawset(L, -3);
    }
    push_self_mt(L, lk->ctx, depth);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lk->self_tab[depth] = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Pushes the table of what the self of this depth was given for its entity fields (by field
 * number; made on first use), and returns its index: the copy-back skips an entity field whose
 * value is still that one (rawequal), so a handle its hook made dead is never converted. */
static int push_filled(lua_State *L, keel_lua_kind *lk, int depth)
{
    if (lk->filled[depth] != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, lk->filled[depth]);
    } else {
        lua_createtable(L, (int)lk->nfields, 0);
        lua_pushvalue(L, -1);
        lk->filled[depth] = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    return lua_gettop(L);
}

/* Whether the entity field i's value at idx is what its self was given (or last synced to). */
static bool entity_unchanged(lua_State *L, int filled, size_t i, int idx)
{
    idx = lua_absindex(L, idx);
    lua_rawgeti(L, filled, (lua_Integer)i + 1);
    bool same = lua_rawequal(L, -1, idx);
    lua_pop(L, 1);
    return same;
}

/* Pushes the name of field i: from the stack at kbase + i when kbase is set, else from the
 * keys table at `keys` (lua_setfield with a C string costs a strcmp in Lua's string cache). */
static inline void push_key(lua_State *L, int keys, int kbase, size_t i)
{
    if (kbase) lua_pushvalue(L, kbase + (int)i);
    else lua_rawgeti(L, keys, (lua_Integer)i + 1);
}

/* Copies the record's fields into the self table at `self` (names: see push_key), the self of
 * `depth`; entity fields also into its filled table. */
void keel__lua_fill_self(lua_State *L, keel_lua_kind *lk, const keel_kind_desc *kd, keel_world *w, const char *rec,
                         int self, int keys, int kbase, int widx, int depth)
{
    int filled = lk->has_entity ? push_filled(L, lk, depth) : 0;
    for (size_t i = 0; i < lk->nfields; i++) {
        const keel_field_desc *fd = &kd->fields[i];
        push_key(L, keys, kbase, i);
        if (fd->type == KEEL_T_FLOAT) lua_pushnumber(L, *(const double *)(rec + lk->offsets[i]));
        else keel__lua_push_stored(L, fd, rec + lk->offsets[i], w, widx);
        if (fd->type == KEEL_T_ENTITY) {
            lua_pushvalue(L, -1);
            lua_rawseti(L, filled, (lua_Integer)i + 1);
        }
        lua_rawset(L, self);
    }
    if (filled) lua_remove(L, filled);
}

#define KEEL_LUA_COMMIT_MAX 64 /* kinds with more fields write back through keel_set */

/* The copy-back of the outermost hook (the last thing before its transaction commits):
 * every changed field is converted and checked first, then all are stored with no journal
 * entry. `row`: not a hook but a system's `each` (component c at that storage row; readonly
 * fields refused). Returns false when this path does not apply (then nothing was written). */
bool keel__lua_write_back_committed(lua_State *L, keel_lua_kind *lk, const keel_kind_desc *kd, keel_world *w,
                                    keel_comp c, const char *rec, int self, int keys, int kbase, int depth,
                                    const uint32_t *row, keel_diags *d, keel_status *out)
{
    if (!rec || kd->validate || lk->nfields > KEEL_LUA_COMMIT_MAX) return false;
    int fields[KEEL_LUA_COMMIT_MAX];
    keel_value vals[KEEL_LUA_COMMIT_MAX];
    size_t n = 0;
    int top = lua_gettop(L);
    int filled = lk->has_entity ? push_filled(L, lk, depth) : 0;
    bool kept = filled != 0; /* values left on the stack (borrowed strings): room checked once, settop at the end */
    if (kept && !lua_checkstack(L, (int)lk->nfields + 4)) {
        lua_settop(L, top);
        *out = KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "Lua stack overflow");
        return true;
    }
    *out = KEEL_OK;
    for (size_t i = 0; i < lk->nfields; i++) {
        const keel_field_desc *fd = &kd->fields[i];
        const char *p = rec + lk->offsets[i];
        push_key(L, keys, kbase, i);
        int t = lua_rawget(L, self);
        keel_value *v = &vals[n];
        if (fd->type == KEEL_T_FLOAT && t == LUA_TNUMBER) {
            double f = (double)lua_tonumber(L, -1);
            lua_pop(L, 1); /* a number: nothing borrowed */
            if (f == *(const double *)p) continue; /* the common case, unchanged */
            v->type = KEEL_T_FLOAT;
            v->nil = false;
            v->as.f = f;
            fields[n++] = (int)i;
            continue;
        } else {
            /* stays on the stack: string values are borrowed from it */
            if (!kept && !lua_checkstack(L, (int)lk->nfields + 4)) {
                *out = KEEL_ERROR(d, KEEL_LIMIT_EXCEEDED, "", "Lua stack overflow");
                break;
            }
            kept = true;
            if (fd->type == KEEL_T_ENTITY && entity_unchanged(L, filled, i, -1)) continue; /* never re-checked */
            if (keel__lua_same(L, -1, fd, p, w)) continue;
            char err[256];
            if (!keel__lua_to_value(L, -1, fd, w, v, err, sizeof err)) {
                *out = KEEL_ERROR(d, keel__lua_value_code(err), fd->key, "%s", err);
                break;
            }
        }
        fields[n++] = (int)i;
    }
    /* checked there, all or nothing (no validate: the kinds that have one take write_back) */
    if (*out == KEEL_OK && n)
        *out = row ? keel__field_copy_back_at(w, c, (void *)rec, *row, n, fields, vals, d)
                   : keel__field_copy_back(w, c, (void *)rec, n, fields, vals, d);
    if (kept) lua_settop(L, top);
    return true;
}

/* Writes back the fields of `self` that differ from the record, through the registry.
 * `rec` is the record when no entry into the core happened since it was fetched, else NULL.
 * `internal`: a kind's own hook, which may write readonly fields (a system may not). */
keel_status keel__lua_write_back(lua_State *L, keel_lua_kind *lk, const keel_kind_desc *kd, keel_world *w,
                                 keel_comp c, const char *rec, int self, int keys, int depth, bool internal,
                                 keel_diags *d)
{
    int top = lua_gettop(L);
    int filled = lk->has_entity ? push_filled(L, lk, depth) : 0;
    keel_status s = KEEL_OK;
    /* derived fields: what changed is judged against the record as the call left it, before any
     * write back (a stored field written shows through a derived one, and back) */
    bool *changed = NULL;
    for (size_t i = 0; i < lk->nfields && !changed; i++)
        if (kd->fields[i].get) changed = lua_newuserdatauv(L, lk->nfields, 0);
    for (size_t i = 0; changed && i < lk->nfields; i++) {
        const char *r0 = rec ? rec : keel_record(w, c);
        lua_rawgeti(L, keys, (lua_Integer)i + 1);
        lua_rawget(L, self);
        changed[i] = r0 && !keel__lua_same(L, -1, &kd->fields[i], r0 + lk->offsets[i], w);
        lua_pop(L, 1);
    }
    for (size_t i = 0; i < lk->nfields && s == KEEL_OK; i++) {
        if (!rec && !(rec = keel_record(w, c))) break; /* removed during the call */
        if (changed && !changed[i]) continue;
        const keel_field_desc *fd = &kd->fields[i];
        const char *p = rec + lk->offsets[i];
        lua_rawgeti(L, keys, (lua_Integer)i + 1);
        int t = lua_rawget(L, self);
        bool changed_float = false;
        double f = 0;
        if (fd->type == KEEL_T_FLOAT && t == LUA_TNUMBER) {
            f = (double)lua_tonumber(L, -1);
            if (f == *(const double *)p) {
                lua_pop(L, 1); /* the common case, unchanged */
                continue;
            }
            changed_float = true;
        }
        if (fd->type == KEEL_T_ENTITY && entity_unchanged(L, filled, i, -1)) {
            lua_pop(L, 1); /* what its self was given: never re-checked */
            continue;
        }
        if (changed_float || !keel__lua_same(L, -1, fd, p, w)) {
            keel_value v;
            char err[256];
            unsigned long entries = keel__lua_entries;
            if (changed_float) v = (keel_value){ .type = KEEL_T_FLOAT, .as.f = f };
            if (!changed_float && !keel__lua_to_value(L, -1, fd, w, &v, err, sizeof err))
                s = KEEL_ERROR(d, keel__lua_value_code(err), fd->key, "%s", err);
            else s = keel__field_set(w, c, (int)i, &v, internal, NULL, d); /* readonly: see `internal` */
            if (s == KEEL_OK && fd->type == KEEL_T_ENTITY) { /* the store holds it now */
                lua_pushvalue(L, -1);
                lua_rawseti(L, filled, (lua_Integer)i + 1);
            }
            if (entries != keel__lua_entries || kd->validate) rec = NULL; /* validate may have moved it */
        }
        lua_pop(L, 1);
    }
    lua_settop(L, top);
    return s;
}

bool keel__lua_is_self(keel_lua_ctx *ctx, keel_world *w, keel_comp c)
{
    for (int i = 0; i < ctx->depth; i++)
        if (ctx->self_w[i] == w && !ctx->self_gone[i] && !ctx->self_outside[i] &&
            ctx->self_c[i].entity == c.entity && ctx->self_c[i].kind == c.kind && ctx->self_c[i].slot == c.slot)
            return true;
    return false;
}

/* Whether the self table at depth i is component c's (of world w), its component still there. */
static bool live_self(const keel_lua_ctx *ctx, int i, const keel_world *w, keel_comp c)
{
    return ctx->self_w[i] == w && !ctx->self_gone[i] && ctx->self_c[i].entity == c.entity &&
           ctx->self_c[i].kind == c.kind && ctx->self_c[i].slot == c.slot;
}

keel_status keel__lua_self_flush(lua_State *L, keel_lua_ctx *ctx, keel_world *w, keel_comp c, keel_diags *d)
{
    for (int i = 0; i < ctx->depth; i++) {
        if (!live_self(ctx, i, w, c)) continue;
        keel_lua_kind *lk = ctx->self_k[i];
        const keel_kind_desc *kd = keel_kind_describe(c.kind);
        if (lk->dead || !kd) continue;
        int top = lua_gettop(L);
        keel__lua_push_self(L, lk, i);
        lua_rawgeti(L, LUA_REGISTRYINDEX, lk->keys);
        keel_status s = keel__lua_write_back(L, lk, kd, w, c, NULL, top + 1, top + 2, i, !ctx->self_outside[i], d);
        lua_settop(L, top);
        if (s != KEEL_OK) return s;
    }
    return KEEL_OK;
}

void keel__lua_self_sync(lua_State *L, keel_lua_ctx *ctx, keel_world *w, keel_comp c)
{
    for (int i = 0; i < ctx->depth; i++) {
        if (!live_self(ctx, i, w, c)) continue;
        keel_lua_kind *lk = ctx->self_k[i];
        const keel_kind_desc *kd = keel_kind_describe(c.kind);
        const char *rec = keel_record(w, c);
        if (lk->dead || !kd || !rec) continue;
        int top = lua_gettop(L);
        keel__lua_push_self(L, lk, i);
        lua_rawgeti(L, LUA_REGISTRYINDEX, lk->keys);
        int widx = keel__lua_push_world_if(L, lk, w);
        keel__lua_fill_self(L, lk, kd, w, rec, top + 1, top + 2, 0, widx, i);
        lua_settop(L, top);
    }
}

/* Is the table at idx the live self of `depth`? */
static bool self_live(lua_State *L, keel_lua_ctx *ctx, int depth, int idx)
{
    if (depth >= ctx->depth || !ctx->self_k[depth] || ctx->self_k[depth]->dead) return false; /* NULL: a timer */
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->self_k[depth]->self_tab[depth]);
    bool live = lua_rawequal(L, -1, idx);
    lua_pop(L, 1);
    return live && (ctx->self_gone[depth] || keel_comp_alive(ctx->self_w[depth], ctx->self_c[depth]));
}

/* A Component handle for the self of `depth`, pushed. */
static void push_self_comp(lua_State *L, keel_lua_ctx *ctx, int depth)
{
    keel__lua_push_world_of(L, ctx, ctx->self_w[depth]);
    keel__lua_push_comp(L, -1, ctx->self_c[depth], NULL);
    lua_remove(L, -2);
}

static int self_method(lua_State *L)
{
    keel_lua_ctx *ctx = lua_touserdata(L, lua_upvalueindex(1));
    int depth = (int)lua_tointeger(L, lua_upvalueindex(2));
    lua_CFunction fn = lua_tocfunction(L, lua_upvalueindex(3));
    if (!self_live(L, ctx, depth, 1))
        return keel__lua_raisef(L, KEEL_UNSUPPORTED, "self is only valid during its callback");
    if (ctx->self_gone[depth]) /* its fields are still in self */
        return keel__lua_raisef(L, KEEL_NOT_FOUND, "%s was destroyed: self has its fields, not its methods",
                               keel_kind_describe(ctx->self_c[depth].kind)->key);
    push_self_comp(L, ctx, depth);
    lua_replace(L, 1);
    return fn(L);
}

static int self_index(lua_State *L)
{
    keel_lua_ctx *ctx = lua_touserdata(L, lua_upvalueindex(1));
    int depth = (int)lua_tointeger(L, lua_upvalueindex(2));
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(3)) != LUA_TNIL) return 1; /* a method */
    const char *k = lua_tostring(L, 2);
    if (!k || !self_live(L, ctx, depth, 1)) return 1;
    keel_world *w = ctx->self_w[depth];
    keel_comp c = ctx->self_c[depth];
    if (strcmp(k, "kind") == 0) lua_pushstring(L, keel_kind_describe(c.kind)->key);
    else if (strcmp(k, "slot") == 0) lua_pushinteger(L, (lua_Integer)c.slot);
    else if (strcmp(k, "loaded") == 0) lua_pushboolean(L, 1);
    else if (strcmp(k, "enabled") == 0) lua_pushboolean(L, !ctx->self_gone[depth] && keel_comp_enabled(w, c));
    else if (strcmp(k, "version") == 0)
        lua_pushinteger(L, ctx->self_gone[depth] ? 0 : (lua_Integer)keel_comp_counter(w, c));
    else if (strcmp(k, "entity") == 0) {
        keel__lua_push_world_of(L, ctx, w);
        keel__lua_push_entity(L, lua_gettop(L), c.entity);
    } else lua_pushnil(L);
    return 1;
}

static int self_newindex(lua_State *L)
{
    keel_lua_ctx *ctx = lua_touserdata(L, lua_upvalueindex(1));
    int depth = (int)lua_tointeger(L, lua_upvalueindex(2));
    if (!self_live(L, ctx, depth, 1))
        return keel__lua_raisef(L, KEEL_UNSUPPORTED, "self is only valid during its callback");
    keel_comp c = ctx->self_c[depth];
    const char *k = lua_tostring(L, 2);
    if (k && keel_kind_field(c.kind, k) >= 0) {
        lua_rawset(L, 1);
        return 0;
    }
    if (k && strcmp(k, "enabled") == 0) {
        if (ctx->self_gone[depth])
            return keel__lua_raisef(L, KEEL_NOT_FOUND, "%s was destroyed", keel_kind_describe(c.kind)->key);
        push_self_comp(L, ctx, depth);
        lua_replace(L, 1);
        lua_settable(L, 1);
        return 0;
    }
    return keel__lua_raisef(L, KEEL_NOT_FOUND, "%s has no field '%s'", keel_kind_describe(c.kind)->key,
                           k ? k : luaL_typename(L, 2));
}

static int self_tostring(lua_State *L)
{
    keel_lua_ctx *ctx = lua_touserdata(L, lua_upvalueindex(1));
    int depth = (int)lua_tointeger(L, lua_upvalueindex(2));
    if (!self_live(L, ctx, depth, 1)) lua_pushliteral(L, "keel self (outside its callback)");
    else lua_pushfstring(L, "keel self %s[%d]", keel_kind_describe(ctx->self_c[depth].kind)->key, (int)ctx->self_c[depth].slot);
    return 1;
}

static void push_self_mt(lua_State *L, keel_lua_ctx *ctx, int depth)
{
    if (ctx->self_mt[depth] != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->self_mt[depth]);
        return;
    }
    static const struct { const char *name; lua_CFunction fn; } methods[] = {
        { "set", keel__lua_comp_set }, { "body", keel__lua_comp_body },
        { "reset", keel__lua_comp_reset }, { "unpack", keel__lua_comp_unpack },
    };
    lua_createtable(L, 0, 4);
    lua_newtable(L);
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        lua_pushlightuserdata(L, ctx);
        lua_pushinteger(L, depth);
        lua_pushcfunction(L, methods[i].fn);
        lua_pushcclosure(L, self_method, 3);
        lua_setfield(L, -2, methods[i].name);
    }
    lua_pushlightuserdata(L, ctx);
    lua_pushinteger(L, depth);
    lua_pushvalue(L, -3);
    lua_pushcclosure(L, self_index, 3);
    lua_setfield(L, -3, "__index");
    lua_pop(L, 1);
    lua_pushlightuserdata(L, ctx);
    lua_pushinteger(L, depth);
    lua_pushcclosure(L, self_newindex, 2);
    lua_setfield(L, -2, "__newindex");
    lua_pushlightuserdata(L, ctx);
    lua_pushinteger(L, depth);
    lua_pushcclosure(L, self_tostring, 2);
    lua_setfield(L, -2, "__tostring");
    lua_pushvalue(L, -1);
    ctx->self_mt[depth] = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Whether every field is an unbounded float (the batch's fast fill and copy-back apply). */
bool keel__lua_all_plain_floats(const keel_lua_kind *lk, const keel_kind_desc *kd)
{
    for (size_t i = 0; i < lk->nfields; i++)
        if (kd->fields[i].type != KEEL_T_FLOAT || kd->fields[i].has_min || kd->fields[i].has_max) return false;
    return true;
}

/* ---- selves for a system's `each` (lua_system.c) ---- */

void keel__lua_self_push(lua_State *L, keel_lua_kind *lk, int depth, keel__lua_self *s)
{
    luaL_checkstack(L, (int)(lk->nfields <= KEEL_LUA_MEMO_KEYS ? lk->nfields : 0) + 8, NULL);
    s->lk = lk;
    s->depth = depth;
    keel__lua_push_self(L, lk, depth);
    s->self = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, lk->keys);
    s->keys = lua_gettop(L);
    s->kbase = 0;
    if (lk->nfields <= KEEL_LUA_MEMO_KEYS) {
        s->kbase = s->keys + 1;
        for (size_t i = 0; i < lk->nfields; i++) lua_rawgeti(L, s->keys, (lua_Integer)i + 1);
    }
    s->floats = lk->nfields <= KEEL_LUA_MEMO_KEYS && keel__lua_all_plain_floats(lk, lk->kd);
    for (size_t i = 0; i < lk->nfields && s->floats; i++) /* a system may not write those: checked apart */
        if (lk->kd->fields[i].flags & KEEL_FIELD_READONLY) s->floats = false;
}

void keel__lua_self_fill(lua_State *L, keel__lua_self *s, keel_world *w, keel_comp c, const char *rec, int widx)
{
    keel_lua_kind *lk = s->lk;
    keel_lua_ctx *ctx = lk->ctx;
    ctx->self_w[s->depth] = w;
    ctx->self_c[s->depth] = c;
    ctx->self_k[s->depth] = lk;
    ctx->self_gone[s->depth] = false;
    ctx->self_outside[s->depth] = true;
    if (s->floats) { /* fill_self, less its per-field type dispatch */
        for (size_t i = 0; i < lk->nfields; i++) {
            push_key(L, s->keys, s->kbase, i);
            lua_pushnumber(L, *(const double *)(rec + lk->offsets[i]));
            lua_rawset(L, s->self);
        }
    } else keel__lua_fill_self(L, lk, lk->kd, w, rec, s->self, s->keys, s->kbase, lk->has_entity ? widx : 0, s->depth);
}

keel_status keel__lua_self_write(lua_State *L, keel__lua_self *s, keel_world *w, keel_comp c, const char *rec,
                                 uint32_t row, keel_diags *d)
{
    keel_lua_kind *lk = s->lk;
    if (lk->dead) return KEEL_OK;
    int top = lua_gettop(L);
    if (rec && s->floats && !lk->kd->validate) { /* write_back_floats, for a system */
        int fields[KEEL_LUA_MEMO_KEYS];
        double vals[KEEL_LUA_MEMO_KEYS];
        size_t n = 0;
        bool plain = true;
        for (size_t i = 0; i < lk->nfields; i++) { /* values stay on the stack: one settop at the end */
            push_key(L, s->keys, s->kbase, i);
            int t = lua_rawget(L, s->self);
            double f = (double)lua_tonumber(L, -1);
            if (t != LUA_TNUMBER) plain = false;
            else if (f == *(const double *)(rec + lk->offsets[i])) continue;
            if (!plain || !isfinite(f)) {
                plain = false;
                break;
            }
            vals[n] = f;
            fields[n++] = (int)i;
        }
        lua_settop(L, top);
        if (plain && (!n || keel__field_copy_floats(w, c, (void *)rec, row, n, fields, vals))) return KEEL_OK;
    }
    keel_status st = KEEL_OK;
    if (!keel__lua_write_back_committed(L, lk, lk->kd, w, c, rec, s->self, s->keys, s->kbase, s->depth, &row, d,
                                        &st))
        st = keel__lua_write_back(L, lk, lk->kd, w, c, rec, s->self, s->keys, s->depth, false, d);
    lua_settop(L, top);
    return st;
}
