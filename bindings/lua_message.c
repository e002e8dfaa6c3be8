/* lua_message.c — messages between components: e:send(name, data) and w:broadcast(name, data),
 * delivered to the kinds' on_message(self, entity, name, data, sender) hooks at the end of each
 * phase (and at the start of a step for those sent outside one), each call a transaction.
 * The queue and delivery are the core's (message.c); the data is copied here, kept in the
 * registry and released with the message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "channel/lua_http.h"
#include "bind.h"

#define MSG_MAX_DEPTH 16                    /* nested tables in a message's data */
#define MSG_MAX_BYTES KEEL_MESSAGE_MAX_SIZE /* its encoded size (strings, numbers, keys) */

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
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: a %s is not plain data", luaL_typename(L, idx));
        *bytes += 36;
        lua_pushvalue(L, idx); /* handles are values: shared, not copied */
        break;
    case LUA_TTABLE:
        if (depth >= MSG_MAX_DEPTH)
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: tables nested deeper than %d", MSG_MAX_DEPTH);
        lua_pushvalue(L, idx);
        if (lua_rawget(L, seen) != LUA_TNIL)
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: a table holds itself (a cycle)");
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
                keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: a %s key is not plain data",
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
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data: a %s is not plain data", luaL_typename(L, idx));
    }
    if (*bytes > MSG_MAX_BYTES)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "message data larger than %d bytes encoded", MSG_MAX_BYTES);
}

/* ---- sending: the world's queue is the core's (message.c), shared with C's keel_send ---- */

typedef struct lua_payload {
    keel_lua_ctx *ctx;
    int ref; /* registry: the copied data (LUA_REFNIL for nil) */
} lua_payload;

static void payload_release(void *p)
{
    lua_payload *u = p;
    if (u->ctx->alive) {
        lua_State *L = keel__lua_cur.ctx == u->ctx && keel__lua_cur.L ? keel__lua_cur.L : u->ctx->main;
        luaL_unref(L, LUA_REGISTRYINDEX, u->ref);
    }
    keel__lua_ctx_release(u->ctx);
    free(u);
}

/* Queues a message for world w: name at 2, data at 3, to entity `to` (KEEL_NO_ENTITY and
 * broadcast: every receiver). */
static void enqueue(lua_State *L, keel_lua_world *lw, keel_entity to, bool broadcast)
{
    keel_lua_ctx *ctx = lw->ctx;
    if (lua_type(L, 2) != LUA_TSTRING)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "a message name must be a string, got %s", luaL_typename(L, 2));
    if (keel__lua_has_nul(L, 2))
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "a message name cannot hold a NUL byte");
    size_t bytes = 0;
    lua_newtable(L);
    int seen = lua_gettop(L);
    copy_value(L, 3, 0, &bytes, seen);
    /* the sender: the entity whose hook is running in this world, if any */
    keel_entity sender = KEEL_NO_ENTITY;
    if (ctx->depth > 0 && ctx->self_w[ctx->depth - 1] == lw->w &&
        keel_alive(lw->w, ctx->self_c[ctx->depth - 1].entity))
        sender = ctx->self_c[ctx->depth - 1].entity;
    int ref = luaL_ref(L, LUA_REGISTRYINDEX); /* the last thing that can raise */
    lua_payload *u = malloc(sizeof *u);
    if (!u) {
        luaL_unref(L, LUA_REGISTRYINDEX, ref);
        luaL_error(L, "not enough memory");
    }
    *u = (lua_payload){ ctx, ref };
    ctx->refs++;
    keel_diags d;
    keel_diags_init(&d);
    /* the core releases the payload on a refusal too */
    keel_status st = keel__message_post(lw->w, to, broadcast, lua_tostring(L, 2), NULL, 0, sender, u,
                                        payload_release, &d);
    keel__lua_check(L, st, &d, NULL);
}

int keel__lua_e_send(lua_State *L)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    lua_settop(L, 3);
    enqueue(L, h->lw, h->e, false);
    return 0;
}

int keel__lua_w_broadcast(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    lua_settop(L, 3);
    enqueue(L, lw, KEEL_NO_ENTITY, true);
    return 0;
}

/* ---- delivery: the core calls on_message hooks; their trampoline pushes the message ---- */

int keel__lua_push_message(lua_State *L, keel_lua_ctx *ctx, const keel_call *call)
{
    const keel_message *m = keel_call_message(call);
    if (!m) {
        lua_pushnil(L);
        lua_pushnil(L);
        lua_pushnil(L);
        return 3;
    }
    lua_pushstring(L, m->name);
    const lua_payload *u = m->user;
    if (u && u->ctx == ctx) lua_rawgeti(L, LUA_REGISTRYINDEX, u->ref);
    else if (m->size) lua_pushlstring(L, m->data, m->size); /* from C: its bytes */
    else lua_pushnil(L);
    if (m->sender && keel_alive(call->world, m->sender)) {
        keel__lua_push_world_of(L, ctx, call->world);
        keel__lua_push_entity(L, -1, m->sender);
        lua_remove(L, -2);
    } else {
        lua_pushnil(L);
    }
    return 3;
}

void keel__lua_open_message(lua_State *L, keel_lua_ctx *ctx)
{
    (void)L, (void)ctx;
}
