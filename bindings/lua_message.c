/* lua_message.c — messages between components: e:send(name, data) and w:broadcast(name, data),
 * delivered to the kinds' on_message(self, entity, name, data, sender) hooks at the end of each
 * phase (and at the start of a step for those sent outside one), each call a transaction.
 * Messages are runtime state: held per world in the Lua state, never saved. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "lua_http.h"
#include "bind.h"

#define MSG_MAX_DEPTH 16           /* nested tables in a message's data */
#define MSG_MAX_BYTES (64 * 1024)  /* its encoded size (strings, numbers, keys) */
#define MSG_MAX_PASS 100000        /* messages delivered in one pass; the rest are dropped */

/* ---- plain data, copied at send ---- */

/* Pushes a copy of the value at idx: nil, booleans, numbers, strings, entity handles and tables
 * of those (no cycles: `seen` marks the tables being copied). Raises InvalidArgument otherwise. */
static void copy_value(lua_State *L, int idx, int depth, size_t *bytes, int seen)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL: case LUA_TBOOLEAN: case LUA_TNUMBER:
        *bytes += 8;
        lua_pushvalue(L, idx);
        break;
    case LUA_TSTRING:
        *bytes += lua_rawlen(L, idx) + 2;
        lua_pushvalue(L, idx);
        break;
    case LUA_TUSERDATA:
        if (!keel__lua_testudata(L, idx, &keel__lua_mt_entity))
            keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: a %s is not plain data", luaL_typename(L, idx));
        *bytes += 36;
        lua_pushvalue(L, idx); /* handles are values: shared, not copied */
        break;
    case LUA_TTABLE:
        if (depth >= MSG_MAX_DEPTH)
            keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: tables nested deeper than %d", MSG_MAX_DEPTH);
        lua_pushvalue(L, idx);
        if (lua_rawget(L, seen) != LUA_TNIL)
            keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: a table holds itself (a cycle)");
        lua_pop(L, 1);
        lua_pushvalue(L, idx);
        lua_pushboolean(L, 1);
        lua_rawset(L, seen);
        luaL_checkstack(L, 6, "message data");
        lua_newtable(L);
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            int kt = lua_type(L, -2);
            if (kt != LUA_TSTRING && kt != LUA_TNUMBER && kt != LUA_TBOOLEAN)
                keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: a %s key is not plain data",
                                luaL_typename(L, -2));
            *bytes += kt == LUA_TSTRING ? lua_rawlen(L, -2) + 2 : 8;
            lua_pushvalue(L, -2);            /* key */
            copy_value(L, -2, depth + 1, bytes, seen); /* value */
            lua_rawset(L, -5);
            lua_pop(L, 1);
        }
        lua_pushvalue(L, idx); /* out of this table: a table seen twice without a cycle is fine */
        lua_pushnil(L);
        lua_rawset(L, seen);
        break;
    default:
        keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: a %s is not plain data", luaL_typename(L, idx));
    }
    if (*bytes > MSG_MAX_BYTES)
        keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data larger than %d bytes encoded", MSG_MAX_BYTES);
}

/* ---- the queue: registry msgs[world] = { head = i, n = j, [k] = { name, data, sender, target } } ---- */

static void push_queue(lua_State *L, keel_lua_ctx *ctx, keel_world *w, bool make)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->msgs_ref);
    if (lua_rawgetp(L, -1, w) != LUA_TTABLE && make) {
        lua_pop(L, 1);
        lua_createtable(L, 8, 2);
        lua_pushinteger(L, 1);
        lua_setfield(L, -2, "head");
        lua_pushinteger(L, 0);
        lua_setfield(L, -2, "n");
        lua_pushvalue(L, -1);
        lua_rawsetp(L, -3, w);
    }
    lua_remove(L, -2);
}

static lua_Integer get_int(lua_State *L, int t, const char *k)
{
    lua_getfield(L, t, k);
    lua_Integer v = lua_tointeger(L, -1);
    lua_pop(L, 1);
    return v;
}

static void set_int(lua_State *L, int t, const char *k, lua_Integer v)
{
    lua_pushinteger(L, v);
    lua_setfield(L, t, k);
}

/* Queues a message for world w: name at 2, data at 3, target at `target` (0: a broadcast), the
 * World udata at widx (for the sender's handle). */
static void enqueue(lua_State *L, keel_lua_world *lw, int widx, int target)
{
    keel_lua_ctx *ctx = lw->ctx;
    if (lua_type(L, 2) != LUA_TSTRING)
        keel_lua_raisef(L, KEEL_INVALID_ARGUMENT, "a message name must be a string, got %s", luaL_typename(L, 2));
    size_t bytes = 0;
    lua_newtable(L);
    int seen = lua_gettop(L);
    lua_createtable(L, 4, 0);
    int msg = lua_gettop(L);
    lua_pushvalue(L, 2);
    lua_rawseti(L, msg, 1);
    copy_value(L, 3, 0, &bytes, seen);
    lua_rawseti(L, msg, 2);
    /* the sender: the entity whose hook is running in this world, if any */
    if (ctx->depth > 0 && ctx->self_w[ctx->depth - 1] == lw->w && keel_alive(lw->w, ctx->self_c[ctx->depth - 1].entity)) {
        keel__lua_push_entity(L, widx, ctx->self_c[ctx->depth - 1].entity);
        lua_rawseti(L, msg, 3);
    }
    if (target) lua_pushvalue(L, target);
    else lua_pushboolean(L, 0);
    lua_rawseti(L, msg, 4);
    push_queue(L, ctx, lw->w, true);
    int q = lua_gettop(L);
    lua_Integer n = get_int(L, q, "n") + 1;
    lua_pushvalue(L, msg);
    lua_rawseti(L, q, n);
    set_int(L, q, "n", n);
}

