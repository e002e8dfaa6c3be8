/* lua_replay.c — the world's random generator (w:random), keel.record and keel.replay
 * (design/replay.md); the recording and the replay themselves are core/game/record.c and
 * core/game/replay.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"

void keel__lua_world_writable(lua_State *L, keel_lua_world *lw)
{
    if (lw->w && keel__world_frozen(lw->w))
        keel__lua_raisef(L, KEEL_INVALID_OPERATION, "a replay's world is read-only (rp:branch() gives a live one)");
}

static int64_t check_bound(lua_State *L, int idx)
{
    if (lua_isinteger(L, idx)) return (int64_t)lua_tointeger(L, idx);
    lua_Integer n;
    if (lua_type(L, idx) == LUA_TNUMBER && lua_numbertointeger(floor(lua_tonumber(L, idx)), &n) &&
        (lua_Number)n == lua_tonumber(L, idx))
        return (int64_t)n;
    keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "w:random: argument #%d must be an integer, got %s", idx - 1,
                     lua_type(L, idx) == LUA_TNUMBER ? "a fraction" : luaL_typename(L, idx));
    return 0;
}

/* w:random([m [, n]]): math.random's signature, drawn from the world's own generator. */
static int w_random(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    int n = lua_gettop(L);
    if (n == 1) {
        lua_pushnumber(L, (lua_Number)keel_random_unit(lw->w));
        return 1;
    }
    if (n > 3) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "w:random: at most two arguments");
    int64_t lo = 1, hi;
    if (n == 2) hi = check_bound(L, 2);
    else {
        lo = check_bound(L, 2);
        hi = check_bound(L, 3);
    }
    keel_diags d;
    keel_diags_init(&d);
    int64_t out = 0;
    keel_status s = keel_random_int(lw->w, lo, hi, &out, &d);
    keel__lua_check(L, s, &d, NULL);
    lua_pushinteger(L, (lua_Integer)out);
    return 1;
}

const luaL_Reg keel__lua_replay_world_methods[] = { { "random", w_random }, { NULL, NULL } };

/* ---- keel.record: keel.Recorder (user value 1: the World) ---- */

static const keel_lua_type rec_type = { "keel.Recorder" };
static const keel_lua_type rp_type = { "keel.Replay" };

typedef struct lrec {
    keel_recorder *r; /* NULL once closed; stays (closed) when its world goes first */
    uint64_t frames, bytes; /* as it closed */
} lrec;

static int rec_close(lua_State *L)
{
    lrec *lr = keel__lua_checkudata(L, 1, &rec_type);
    keel_recorder *r = lr->r;
    if (!r) {
        lua_pushboolean(L, 1);
        return 1;
    }
    lr->frames = keel__record_frames(r);
    lr->bytes = keel__record_bytes(r);
    lr->r = NULL;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel__record_stop(r, &d);
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    lua_pushboolean(L, 1);
    return 1;
}

static int rec_gc(lua_State *L)
{
    lrec *lr = lua_touserdata(L, 1);
    if (lr && lr->r) {
        keel_recorder *r = lr->r;
        lr->r = NULL;
        keel__record_stop(r, NULL);
    }
    return 0;
}

/* The recorder while it records (NULL once closed, or its world closed). */
static keel_recorder *rec_live(lua_State *L, lrec *lr)
{
    (void)L;
    return lr->r && keel__record_open(lr->r) ? lr->r : NULL;
}

static int rec_index(lua_State *L)
{
    lrec *lr = keel__lua_checkudata(L, 1, &rec_type);
    const char *k = lua_tostring(L, 2);
    keel_recorder *r = rec_live(L, lr);
    if (k && strcmp(k, "close") == 0) {
        lua_pushcfunction(L, rec_close);
        return 1;
    }
    if (k && strcmp(k, "frames") == 0) {
        lua_pushinteger(L, (lua_Integer)(lr->r ? keel__record_frames(lr->r) : lr->frames));
        return 1;
    }
    if (k && strcmp(k, "bytes") == 0) {
        lua_pushinteger(L, (lua_Integer)(lr->r ? keel__record_bytes(lr->r) : lr->bytes));
        return 1;
    }
    if (k && strcmp(k, "closed") == 0) {
        lua_pushboolean(L, r == NULL);
        return 1;
    }
    lua_pushnil(L);
    return 1;
}

