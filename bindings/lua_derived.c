/* lua_derived.c — derived fields of Lua kinds (`get`/`set` on a field): the C trampolines the
 * registry calls, and the record view they hand to Lua as `self` (a record that may not be in any
 * world yet: a file being loaded, the kind's defaults). */
#include <string.h>

#include "lua_internal.h"
#include "bind.h"

#define VIEW_MT "keel.RecordView"

typedef struct record_view {
    keel_kind_id k;
    void *rec;     /* NULL once the call that made it returned */
    bool writable; /* set's self; get's is read-only */
} record_view;

static record_view *view_check(lua_State *L)
{
    record_view *v = luaL_checkudata(L, 1, VIEW_MT);
    if (!v->rec)
        keel__lua_raisef(L, KEEL_INVALID_OPERATION, "a derived field's self is valid during its call only");
    return v;
}

static int view_field(lua_State *L, const record_view *v, const keel_kind_desc **kd)
{
    *kd = keel_kind_describe(v->k);
    const char *key = lua_tostring(L, 2);
    int f = *kd && key ? keel_kind_field(v->k, key) : -1;
    return f;
}

static int view_index(lua_State *L)
{
    record_view *v = view_check(L);
    const keel_kind_desc *kd;
    int f = view_field(L, v, &kd);
    if (f < 0) {
        lua_pushnil(L);
        return 1;
    }
    keel_value val;
    keel__record_get(v->k, v->rec, f, &val);
    keel__lua_push_value(L, &kd->fields[f], &val, NULL, 0);
    return 1;
}

static int view_newindex(lua_State *L)
{
    record_view *v = view_check(L);
    const keel_kind_desc *kd;
    int f = view_field(L, v, &kd);
    if (!v->writable) return keel__lua_raisef(L, KEEL_INVALID_OPERATION, "a derived field's get cannot write");
    if (f < 0)
        return keel__lua_raisef(L, KEEL_NOT_FOUND, "%s has no field '%s'", kd ? kd->key : "?",
                                luaL_tolstring(L, 2, NULL));
    const keel_field_desc *fd = &kd->fields[f];
    if (fd->type == KEEL_T_ENTITY || fd->type == KEEL_T_ASSET || fd->type == KEEL_T_STRING || fd->get)
        return keel__lua_raisef(L, KEEL_INVALID_OPERATION,
                                "a derived field's set writes plain stored fields only, not %s", fd->key);
    keel_value val;
    char err[256];
    if (!keel__lua_to_value(L, 3, fd, NULL, &val, err, sizeof err))
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s", err);
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel_field_check(v->k, f, &val, &d);
    if (st) {
        lua_pushstring(L, d.count ? d.items[0].message : fd->key);
        keel_diags_free(&d);
        return keel__lua_raisef(L, st, "%s", lua_tostring(L, -1));
    }
    keel_diags_free(&d);
    keel__record_put(v->k, v->rec, f, &val); /* not yet derived: the caller refreshes after set */
    return 0;
}

/* The state to run on: the kind's own when it is the one inside keel now. */
static lua_State *kind_state(keel_lua_kind *lk)
{
    if (!lk || lk->dead || !lk->ctx->alive || keel__lua_cur.ctx != lk->ctx) return NULL;
    return keel__lua_cur.L;
}

/* Pushes the get (which = 1) or set (2) of field f and a view of the call's record; false when
 * the kind has none (nothing pushed). */
static bool push_call(lua_State *L, keel_lua_kind *lk, const keel_call *call, int f, int which, record_view **view)
{
    if (lk->derived == LUA_NOREF) return false;
    lua_rawgeti(L, LUA_REGISTRYINDEX, lk->derived);
    lua_rawgeti(L, -1, (lua_Integer)f * 2 + which);
    lua_remove(L, -2);
    if (!lua_isfunction(L, -1)) {
        lua_pop(L, 1);
        return false;
    }
    *view = lua_newuserdatauv(L, sizeof **view, 0);
    **view = (record_view){ call->comp.kind, call->record, which == 2 };
    luaL_setmetatable(L, VIEW_MT);
    return true;
}

keel_status keel__lua_derived_get(const keel_call *call, int field, keel_value *out)
{
    keel_lua_kind *lk = call->user;
    lua_State *L = kind_state(lk);
    const keel_kind_desc *kd = keel_kind_describe(call->comp.kind);
    if (!L || !kd) return KEEL_UNSUPPORTED;
    if (!lua_checkstack(L, 6)) return KEEL_LIMIT_EXCEEDED;
    int top = lua_gettop(L);
    record_view *view;
    if (!push_call(L, lk, call, field, 1, &view)) return KEEL_UNSUPPORTED;
    lk->busy++;
    keel_status st = KEEL_OK;
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        st = keel__lua_record_error(L, call->diags, "get");
    } else {
        char err[256];
        if (!keel__lua_to_value(L, -1, &kd->fields[field], NULL, out, err, sizeof err))
            st = KEEL_ERROR(call->diags, KEEL_INVALID_ARGUMENT, kd->fields[field].key, "get of %s: %s",
                            kd->fields[field].key, err);
    }
    view->rec = NULL;
    lua_settop(L, top);
    lk->busy--;
    return st;
}

keel_status keel__lua_derived_set(const keel_call *call, int field, const keel_value *v)
{
    keel_lua_kind *lk = call->user;
    lua_State *L = kind_state(lk);
    const keel_kind_desc *kd = keel_kind_describe(call->comp.kind);
    if (!L || !kd)
        return KEEL_ERROR(call->diags, KEEL_UNSUPPORTED, kd ? kd->fields[field].key : "",
                          "a Lua derived field's set cannot run outside its Lua state");
    if (!lua_checkstack(L, 8)) return KEEL_ERROR(call->diags, KEEL_LIMIT_EXCEEDED, "", "Lua stack overflow");
    int top = lua_gettop(L);
    record_view *view;
    if (!push_call(L, lk, call, field, 2, &view)) return KEEL_UNSUPPORTED;
    keel__lua_push_value(L, &kd->fields[field], v, NULL, 0);
    lk->busy++;
    keel_status st = KEEL_OK;
    if (lua_pcall(L, 2, 0, 0) != LUA_OK) st = keel__lua_record_error(L, call->diags, "set");
    view->rec = NULL;
    lua_settop(L, top);
    lk->busy--;
    return st;
}

/* Reads `get`/`set` of the field table at f into fd (both or neither: InvalidArgument), keeping the
 * functions in the table at `funcs` under 2*i+1 and 2*i+2. */
void keel__lua_read_derived(lua_State *L, int f, int funcs, size_t i, keel_field_desc *fd)
{
    lua_getfield(L, f, "get");
    lua_getfield(L, f, "set");
    bool g = !lua_isnil(L, -2), s = !lua_isnil(L, -1);
    if ((g && !lua_isfunction(L, -2)) || (s && !lua_isfunction(L, -1)))
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: field '%s': get and set must be functions", fd->key);
    if (g != s)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "kind: field '%s': a derived field needs both get and set",
                         fd->key);
    if (g) {
        lua_rawseti(L, funcs, (lua_Integer)i * 2 + 2);
        lua_rawseti(L, funcs, (lua_Integer)i * 2 + 1);
        fd->get = keel__lua_derived_get;
        fd->set = keel__lua_derived_set;
    } else {
        lua_pop(L, 2);
    }
}

void keel__lua_open_derived(lua_State *L)
{
    if (luaL_newmetatable(L, VIEW_MT)) {
        lua_pushcfunction(L, view_index);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, view_newindex);
        lua_setfield(L, -2, "__newindex");
    }
    lua_pop(L, 1);
}
