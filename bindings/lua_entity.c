/* lua_entity.c — the Entity handle (keel.Entity): re-checked on every use, cached per world. */
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "bind.h" /* keel__comp_info_get */

keel_lua_entity *keel__lua_toentity(lua_State *L, int idx)
{
    return keel__lua_testudata(L, idx, &keel__lua_mt_entity);
}

static bool entity_live(const keel_lua_entity *h)
{
    keel_world *w = h->lw->w;
    return w && keel_world_epoch(w) == h->lw->epoch &&
           (keel_alive(w, h->e) || h->e == keel_world_root(w));
}

const char *keel__lua_entity_stale(const keel_lua_entity *h, const keel_world *w)
{
    if (!h->lw->w) return "belongs to a closed world";
    if (w && h->lw->w != w) return "belongs to another world";
    if (keel_world_epoch(h->lw->w) != h->lw->epoch || keel__world_earlier_epoch(h->lw->w, h->e))
        return "is of an earlier epoch of its world (before w:stop)";
    if (!entity_live(h)) return "was destroyed";
    return NULL;
}

keel_lua_entity *keel__lua_checkentity(lua_State *L, int idx)
{
    keel_lua_entity *h = keel__lua_checkudata(L, idx, &keel__lua_mt_entity);
    if (!entity_live(h))
        keel__lua_raisef(L, KEEL_NOT_FOUND, "the entity %s (stale handle)", keel__lua_entity_stale(h, NULL));
    return h;
}

keel_lua_entity *keel__lua_check_entity_of(lua_State *L, int idx, const keel_world *w, const char *what)
{
    keel_lua_entity *h = keel__lua_checkudata(L, idx, &keel__lua_mt_entity);
    const char *why = keel__lua_entity_stale(h, w);
    if (why) keel__lua_raisef(L, KEEL_NOT_FOUND, "stale handle: %s %s", what, why);
    return h;
}

/* Pushes the World udata of a handle; returns its index. */
static int push_world(lua_State *L, int idx)
{
    return keel__lua_push_handle_world(L, idx);
}

static int e_alive(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkudata(L, 1, &keel__lua_mt_entity);
    lua_pushboolean(L, entity_live(h));
    return 1;
}

static int e_children(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    keel_world *w = h->lw->w;
    int wi = push_world(L, 1);
    size_t n = keel_entity_child_count(w, h->e);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        keel__lua_push_entity(L, wi, keel_entity_child(w, h->e, i));
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

const char *keel__lua_checkkey(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        keel__lua_argerror(L, idx - 1, "a kind key expected, got %s", luaL_typename(L, idx));
    if (keel__lua_has_nul(L, idx)) keel__lua_argerror(L, idx - 1, "a kind key holds a NUL byte");
    return lua_tostring(L, idx);
}

static uint32_t opt_slot(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) return KEEL_SLOT_AUTO;
    int isint = 0;
    lua_Integer slot = lua_tointegerx(L, idx, &isint); /* 2.0 is slot 2, as Lua reads integers */
    if (lua_type(L, idx) != LUA_TNUMBER || !isint || slot < 0 || slot >= (lua_Integer)UINT32_MAX)
        keel__lua_argerror(L, idx - 1, "a slot must be a non-negative integer");
    return (uint32_t)slot;
}

/* Finds a membership entry by key and slot (KEEL_SLOT_AUTO: the lowest). */
static bool find_member(keel_world *w, keel_entity e, const char *key, uint32_t slot, keel_member *out)
{
    bool found = false;
    size_t n = keel_member_count(w, e);
    for (size_t i = 0; i < n; i++) {
        keel_member m;
        if (!keel_member_at(w, e, i, &m) || strcmp(m.key, key) != 0) continue;
        if (slot != KEEL_SLOT_AUTO && m.slot != slot) continue;
        if (!found || m.slot < out->slot) { *out = m; found = true; }
    }
    return found;
}

