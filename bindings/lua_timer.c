/* lua_timer.c — keel.Timer: w:after/w:every, e:after/e:every, t:cancel(), t.remaining. The Lua
 * function stays in the state's anchor table while the timer lives: a one-shot timer's leaves it
 * at its call, any other's when the core releases the timer. */
#include <math.h>
#include <stdlib.h>

#include "lua_internal.h"

static const keel_lua_type timer_type = { "keel.Timer" };

typedef struct ltimer {
    keel_timer_id id;
} ltimer; /* user value 1: the World */

/* A timer's Lua side: its ctx and the slot of its function in the ctx's anchor table. Taken from
 * the ctx's slabs and its own free list, and the function kept at a slot the binding hands out
 * itself: a timer costs no malloc/free and no luaL_ref/unref walk of the registry's free list
 * (together most of what `w:after` cost beyond the Lua calls). */
typedef struct timer_user {
    keel_lua_ctx *ctx;
    int slot;                /* in the anchor table */
    bool once;               /* w:after/e:after: its one call is its last */
    bool cleared;            /* its slot was emptied already (a one-shot timer's call) */
    struct timer_user *next; /* on the free list */
} timer_user;

enum { SLAB_USERS = 256 };
typedef struct timer_slab {
    struct timer_slab *next;
    timer_user users[SLAB_USERS];
} timer_slab;

struct keel_lua_timers {
    timer_slab *slabs;
    timer_user *free;
    int anchor; /* registry: { [slot] = function }, LUA_NOREF until the first timer */
    int mt;     /* registry: the Timer metatable, by integer (an array read, not a hashed look-up) */
    int top;    /* slots handed out so far */
    int *slots; /* freed slots, reused first (the table stays a dense array) */
    size_t nslots, capslots;
};