static int rec_tostring(lua_State *L)
{
    lrec *lr = keel__lua_checkudata(L, 1, &rec_type);
    keel_recorder *r = rec_live(L, lr);
    if (r) lua_pushfstring(L, "keel.Recorder (%s, %d frames)", keel__record_path(r), (int)keel__record_frames(r));
    else lua_pushliteral(L, "keel.Recorder (closed)");
    return 1;
}

static const char *check_path(lua_State *L, int idx, const char *fn)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        keel__lua_argerror(L, idx, "%s: a file path expected, got %s", fn, luaL_typename(L, idx));
    if (keel__lua_has_nul(L, idx)) keel__lua_argerror(L, idx, "%s: a path holds a NUL byte", fn);
    return lua_tostring(L, idx);
}

static uint32_t opt_every(lua_State *L, int idx, const char *fn)
{
    if (lua_isnoneornil(L, idx)) return 300;
    if (lua_type(L, idx) != LUA_TTABLE) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s: options must be a table", fn);
    lua_getfield(L, idx, "keyframe_every");
    uint32_t every = 300;
    if (!lua_isnil(L, -1)) {
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > 1000000000)
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s: keyframe_every must be an integer from 1", fn);
        every = (uint32_t)lua_tointeger(L, -1);
    }
    lua_pop(L, 1);
    return every;
}

/* keel.record(w, path [, { keyframe_every = N }]) -> keel.Recorder | nil, err */
static int k_record(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    const char *path = check_path(L, 2, "keel.record");
    uint32_t every = opt_every(L, 3, "keel.record");
    lrec *lr = lua_newuserdatauv(L, sizeof *lr, 1);
    memset(lr, 0, sizeof *lr);
    keel__lua_setmt(L, &rec_type);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1);
    keel_diags d;
    keel_diags_init(&d);
    keel_recorder *r = NULL;
    keel_status s = keel__record_start(lw->w, path, every, keel__lua_kind_source, L, &r, &d);
    if (s == KEEL_IO_ERROR) return keel__lua_fail(L, &d);
    keel__lua_check(L, s, &d, NULL);
    lr->r = r;
    return 1;
}

/* ---- keel.replay: keel.Replay (user value 1: its World) ---- */

typedef struct lreplay {
    keel_replay *rp; /* NULL once closed */
} lreplay;

static keel_replay *rp_check(lua_State *L)
{
    lreplay *lp = keel__lua_checkudata(L, 1, &rp_type);
    if (!lp->rp) keel__lua_raisef(L, KEEL_INVALID_OPERATION, "the replay is closed");
    lua_getiuservalue(L, 1, 1);
    keel_lua_world *lw = keel__lua_testudata(L, -1, &keel__lua_mt_world);
    lua_pop(L, 1);
    if (!lw || lw->w != keel__replay_world(lp->rp)) {
        keel__replay_close(lp->rp); /* its world was closed under it */
        lp->rp = NULL;
        keel__lua_raisef(L, KEEL_INVALID_OPERATION, "the replay's world was closed");
    }
    return lp->rp;
}

typedef struct rp_call {
    keel_replay *rp;
    uint64_t n;
    int what; /* 0 step, 1 seek */
} rp_call;

static keel_status rp_run(void *ud, keel_world *w, keel_diags *d)
{
    (void)w;
    rp_call *c = ud;
    return c->what ? keel__replay_seek(c->rp, c->n, d) : keel__replay_step(c->rp, c->n, d);
}