static void check_one_slot(lua_State *L, keel_kind_id k, uint32_t slot)
{
    const keel_kind_desc *kd = keel_kind_describe(k);
    if (kd && kd->multiplicity == KEEL_ONE && slot != KEEL_SLOT_AUTO && slot != 0)
        keel__lua_raisef(L, KEEL_INVALID_OPERATION, "%s is a one kind: its only slot is 0 (asked for %u)", kd->key, (unsigned)slot);
}

static int e_get(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    const char *key = keel__lua_checkkey(L, 2);
    uint32_t slot = opt_slot(L, 3);
    keel_world *w = h->lw->w;
    keel_kind_id k = keel__lua_kind_of(L, h->lw->ctx, 2);
    int wi = push_world(L, 1);
    keel_member m;
    if (k) {
        check_one_slot(L, k, slot);
        keel__comp_info ci;
        if (keel__comp_info_get(w, h->e, k, slot, &ci)) {
            keel__lua_push_comp_info(L, wi, 0, &ci); /* the same handle while the component lives */
            return 1;
        }
    }
    if (find_member(w, h->e, key, slot, &m) && !m.loaded) {
        keel_comp c = { h->e, KEEL_NO_KIND, m.slot };
        keel__lua_push_comp(L, wi, c, m.key);
        return 1;
    }
    lua_pushnil(L);
    return 1;
}

static int e_has(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    const char *key = keel__lua_checkkey(L, 2);
    keel_member m;
    lua_pushboolean(L, find_member(h->lw->w, h->e, key, KEEL_SLOT_AUTO, &m));
    return 1;
}

/* The live entity handle at idx, its World pushed on top: one metatable read for both. The
 * handle's metatable is its World's own copy (World user value 3, [1] = the World), which no
 * other userdata carries; anything else takes the general check, which raises as it always did. */
static keel_lua_entity *check_entity_world(lua_State *L, int idx)
{
    int top = lua_gettop(L);
    keel_lua_entity *h = lua_touserdata(L, idx);
    if (h && lua_type(L, idx) == LUA_TUSERDATA && lua_getmetatable(L, idx)) {
        if (lua_rawgeti(L, -1, 1) == LUA_TUSERDATA && lua_getiuservalue(L, -1, 3) == LUA_TTABLE &&
            lua_topointer(L, -1) == lua_topointer(L, -3)) {
            lua_pop(L, 1);
            lua_replace(L, -2); /* [mt, World] -> [World] */
            if (!entity_live(h))
                keel__lua_raisef(L, KEEL_NOT_FOUND, "the entity %s (stale handle)", keel__lua_entity_stale(h, NULL));
            return h;
        }
        lua_settop(L, top);
    }
    h = keel__lua_checkentity(L, idx);
    push_world(L, idx);
    return h;
}

static int do_add(lua_State *L, bool want_inverse)
{
    if (lua_gettop(L) < 2) { /* raises as always: "got no value", not "nil" */
        keel__lua_checkentity(L, 1);
        keel__lua_checkkey(L, 2);
    }
    lua_settop(L, 4); /* entity, key, body, slot; the World goes at 5 */
    keel_lua_entity *h = check_entity_world(L, 1);
    int wi = 5;
    keel_kind_id k = KEEL_NO_KIND;
    if (lua_type(L, 2) == LUA_TSTRING) k = keel__lua_kind_of(L, h->lw->ctx, 2); /* a kind found: a key with no NUL */
    const char *key = k ? NULL : keel__lua_checkkey(L, 2);
    uint32_t slot = opt_slot(L, 4);
    keel_world *w = h->lw->w;
    if (!k) return keel__lua_raisef(L, KEEL_NOT_FOUND, "no kind '%s'", key);
    keel_diags d;
    keel_diags_init(&d);
    keel_comp c;
    keel_cmd inv;
    if (want_inverse) memset(&inv, 0, sizeof inv); /* else never read */
    KEEL_LUA_ENTER(L, h->lw->ctx);
    keel_status s = keel__lua_add(L, h->lw->ctx, 3, w, h->e, k, slot, &c, want_inverse ? &inv : NULL, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, want_inverse ? &inv : NULL);
    keel__lua_push_comp(L, wi, c, NULL); /* not kept: most adds drop it (e:get keeps one) */
    if (!want_inverse) return 1;
    keel__lua_push_cmd(L, &inv);
    return 2;
}