/* Freed with the ctx: every timer_user holds a ctx reference, so none is left by then. */
void keel__lua_timers_free(keel_lua_ctx *ctx)
{
    struct keel_lua_timers *ts = ctx->timers;
    if (!ts) return;
    for (timer_slab *b = ts->slabs, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(ts->slots);
    free(ts);
    ctx->timers = NULL;
}

static struct keel_lua_timers *timers_of(lua_State *L, keel_lua_ctx *ctx)
{
    struct keel_lua_timers *ts = ctx->timers;
    if (ts) return ts;
    ts = calloc(1, sizeof *ts);
    if (!ts) luaL_error(L, "not enough memory");
    ts->anchor = LUA_NOREF;
    ts->mt = LUA_NOREF;
    ctx->timers = ts;
    return ts;
}

/* The World udata whose check last passed in w:after/w:every: the same udata again needs no
 * metatable look-up (two live objects never share an address, and a World's __gc forgets it
 * before its memory can be reused: keel__lua_timer_world_gone). Lua runs on one thread. */
static const keel_lua_world *g_checked;

void keel__lua_timer_world_gone(const keel_lua_world *lw)
{
    if (g_checked == lw) g_checked = NULL;
}

/* keel__lua_checklw(L, 1), taking the World last checked on trust for its type only. */
static keel_lua_world *check_world(lua_State *L)
{
    keel_lua_world *lw = lua_touserdata(L, 1);
    if (!lw || lw != g_checked || lua_type(L, 1) != LUA_TUSERDATA || !lw->w ||
        keel_world_epoch(lw->w) != lw->epoch) {
        lw = keel__lua_checklw(L, 1); /* raises with its own words */
        g_checked = lw;
    }
    return lw;
}

/* Gives the Timer on top its metatable. */
static void timer_setmt(lua_State *L, struct keel_lua_timers *ts)
{
    if (ts->mt == LUA_NOREF) {
        keel__lua_setmt(L, &timer_type);
        lua_getmetatable(L, -1);
        ts->mt = luaL_ref(L, LUA_REGISTRYINDEX);
        return;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, ts->mt);
    lua_setmetatable(L, -2);
}

/* The function at 3 kept in a slot of the anchor table; returns the slot. May raise (memory). */
static int anchor_put(lua_State *L, struct keel_lua_timers *ts)
{
    if (ts->anchor == LUA_NOREF) {
        lua_createtable(L, 64, 0);
        ts->anchor = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    /* room in `slots` for every slot handed out, all of which may be freed at once: made while
     * raising is still fine, so a release never allocates */
    if (!ts->nslots && (size_t)ts->top + 1 > ts->capslots) {
        size_t cap = ts->capslots ? ts->capslots * 2 : 64;
        int *g = realloc(ts->slots, cap * sizeof *g);
        if (!g) luaL_error(L, "not enough memory");
        ts->slots = g;
        ts->capslots = cap;
    }
    int slot = ts->nslots ? ts->slots[ts->nslots - 1] : ts->top + 1;
    lua_rawgeti(L, LUA_REGISTRYINDEX, ts->anchor);
    lua_pushvalue(L, 3);
    lua_rawseti(L, -2, slot); /* may raise: nothing taken yet */
    lua_pop(L, 1);
    if (ts->nslots) ts->nslots--;
    else ts->top++;
    return slot;
}

static timer_user *user_take(struct keel_lua_timers *ts)
{
    if (!ts->free) {
        timer_slab *b = malloc(sizeof *b);
        if (!b) return NULL;
        b->next = ts->slabs;
        ts->slabs = b;
        for (int i = SLAB_USERS - 1; i >= 0; i--) {
            b->users[i].next = ts->free;
            ts->free = &b->users[i];
        }
    }
    timer_user *u = ts->free;
    ts->free = u->next;
    return u;
}

/* The state to call or unref on: the one that entered keel, if it is this ctx's. */
static lua_State *user_state(const timer_user *u)
{
    if (!u->ctx->alive || keel__lua_cur.ctx != u->ctx) return NULL;
    return keel__lua_cur.L;
}

static void timer_release(void *p)
{
    timer_user *u = p;
    keel_lua_ctx *ctx = u->ctx;
    struct keel_lua_timers *ts = ctx->timers;
    if (ctx->alive) {
        if (!u->cleared) {
            lua_State *L = user_state(u);
            if (!L) L = ctx->main;
            lua_rawgeti(L, LUA_REGISTRYINDEX, ts->anchor);
            lua_pushnil(L);
            lua_rawseti(L, -2, u->slot); /* clearing a present key never allocates */
            lua_pop(L, 1);
        }
        ts->slots[ts->nslots++] = u->slot; /* room was made when the slot was taken */
    }
    u->next = ts->free;
    ts->free = u;
    keel__lua_ctx_release(ctx); /* may free ts and the slabs (the last reference) */
}

/* Calls the function with the World (a world timer) or the owner's Entity, as a callback of the
 * world: w:close refuses meanwhile, and no component's self is its own. */
static keel_status timer_tramp(const keel_timer_call *call)
{
    timer_user *u = call->user;
    lua_State *L = user_state(u);
    if (!L) return KEEL_OK;
    keel_lua_ctx *ctx = u->ctx;
    int depth = ctx->depth;
    if (depth >= KEEL_LUA_MAX_DEPTH)
        return KEEL_ERROR(call->diags, KEEL_LIMIT_EXCEEDED, "", "callbacks nested more than %d deep",
                          KEEL_LUA_MAX_DEPTH);
    if (!lua_checkstack(L, 8)) return KEEL_ERROR(call->diags, KEEL_LIMIT_EXCEEDED, "", "Lua stack overflow");
    int top = lua_gettop(L);
    /* [anchor, (World,) function, argument]: what lies below the function is dropped after */
    lua_rawgeti(L, LUA_REGISTRYINDEX, ctx->timers->anchor);
    if (keel__lua_in_step_frame(L) && keel__lua_cur.w == call->world) { /* the World at 1 */
        lua_rawgeti(L, top + 1, u->slot);
        if (call->owner) keel__lua_push_entity_cached(L, 1, keel__lua_cur.cache_idx, call->owner);
        else lua_pushvalue(L, 1);
    } else {
        keel__lua_push_world_of(L, ctx, call->world);
        lua_rawgeti(L, top + 1, u->slot);
        if (call->owner) keel__lua_push_entity(L, top + 2, call->owner);
        else lua_pushvalue(L, top + 2);
    }
    if (u->once) { /* the stack holds the function now: its slot is emptied here, not by the release */
        lua_pushnil(L);
        lua_rawseti(L, top + 1, u->slot); /* clearing a present key never allocates */
        u->cleared = true;
    }
    ctx->self_w[depth] = call->world;
    ctx->self_c[depth] = (keel_comp){ 0 };
    ctx->self_k[depth] = NULL;
    ctx->self_gone[depth] = true; /* no self table to flush or sync */
    ctx->depth++;
    keel_status s = KEEL_OK;
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) s = keel__lua_record_error(L, call->diags, "timer");
    ctx->depth--;
    lua_settop(L, top);
    return s;
}

/* A timer whose action is data: message `name` (at 3) with the plain data at 4, broadcast (a world
 * timer) or sent to the owner at each firing. A recording can hold it, as it cannot a function. */
static int message_timer(lua_State *L, int world_idx, keel_lua_world *lw, keel_entity owner, bool repeat, double s)
{
    if (keel__lua_has_nul(L, 3))
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "a message name cannot hold a NUL byte");
    ltimer *t = lua_newuserdatauv(L, sizeof *t, 1);
    t->id = 0;
    timer_setmt(L, timers_of(L, lw->ctx));
    lua_pushvalue(L, world_idx);
    lua_setiuservalue(L, -2, 1);
    void (*release)(void *) = NULL;
    void *user = keel__lua_payload_new(L, lw->ctx, 4, &release);
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel__timer_message(lw->w, s, repeat, owner, lua_tostring(L, 3), NULL, 0, user, release, &t->id, &d);
    keel__lua_check(L, st, &d, NULL);
    return 1;
}

