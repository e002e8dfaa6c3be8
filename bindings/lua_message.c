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

void *keel__lua_payload_new(lua_State *L, keel_lua_ctx *ctx, int idx, void (**release)(void *))
{
    idx = lua_absindex(L, idx);
    size_t bytes = 0;
    lua_newtable(L);
    int seen = lua_gettop(L);
    copy_value(L, idx, 0, &bytes, seen);
    int ref = luaL_ref(L, LUA_REGISTRYINDEX); /* the last thing that can raise */
    lua_pop(L, 1);
    lua_payload *u = malloc(sizeof *u);
    if (!u) {
        luaL_unref(L, LUA_REGISTRYINDEX, ref);
        luaL_error(L, "not enough memory");
    }
    *u = (lua_payload){ ctx, ref };
    ctx->refs++;
    *release = payload_release;
    return u;
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

/* ---- the payload as bytes, for recordings (bind.h keel__msg_codec): the plain data copied at
 * send, tagged values in little-endian order; an entity handle by its UUID ---- */

typedef struct pbuf {
    uint8_t *p;
    size_t len, cap;
    bool bad;
} pbuf;

static void pb_put(pbuf *b, const void *p, size_t n)
{
    if (b->bad) return;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        while (cap < b->len + n) cap *= 2;
        uint8_t *np = realloc(b->p, cap);
        if (!np) {
            b->bad = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
}

static void pb_tag(pbuf *b, char t) { pb_put(b, &t, 1); }

static void pb_u64(pbuf *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
    pb_put(b, x, 8);
}

static void pb_u32(pbuf *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    pb_put(b, x, 4);
}

static void enc_value(lua_State *L, int idx, pbuf *b, int depth)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TNIL: pb_tag(b, 'n'); break;
    case LUA_TBOOLEAN: pb_tag(b, lua_toboolean(L, idx) ? 't' : 'f'); break;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            pb_tag(b, 'i');
            pb_u64(b, (uint64_t)lua_tointeger(L, idx));
        } else {
            double d = (double)lua_tonumber(L, idx);
            uint64_t u;
            memcpy(&u, &d, 8);
            pb_tag(b, 'd');
            pb_u64(b, u);
        }
        break;
    case LUA_TSTRING: {
        size_t n;
        const char *t = lua_tolstring(L, idx, &n);
        pb_tag(b, 's');
        pb_u32(b, (uint32_t)n);
        pb_put(b, t, n);
        break;
    }
    case LUA_TUSERDATA: {
        keel_lua_entity *h = keel__lua_testudata(L, idx, &keel__lua_mt_entity);
        if (!h) {
            b->bad = true;
            break;
        }
        if (h->lw->w && keel_alive(h->lw->w, h->e)) {
            keel_uuid u = keel_entity_uuid(h->lw->w, h->e);
            pb_tag(b, 'e');
            pb_put(b, u.bytes, 16);
        } else {
            pb_tag(b, 'x'); /* a stale handle: nil in a replay */
        }
        break;
    }
    case LUA_TTABLE: {
        if (depth > MSG_MAX_DEPTH || !lua_checkstack(L, 4)) {
            b->bad = true;
            break;
        }
        pb_tag(b, 'T');
        size_t at = b->len;
        uint32_t n = 0;
        pb_u32(b, 0);
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            enc_value(L, -2, b, depth + 1);
            enc_value(L, -1, b, depth + 1);
            n++;
            lua_pop(L, 1);
        }
        if (!b->bad) {
            uint8_t x[4] = { (uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16), (uint8_t)(n >> 24) };
            memcpy(b->p + at, x, 4);
        }
        break;
    }
    default: b->bad = true;
    }
}

static lua_State *ctx_state(keel_lua_ctx *ctx)
{
    return keel__lua_cur.ctx == ctx && keel__lua_cur.L ? keel__lua_cur.L : ctx->main;
}

static void *payload_encode(void *ud, const void *user, size_t *len)
{
    (void)ud;
    const lua_payload *u = user;
    if (!u->ctx->alive) return NULL;
    lua_State *L = ctx_state(u->ctx);
    if (!lua_checkstack(L, 4)) return NULL;
    lua_rawgeti(L, LUA_REGISTRYINDEX, u->ref);
    pbuf b = { 0 };
    enc_value(L, -1, &b, 0);
    lua_pop(L, 1);
    if (b.bad) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

typedef struct prd {
    const uint8_t *p;
    size_t len, pos;
} prd;

static bool pr_need(prd *r, size_t n) { return n <= r->len - r->pos; }

static uint64_t pr_u64(prd *r)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)r->p[r->pos + i] << (8 * i);
    r->pos += 8;
    return v;
}