/* Runs a step or a seek with the replay's World at index 1 (as w:step runs hooks); the replay
 * object is kept at index 2 afterwards. */
static void rp_drive(lua_State *L, keel_replay *rp, uint64_t n, int what)
{
    lua_settop(L, 1);
    lua_getiuservalue(L, 1, 1);
    lua_insert(L, 1); /* [world, replay] */
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    rp_call c = { rp, n, what };
    keel_diags d;
    keel_diags_init(&d);
    lua_pushvalue(L, 2);
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.running"); /* alive while the stack is cut */
    keel_status s = keel__lua_world_run(L, lw, rp_run, &c, &d);
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.running");
    keel__lua_check(L, s, &d, NULL);
}

static uint64_t check_count(lua_State *L, int idx, const char *what, lua_Integer dflt)
{
    if (lua_isnoneornil(L, idx)) return (uint64_t)dflt;
    if (!lua_isinteger(L, idx) || lua_tointeger(L, idx) < 0)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s must be a non-negative integer, got %s", what,
                         lua_type(L, idx) == LUA_TNUMBER ? "a fraction or a negative number" : luaL_typename(L, idx));
    return (uint64_t)lua_tointeger(L, idx);
}

static int rp_step(lua_State *L)
{
    keel_replay *rp = rp_check(L);
    uint64_t n = check_count(L, 2, "rp:step(n): n", 1);
    rp_drive(L, rp, n, 0);
    lua_pushinteger(L, (lua_Integer)keel__replay_frame(rp));
    return 1;
}

static int rp_seek(lua_State *L)
{
    keel_replay *rp = rp_check(L);
    if (lua_isnoneornil(L, 2)) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "rp:seek(frame): a frame expected");
    uint64_t f = check_count(L, 2, "rp:seek(frame): frame", 0);
    rp_drive(L, rp, f, 1);
    lua_pushinteger(L, (lua_Integer)keel__replay_frame(rp));
    return 1;
}