/* w:after/w:every (owner 0) and e:after/e:every: seconds at 2, the function at 3; the World
 * udata at world_idx. Pushes the Timer. */
static int timer_make(lua_State *L, int world_idx, keel_lua_world *lw, keel_entity owner, bool repeat)
{
    const char *what = repeat ? "every" : "after";
    int ft = lua_type(L, 3);
    if (ft != LUA_TFUNCTION) lua_settop(L, world_idx > 4 ? world_idx : 4); /* 4: a message timer's data */
    double s = lua_tonumber(L, 2);
    if (lua_type(L, 2) != LUA_TNUMBER || !isfinite(s) || s < 0 || (repeat && s == 0))
        return keel__lua_raisef(
            L, KEEL_INVALID_ARGUMENT, "%s: seconds must be a finite number %s 0, got %s", what,
            repeat ? ">" : ">=", lua_type(L, 2) == LUA_TNUMBER ? lua_tostring(L, 2) : luaL_typename(L, 2));
    if (ft != LUA_TFUNCTION) {
        if (ft == LUA_TSTRING) return message_timer(L, world_idx, lw, owner, repeat, s);
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s: a function or a message name expected, got %s", what,
                               luaL_typename(L, 3));
    }
    struct keel_lua_timers *ts = timers_of(L, lw->ctx);
    ltimer *t = lua_newuserdatauv(L, sizeof *t, 1);
    t->id = 0;
    timer_setmt(L, ts);
    lua_pushvalue(L, world_idx);
    lua_setiuservalue(L, -2, 1);
    int slot = anchor_put(L, ts); /* the last thing that can raise */
    timer_user *u = user_take(ts);
    if (!u) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, ts->anchor);
        lua_pushnil(L);
        lua_rawseti(L, -2, slot);
        lua_pop(L, 1);
        ts->slots[ts->nslots++] = slot;
        return luaL_error(L, "not enough memory");
    }
    *u = (timer_user){ lw->ctx, slot, !repeat, false, NULL };
    lw->ctx->refs++;
    keel_timer_desc desc = {
        .seconds = s, .repeat = repeat, .owner = owner, .fn = timer_tramp, .user = u, .release = timer_release
    };
    keel_diags d;
    keel_diags_init(&d);
    keel_status st = keel_timer_add(lw->w, &desc, &t->id, &d);
    if (st != KEEL_OK) timer_release(u);
    keel__lua_check(L, st, &d, NULL);
    return 1;
}