int keel__lua_e_send(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    lua_settop(L, 3);
    int widx = keel__lua_push_handle_world(L, 1);
    enqueue(L, h->lw, widx, 1);
    return 0;
}

int keel__lua_w_broadcast(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    lua_settop(L, 3);
    enqueue(L, lw, 1, 0);
    return 0;
}

/* ---- delivery ---- */

int keel__lua_push_message(lua_State *L, keel_lua_ctx *ctx)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->msg_ref);
    int m = lua_gettop(L);
    lua_rawgeti(L, m, 1);
    lua_rawgeti(L, m, 2);
    lua_rawgeti(L, m, 3);
    lua_remove(L, m);
    return 3;
}

/* Components of entity e with an on_message hook, in membership order, appended to *list. */
static void receivers(keel_world *w, keel_entity e, keel_comp **list, size_t *n, size_t *cap)
{
    keel_member m;
    for (size_t i = 0; keel_member_at(w, e, i, &m); i++) {
        if (!m.loaded) continue;
        const keel_kind_desc *kd = keel_kind_describe(m.kind);
        if (!kd || !kd->hooks[KEEL_PHASE_ON_MESSAGE]) continue;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 16;
            keel_comp *g = realloc(*list, *cap * sizeof **list);
            if (!g) return;
            *list = g;
        }
        (*list)[(*n)++] = (keel_comp){ e, m.kind, m.slot };
    }
}

static void deliver(keel_world *w, keel_phase phase, double dt)
{
    lua_State *L = keel__lua_cur.L;
    keel_lua_ctx *ctx = keel__lua_cur.ctx;
    if (!L || !ctx || !ctx->alive || ctx->msgs_ref == LUA_NOREF || !lua_checkstack(L, 10)) return;
    int top = lua_gettop(L);
    if (phase == KEEL_PHASE_COUNT_ && keel__lua_http_open_count) keel__lua_http_step(L, ctx, w); /* between frames */
    if (phase < KEEL_PHASE_COUNT_) keel__lua_run_systems(L, ctx, w, phase, dt); /* then the phase's messages */
    push_queue(L, ctx, w, false);
    if (!lua_istable(L, -1)) {
        lua_settop(L, top);
        return;
    }
    int q = lua_gettop(L);
    size_t done = 0;
    keel_comp *list = NULL;
    size_t cap = 0;
    for (;;) {
        lua_Integer head = get_int(L, q, "head"), n = get_int(L, q, "n"); /* handlers may add */
        if (head > n) break;
        if (++done > MSG_MAX_PASS) {
            char text[128];
            snprintf(text, sizeof text, "LimitExceeded: more than %d messages in one delivery pass: %lld dropped", MSG_MAX_PASS,
                     (long long)(n - head + 1));
            keel__fault_add(w, (keel_uuid){ { 0 } }, "message", 0, KEEL_PHASE_ON_MESSAGE, text);
            break;
        }
        lua_rawgeti(L, q, head);
        int msg = lua_gettop(L);
        lua_pushnil(L);
        lua_rawseti(L, q, head);
        set_int(L, q, "head", head + 1);
        lua_pushvalue(L, msg);
        lua_rawseti(L, LUA_REGISTRYINDEX, ctx->msg_ref);
        size_t count = 0;
        lua_rawgeti(L, msg, 4);
        keel_lua_entity *to = lua_type(L, -1) == LUA_TUSERDATA ? lua_touserdata(L, -1) : NULL;
        if (to) { /* to one entity, dropped when it is gone */
            if (to->lw->w == w && keel_alive(w, to->e)) receivers(w, to->e, &list, &count, &cap);
        } else { /* to every component with on_message, in run order: the root first */
            receivers(w, keel_world_root(w), &list, &count, &cap);
            for (keel_entity e = keel_next(w, 0); e; e = keel_next(w, e)) receivers(w, e, &list, &count, &cap);
        }
        for (size_t i = 0; i < count; i++) keel__run_hook(w, list[i], KEEL_PHASE_ON_MESSAGE);
        lua_settop(L, q);
    }
    free(list);
    /* the pass is over: what is left (dropped past the cap) goes too */
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->msgs_ref);
    lua_pushnil(L);
    lua_rawsetp(L, -2, w);
    lua_pushnil(L);
    lua_rawseti(L, LUA_REGISTRYINDEX, ctx->msg_ref);
    lua_settop(L, top);
}

void keel__lua_messages_forget(lua_State *L, keel_lua_ctx *ctx, keel_world *w)
{
    if (ctx->msgs_ref == LUA_NOREF) return;
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->msgs_ref);
    lua_pushnil(L);
    lua_rawsetp(L, -2, w);
    lua_pop(L, 1);
}

void keel__lua_open_message(lua_State *L, keel_lua_ctx *ctx)
{
    if (ctx->msgs_ref == LUA_NOREF) {
        lua_newtable(L);
        ctx->msgs_ref = luaL_ref(L, LUA_REGISTRYINDEX);
        lua_pushboolean(L, 0);
        ctx->msg_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    keel__phase_end_hook = deliver;
}