static int e_add(lua_State *L) { return do_add(L, false); }
static int e__add(lua_State *L) { return do_add(L, true); }

static int do_remove(lua_State *L, bool want_inverse)
{
    if (lua_gettop(L) < 2) { /* raises as always: "got no value", not "nil" */
        keel__lua_checkentity(L, 1);
        keel__lua_checkkey(L, 2);
    }
    lua_settop(L, 3); /* entity, key, slot; the World goes at 4 */
    keel_lua_entity *h = check_entity_world(L, 1);
    int wi = 4;
    keel_kind_id k = KEEL_NO_KIND;
    if (lua_type(L, 2) == LUA_TSTRING)
        k = keel__lua_kind_of(L, h->lw->ctx, 2); /* a kind found: a key with no NUL */
    const char *key = k ? keel_kind_describe(k)->key : keel__lua_checkkey(L, 2);
    uint32_t slot = opt_slot(L, 3);
    keel_world *w = h->lw->w;
    keel_comp c;
    keel_member m;
    if (k) check_one_slot(L, k, slot); /* several undeclared ones without a slot: keel_remove refuses */
    /* the body first: the record is gone after the remove */
    if (k && keel_get_comp(w, h->e, k, slot, &c)) keel__lua_push_body(L, w, c, wi);
    else if (find_member(w, h->e, key, slot, &m) && !m.loaded) keel__lua_push_node(L, m.preserved);
    else if (!k && slot == KEEL_SLOT_AUTO) return keel__lua_raisef(L, KEEL_NOT_FOUND, "no component '%s' on this entity", key);
    else lua_pushnil(L);
    keel_diags d;
    keel_diags_init(&d);
    keel_cmd inv;
    if (want_inverse) memset(&inv, 0, sizeof inv); /* else never read */
    KEEL_LUA_ENTER(L, h->lw->ctx);
    keel_status s = keel__remove(w, h->e, k, key, slot, want_inverse ? &inv : NULL, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, want_inverse ? &inv : NULL);
    if (!want_inverse) return 1;
    keel__lua_push_cmd(L, &inv);
    return 2;
}

static int e_remove(lua_State *L) { return do_remove(L, false); }
static int e__remove(lua_State *L) { return do_remove(L, true); }

static int e_components(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    keel_world *w = h->lw->w;
    int wi = push_world(L, 1);
    size_t n = keel_member_count(w, h->e);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        keel_member m;
        if (!keel_member_at(w, h->e, i, &m)) continue;
        keel_comp c = { h->e, m.loaded ? m.kind : KEEL_NO_KIND, m.slot };
        keel__lua_push_comp(L, wi, c, m.loaded ? NULL : m.key);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static keel_entity opt_parent(lua_State *L, int idx, keel_lua_entity *h)
{
    if (lua_isnoneornil(L, idx)) return KEEL_NO_ENTITY;
    return keel__lua_check_entity_of(L, idx, h->lw->w, "the parent")->e;
}

/* e:_duplicate([parent]) -> the copy, the inverse command (keel.history's h:duplicate). */
static int e__duplicate(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    keel_entity parent = opt_parent(L, 2, h);
    keel_entity out = KEEL_NO_ENTITY;
    keel_diags d;
    keel_diags_init(&d);
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    KEEL_LUA_ENTER(L, h->lw->ctx);
    keel_status s = keel_duplicate(h->lw->w, h->e, parent, &out, &inv, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, &inv);
    keel__lua_push_entity(L, push_world(L, 1), out);
    lua_remove(L, -2);
    keel__lua_push_cmd(L, &inv);
    return 2;
}

/* e:dump(): e and its subtree as a scene fragment (YAML text) for w:paste. The text is owned
 * by a box while lua_pushlstring copies it. */
static int e_dump(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    keel__lua_refuse_in_callback(L, h->lw->w, "e:dump");
    void **box = keel__lua_newbox(L);
    char *text = NULL;
    size_t len = 0;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel__scene_dump_subtree(h->lw->w, h->e, &text, &len, &d);
    *box = text;
    if (s != KEEL_OK) return keel__lua_raise(L, s, &d);
    keel_diags_free(&d);
    lua_pushlstring(L, text, len);
    free(text);
    *box = NULL;
    return 1;
}

static int e_duplicate(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    keel_entity parent = opt_parent(L, 2, h);
    keel_entity out = KEEL_NO_ENTITY;
    keel_diags d;
    keel_diags_init(&d);
    KEEL_LUA_ENTER(L, h->lw->ctx);
    keel_status s = keel_duplicate(h->lw->w, h->e, parent, &out, NULL, &d);
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, NULL);
    keel__lua_push_entity(L, push_world(L, 1), out);
    return 1;
}