/* A function timer takes its arguments as they are (the Timer goes on top); the other kinds are
 * given exactly 4 first (timer_make). */
static int w_after(lua_State *L)
{
    return timer_make(L, 1, check_world(L), 0, false);
}
static int w_every(lua_State *L)
{
    return timer_make(L, 1, check_world(L), 0, true);
}

static int entity_timer(lua_State *L, bool repeat)
{
    keel_lua_entity *h = keel__lua_checkentity(L, 1);
    lua_settop(L, 4); /* 4: a message timer's data; the World above it */
    int widx = keel__lua_push_handle_world(L, 1);
    return timer_make(L, widx, h->lw, h->e, repeat);
}

static int e_after(lua_State *L)
{
    return entity_timer(L, false);
}
static int e_every(lua_State *L)
{
    return entity_timer(L, true);
}

const luaL_Reg keel__lua_timer_world_methods[] = { { "after", w_after }, { "every", w_every }, { NULL, NULL } };
const luaL_Reg keel__lua_timer_entity_methods[] = { { "after", e_after }, { "every", e_every }, { NULL, NULL } };

/* The Timer at idx and its world (NULL once the world is closed). */
static ltimer *check_timer(lua_State *L, int idx, keel_world **w)
{
    ltimer *t = keel__lua_checkudata(L, idx, &timer_type);
    lua_getiuservalue(L, idx, 1);
    keel_lua_world *lw = lua_touserdata(L, -1);
    lua_pop(L, 1);
    *w = lw ? lw->w : NULL;
    return t;
}

/* t:cancel(): true when it was pending; cancelling an ended timer does nothing. */
static int t_cancel(lua_State *L)
{
    keel_world *w;
    ltimer *t = check_timer(L, 1, &w);
    lua_pushboolean(L, w && keel_timer_cancel(w, t->id) == KEEL_OK);
    return 1;
}

static const luaL_Reg timer_methods[] = { { "cancel", t_cancel }, { NULL, NULL } };

static int timer_index(lua_State *L)
{
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
    lua_pop(L, 1);
    keel_world *w;
    ltimer *t = check_timer(L, 1, &w);
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "remaining") == 0) {
        double s;
        if (w && keel_timer_remaining(w, t->id, &s) == KEEL_OK) lua_pushnumber(L, s);
        else lua_pushnil(L); /* ended: fired once, cancelled, its owner or world gone */
        return 1;
    }
    if (k && strcmp(k, "id") == 0) {
        lua_pushinteger(L, (lua_Integer)t->id);
        return 1;
    }
    return 0;
}

static int timer_tostring(lua_State *L)
{
    keel_world *w;
    ltimer *t = check_timer(L, 1, &w);
    double s;
    if (w && keel_timer_remaining(w, t->id, &s) == KEEL_OK)
        lua_pushfstring(L, "keel.Timer %I (%f s left)", (lua_Integer)t->id, s);
    else lua_pushfstring(L, "keel.Timer %I (ended)", (lua_Integer)t->id);
    return 1;
}

void keel__lua_open_timer(lua_State *L)
{
    static const luaL_Reg mt[] = { { "__tostring", timer_tostring }, { NULL, NULL } };
    keel__lua_newmt(L, &timer_type);
    luaL_setfuncs(L, mt, 0);
    luaL_newlib(L, timer_methods);
    lua_pushcclosure(L, timer_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
}