static uint32_t pr_u32(prd *r)
{
    uint32_t v = (uint32_t)r->p[r->pos] | (uint32_t)r->p[r->pos + 1] << 8 | (uint32_t)r->p[r->pos + 2] << 16 |
                 (uint32_t)r->p[r->pos + 3] << 24;
    r->pos += 4;
    return v;
}

/* Pushes one value (the World udata at wi, for handles); false on bad bytes, nothing pushed. */
static bool dec_value(lua_State *L, prd *r, int wi, keel_world *w, int depth)
{
    if (!pr_need(r, 1) || depth > MSG_MAX_DEPTH + 1 || !lua_checkstack(L, 4)) return false;
    char t = (char)r->p[r->pos++];
    switch (t) {
    case 'n': lua_pushnil(L); return true;
    case 't': lua_pushboolean(L, 1); return true;
    case 'f': lua_pushboolean(L, 0); return true;
    case 'x': lua_pushnil(L); return true;
    case 'i':
        if (!pr_need(r, 8)) return false;
        lua_pushinteger(L, (lua_Integer)pr_u64(r));
        return true;
    case 'd': {
        if (!pr_need(r, 8)) return false;
        uint64_t u = pr_u64(r);
        double d;
        memcpy(&d, &u, 8);
        lua_pushnumber(L, d);
        return true;
    }
    case 's': {
        if (!pr_need(r, 4)) return false;
        uint32_t n = pr_u32(r);
        if (!pr_need(r, n)) return false;
        lua_pushlstring(L, (const char *)r->p + r->pos, n);
        r->pos += n;
        return true;
    }
    case 'e': {
        if (!pr_need(r, 16)) return false;
        keel_uuid u;
        memcpy(u.bytes, r->p + r->pos, 16);
        r->pos += 16;
        keel_entity e = keel_find(w, u);
        if (e) keel__lua_push_entity(L, wi, e);
        else lua_pushnil(L);
        return true;
    }
    case 'T': {
        if (!pr_need(r, 4)) return false;
        uint32_t n = pr_u32(r);
        if (n > (r->len - r->pos) / 2) return false; /* each pair takes two bytes at least */
        lua_createtable(L, 0, (int)n);
        for (uint32_t i = 0; i < n; i++) {
            if (!dec_value(L, r, wi, w, depth + 1)) {
                lua_pop(L, 1);
                return false;
            }
            if (!dec_value(L, r, wi, w, depth + 1)) {
                lua_pop(L, 2);
                return false;
            }
            if (lua_isnil(L, -2) || (lua_type(L, -2) == LUA_TNUMBER && lua_tonumber(L, -2) != lua_tonumber(L, -2))) {
                lua_pop(L, 3); /* a key no table can hold */
                return false;
            }
            lua_rawset(L, -3);
        }
        return true;
    }
    default: return false;
    }
}

static bool payload_decode(void *ud, keel_world *w, const uint8_t *p, size_t len, void **user, void (**release)(void *))
{
    keel_lua_ctx *ctx = ud;
    *user = NULL;
    *release = NULL;
    if (!ctx->alive) return true; /* no state to hold it: the message goes without */
    lua_State *L = ctx_state(ctx);
    if (!lua_checkstack(L, 8)) return false;
    int top = lua_gettop(L);
    keel__lua_push_world_of(L, ctx, w);
    prd r = { p, len, 0 };
    bool ok = dec_value(L, &r, top + 1, w, 0) && r.pos == r.len;
    if (!ok) {
        lua_settop(L, top);
        return false;
    }
    lua_payload *u = malloc(sizeof *u);
    if (!u) {
        lua_settop(L, top);
        return false;
    }
    u->ctx = ctx;
    u->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    ctx->refs++;
    lua_settop(L, top);
    *user = u;
    *release = payload_release;
    return true;
}

const keel__msg_codec keel__lua_msg_codec = { payload_encode, payload_decode };

void keel__lua_open_message(lua_State *L, keel_lua_ctx *ctx)
{
    (void)L, (void)ctx;
}