/* Runs a command on the entity; pushes the inverse when asked. */
enum { OP_DESTROY, OP_RENAME, OP_REPARENT, OP_ENABLE };

static int entity_op(lua_State *L, keel_lua_entity *h, int op, int arg, bool want_inverse)
{
    keel_world *w = h->lw->w;
    keel_diags d;
    keel_diags_init(&d);
    keel_cmd inv;
    memset(&inv, 0, sizeof inv);
    keel_cmd *pi = want_inverse ? &inv : NULL;
    keel_status s = KEEL_OK;
    keel_entity parent = KEEL_NO_ENTITY;
    if (op == OP_RENAME && lua_type(L, arg) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "a name must be a string, got %s", luaL_typename(L, arg));
    if (op == OP_RENAME && keel__lua_has_nul(L, arg))
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "a name holds a NUL byte");
    if (op == OP_ENABLE && lua_type(L, arg) != LUA_TBOOLEAN)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "enabled must be a boolean, got %s", luaL_typename(L, arg));
    if (op == OP_REPARENT) parent = opt_parent(L, arg, h);
    KEEL_LUA_ENTER(L, h->lw->ctx);
    switch (op) {
    case OP_DESTROY: s = keel_destroy(w, h->e, pi, &d); break;
    case OP_RENAME: s = keel_rename(w, h->e, lua_tostring(L, arg), pi, &d); break;
    case OP_REPARENT: s = keel_reparent(w, h->e, parent, pi, &d); break;
    case OP_ENABLE: s = keel_set_enabled(w, h->e, lua_toboolean(L, arg), pi, &d); break;
    }
    KEEL_LUA_LEAVE();
    keel__lua_check(L, s, &d, &inv);
    if (!want_inverse) return 0;
    keel__lua_push_cmd(L, &inv);
    return 1;
}

static int e_destroy(lua_State *L) { return entity_op(L, keel__lua_checkentity(L, 1), OP_DESTROY, 0, false); }
static int e__destroy(lua_State *L) { return entity_op(L, keel__lua_checkentity(L, 1), OP_DESTROY, 0, true); }
static int e__rename(lua_State *L) { return entity_op(L, keel__lua_checkentity(L, 1), OP_RENAME, 2, true); }
static int e__reparent(lua_State *L) { return entity_op(L, keel__lua_checkentity(L, 1), OP_REPARENT, 2, true); }
static int e__enable(lua_State *L) { return entity_op(L, keel__lua_checkentity(L, 1), OP_ENABLE, 2, true); }

static const luaL_Reg entity_methods[] = {
    { "alive", e_alive }, { "children", e_children }, { "add", e_add }, { "get", e_get },
    { "has", e_has }, { "remove", e_remove }, { "components", e_components },
    { "duplicate", e_duplicate }, { "destroy", e_destroy }, { "send", keel__lua_e_send },
    { "_add", e__add }, { "_remove", e__remove }, { "_destroy", e__destroy },
    { "_rename", e__rename }, { "_reparent", e__reparent }, { "_enable", e__enable },
    { "_duplicate", e__duplicate }, { "dump", e_dump }, { NULL, NULL }
};