static int rp_close(lua_State *L)
{
    lreplay *lp = keel__lua_checkudata(L, 1, &rp_type);
    if (lp->rp) {
        lua_getiuservalue(L, 1, 1);
        keel_lua_world *lw = keel__lua_testudata(L, -1, &keel__lua_mt_world);
        if (lw && lw->w && lw->w == keel__replay_world(lp->rp)) keel__world_freeze(lw->w, false); /* ordinary again */
        keel__replay_close(lp->rp);
        lp->rp = NULL;
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int rp_gc(lua_State *L)
{
    lreplay *lp = lua_touserdata(L, 1);
    if (lp && lp->rp) {
        keel__replay_close(lp->rp);
        lp->rp = NULL;
    }
    return 0;
}

typedef struct adopt_call {
    keel_replay *rp;
    keel_world *fresh, *old;
} adopt_call;

static keel_status adopt_run(void *ud, keel_world *w, keel_diags *d)
{
    (void)w;
    adopt_call *a = ud;
    a->old = keel__replay_adopt(a->rp, a->fresh, d);
    return a->old ? KEEL_OK : KEEL_INVALID_OPERATION;
}

/* rp:branch() -> the World at this frame, live; the replay goes on in a new world of its own. */
static int rp_branch(lua_State *L)
{
    keel_replay *rp = rp_check(L);
    lreplay *lp = lua_touserdata(L, 1);
    lua_settop(L, 1);
    lua_getiuservalue(L, 1, 1); /* 2: the World to hand over */
    keel_lua_world *old = keel__lua_checklw(L, 2);
    keel_world *fresh = keel_world_new("");
    if (!fresh) return luaL_error(L, "out of memory");
    keel__lua_push_world(L, old->ctx, fresh, true); /* 3: the replay's new World */
    lua_pushvalue(L, 3);
    lua_insert(L, 1); /* [new World, replay, old World, new World] */
    lua_settop(L, 3);
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    adopt_call a = { rp, fresh, NULL };
    keel_diags d;
    keel_diags_init(&d);
    lua_pushvalue(L, 2);
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.running");
    lua_pushvalue(L, 3);
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.branch");
    keel_status s = keel__lua_world_run(L, lw, adopt_run, &a, &d);
    lua_getfield(L, LUA_REGISTRYINDEX, "keel.replay.running"); /* 2: the replay */
    lua_getfield(L, LUA_REGISTRYINDEX, "keel.replay.branch");  /* 3: the old World */
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.running");
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.branch");
    keel__lua_check(L, s, &d, NULL); /* the new World, unused, is collected */
    (void)lp;
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, 2, 1); /* the replay's World from now on */
    lua_pushvalue(L, 3);
    return 1;
}

static int rp_index(lua_State *L)
{
    lreplay *lp = keel__lua_checkudata(L, 1, &rp_type);
    const char *k = lua_tostring(L, 2);
    static const luaL_Reg methods[] = { { "step", rp_step }, { "seek", rp_seek }, { "branch", rp_branch },
                                        { "close", rp_close }, { NULL, NULL } };
    for (const luaL_Reg *m = methods; k && m->name; m++)
        if (strcmp(k, m->name) == 0) {
            lua_pushcfunction(L, m->func);
            return 1;
        }
    if (!k || !lp->rp) {
        lua_pushnil(L);
        return 1;
    }
    keel_replay *rp = rp_check(L);
    if (strcmp(k, "frames") == 0) lua_pushinteger(L, (lua_Integer)keel__replay_frames(rp));
    else if (strcmp(k, "frame") == 0) lua_pushinteger(L, (lua_Integer)keel__replay_frame(rp));
    else if (strcmp(k, "world") == 0) lua_getiuservalue(L, 1, 1);
    else if (strcmp(k, "truncated") == 0) lua_pushboolean(L, keel__replay_truncated(rp));
    else if (strcmp(k, "hash") == 0) {
        char h[17];
        snprintf(h, sizeof h, "%016llx", (unsigned long long)keel__replay_hash(rp));
        lua_pushstring(L, h);
    }
    else if (strcmp(k, "keyframes") == 0) {
        size_t n = keel__replay_keyframes(rp, NULL, 0);
        uint64_t *fr = lua_newuserdatauv(L, (n ? n : 1) * sizeof *fr, 0);
        keel__replay_keyframes(rp, fr, n);
        lua_createtable(L, (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            lua_pushinteger(L, (lua_Integer)fr[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
    } else if (strcmp(k, "diverged") == 0 || strcmp(k, "differences") == 0) {
        const keel_replay_diff *ds;
        size_t n;
        uint64_t at = keel__replay_diverged(rp, &ds, &n);
        if (!at) lua_pushnil(L);
        else if (k[1] == 'i' && k[2] == 'v') lua_pushinteger(L, (lua_Integer)at);
        else {
            lua_createtable(L, (int)n, 0);
            for (size_t i = 0; i < n; i++) {
                lua_createtable(L, 0, 6);
                lua_pushstring(L, ds[i].entity);
                lua_setfield(L, -2, "entity");
                if (ds[i].kind) lua_pushstring(L, ds[i].kind), lua_setfield(L, -2, "kind");
                lua_pushinteger(L, ds[i].slot);
                lua_setfield(L, -2, "slot");
                if (ds[i].field) lua_pushstring(L, ds[i].field), lua_setfield(L, -2, "field");
                lua_pushstring(L, ds[i].recorded);
                lua_setfield(L, -2, "recorded");
                lua_pushstring(L, ds[i].replayed);
                lua_setfield(L, -2, "replayed");
                lua_rawseti(L, -2, (lua_Integer)i + 1);
            }
        }
    } else lua_pushnil(L);
    return 1;
}

static int rp_newindex(lua_State *L)
{
    const char *k = lua_tostring(L, 2);
    return keel__lua_raisef(L, KEEL_UNSUPPORTED, "rp.%s is read-only", k ? k : "?");
}

static int rp_tostring(lua_State *L)
{
    lreplay *lp = keel__lua_checkudata(L, 1, &rp_type);
    if (!lp->rp) lua_pushliteral(L, "keel.Replay (closed)");
    else lua_pushfstring(L, "keel.Replay (frame %d of %d)", (int)keel__replay_frame(lp->rp), (int)keel__replay_frames(lp->rp));
    return 1;
}

static keel_status open_run(void *ud, keel_world *w, keel_diags *d);

typedef struct open_call {
    const char *path;
    keel_replay_opts o;
    keel_replay *rp;
} open_call;

static keel_status open_run(void *ud, keel_world *w, keel_diags *d)
{
    open_call *c = ud;
    return keel__replay_open(c->path, w, &c->o, &c->rp, d);
}

/* keel.replay(path [, { allow_changed_kinds = bool, verify = bool }]) -> keel.Replay | nil, err */
static int k_replay(lua_State *L)
{
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    const char *path = check_path(L, 1, "keel.replay");
    open_call c = { path, { false, true, keel__lua_kind_source, L }, NULL };
    if (!lua_isnoneornil(L, 2)) {
        if (lua_type(L, 2) != LUA_TTABLE) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "keel.replay: options must be a table");
        lua_getfield(L, 2, "allow_changed_kinds");
        c.o.allow_changed_kinds = lua_toboolean(L, -1);
        lua_getfield(L, 2, "verify");
        if (!lua_isnil(L, -1)) c.o.verify = lua_toboolean(L, -1);
        lua_pop(L, 2);
    }
    lua_pushstring(L, path); /* kept: the stack is cut below */
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.path");
    lua_getfield(L, LUA_REGISTRYINDEX, "keel.replay.path");
    c.path = lua_tostring(L, -1);
    lreplay *lp = lua_newuserdatauv(L, sizeof *lp, 1); /* closed until it opens: nothing leaks */
    lp->rp = NULL;
    keel__lua_setmt(L, &rp_type);
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.running");
    keel_world *w = keel_world_new("");
    if (!w) return luaL_error(L, "out of memory");
    lua_settop(L, 0);
    keel__lua_push_world(L, ctx, w, true); /* 1 */
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel__lua_world_run(L, keel__lua_checklw(L, 1), open_run, &c, &d);
    lua_getfield(L, LUA_REGISTRYINDEX, "keel.replay.running"); /* 2 */
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.running");
    lua_pushnil(L);
    lua_setfield(L, LUA_REGISTRYINDEX, "keel.replay.path");
    if (s != KEEL_OK) return keel__lua_fail(L, &d); /* the World is collected */
    keel_diags_free(&d);
    lp = lua_touserdata(L, 2);
    lp->rp = c.rp;
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, 2, 1);
    return 1;
}

static const luaL_Reg replay_funcs[] = { { "record", k_record }, { "replay", k_replay }, { NULL, NULL } };

void keel__lua_open_replay(lua_State *L)
{
    luaL_setfuncs(L, replay_funcs, 1);
    static const luaL_Reg rec_mt[] = { { "__index", rec_index }, { "__gc", rec_gc }, { "__close", rec_gc },
                                       { "__tostring", rec_tostring }, { NULL, NULL } };
    keel__lua_newmt(L, &rec_type);
    luaL_setfuncs(L, rec_mt, 0);
    lua_pop(L, 1);
    static const luaL_Reg rp_mt[] = { { "__index", rp_index }, { "__newindex", rp_newindex }, { "__gc", rp_gc },
                                      { "__close", rp_gc }, { "__tostring", rp_tostring }, { NULL, NULL } };
    keel__lua_newmt(L, &rp_type);
    luaL_setfuncs(L, rp_mt, 0);
    lua_pop(L, 1);
}