static int entity_index(lua_State *L)
{
    lua_pushvalue(L, 2); /* methods first: no property shares a method's name */
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    const char *k = lua_tostring(L, 2);
    if (k) {
        if (strcmp(k, "world") == 0) {
            keel__lua_checkudata(L, 1, &keel__lua_mt_entity);
            push_world(L, 1);
            return 1;
        }
        bool uuid = strcmp(k, "uuid") == 0, name = strcmp(k, "name") == 0;
        bool parent = strcmp(k, "parent") == 0, enabled = strcmp(k, "enabled") == 0;
        if (uuid || name || parent || enabled) {
            keel_lua_entity *h = keel__lua_checkentity(L, 1);
            keel_world *w = h->lw->w;
            if (uuid) {
                char u[37];
                keel_uuid_format(keel_entity_uuid(w, h->e), u);
                lua_pushstring(L, u);
            } else if (name) {
                const char *n = keel_entity_name(w, h->e);
                lua_pushstring(L, n ? n : "");
            } else if (enabled) {
                lua_pushboolean(L, keel_entity_enabled(w, h->e));
            } else {
                keel_entity p = keel_entity_parent(w, h->e);
                if (!p || p == keel_world_root(w)) lua_pushnil(L);
                else keel__lua_push_entity(L, push_world(L, 1), p);
            }
            return 1;
        }
    }
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
}

static int entity_newindex(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "name") == 0) return entity_op(L, h, OP_RENAME, 3, false);
    if (k && strcmp(k, "parent") == 0) return entity_op(L, h, OP_REPARENT, 3, false);
    if (k && strcmp(k, "enabled") == 0) return entity_op(L, h, OP_ENABLE, 3, false);
    if (k && (strcmp(k, "uuid") == 0 || strcmp(k, "world") == 0))
        return keel__lua_raisef(L, KEEL_UNSUPPORTED, "e.%s is read-only", k);
    return keel__lua_raisef(L, KEEL_NOT_FOUND, "an entity has no field '%s'", k ? k : luaL_typename(L, 2));
}

static int entity_eq(lua_State *L)
{
    keel_lua_entity *a = keel__lua_toentity(L, 1), *b = keel__lua_toentity(L, 2);
    lua_pushboolean(L, a && b && a->lw->w == b->lw->w && a->lw->epoch == b->lw->epoch && a->e == b->e);
    return 1;
}

static int entity_tostring(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkudata(L, 1, &keel__lua_mt_entity);
    if (!entity_live(h)) {
        lua_pushliteral(L, "keel.Entity (destroyed)");
        return 1;
    }
    keel_world *w = h->lw->w;
    char u[37];
    keel_uuid_format(keel_entity_uuid(w, h->e), u);
    const char *n = keel_entity_name(w, h->e);
    if (h->e == keel_world_root(w)) lua_pushfstring(L, "keel.Entity (root of \"%s\")", keel_world_name(w));
    else lua_pushfstring(L, "keel.Entity \"%s\" %s", n ? n : "", u);
    return 1;
}

void keel__lua_open_entity(lua_State *L)
{
    static const luaL_Reg mt[] = {
        { "__newindex", entity_newindex }, { "__eq", entity_eq }, { "__tostring", entity_tostring }, { NULL, NULL }
    };
    keel__lua_newmt(L, &keel__lua_mt_entity);
    luaL_setfuncs(L, mt, 0);
    luaL_newlib(L, entity_methods);
    luaL_setfuncs(L, keel__lua_timer_entity_methods, 0); /* after, every */
    luaL_setfuncs(L, keel__lua_transform_entity_methods, 0); /* world_transform */
    lua_pushcclosure(L, entity_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}
