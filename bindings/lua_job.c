/* lua_job.c — keel.Job: a save running off the frame (design/saving.md). `w:save_async` is here;
 * `keel.persist.save_async` is lua_persist.c's. A job's errors come only from job:done() and
 * job:wait(), never raised by another call. */
#include <lua.h>
#include <lauxlib.h>
#include <string.h>

#include "lua_internal.h"
#include "lua_job.h"

static const keel_lua_type mt_job = { "keel.Job" };

typedef struct ljob {
    keel_job *j;       /* NULL once collected */
    bool checkpoint;   /* success moves the world's checkpoint (its own file, or adopt) */
    bool adopt;        /* ... and its path, to this one */
    bool settled;      /* the outcome was seen once: the checkpoint moved then */
    uint64_t revision; /* the world's revision at the call: what the file holds */
} ljob;

static int job_gc(lua_State *L)
{
    ljob *lj = keel__lua_checkudata(L, 1, &mt_job);
    keel_job_free(lj->j); /* a job still writing finishes on its own */
    lj->j = NULL;
    return 0;
}

/* The job at 1 finished: true, or false and the error object w:save would have returned. */
static int push_outcome(lua_State *L, ljob *lj, keel_status s, keel_diags *d)
{
    if (s != KEEL_OK) {
        keel__lua_fail(L, d); /* nil, err */
        lua_pushboolean(L, 0);
        lua_replace(L, -3);
        return 2;
    }
    keel_diags_free(d);
    if (!lj->settled && lj->checkpoint && lua_getiuservalue(L, 1, 1) == LUA_TUSERDATA) {
        keel_lua_world *lw = keel__lua_testudata(L, -1, &keel__lua_mt_world);
        if (lw && lw->w) {
            if (lj->adopt) keel__lua_world_loaded(L, lua_gettop(L), keel_job_path(lj->j));
            lw->saved_revision = lj->revision;
        }
    }
    lj->settled = true;
    lua_pushboolean(L, 1);
    return 1;
}

static ljob *checkjob(lua_State *L)
{
    ljob *lj = keel__lua_checkudata(L, 1, &mt_job);
    if (!lj->j) keel__lua_argerror(L, 1, "the job is collected");
    return lj;
}

/* job:done() -> nil while writing; then true, or false, err */
static int job_done(lua_State *L)
{
    ljob *lj = checkjob(L);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = KEEL_OK;
    if (!keel_job_done(lj->j, &s, &d)) {
        keel_diags_free(&d);
        lua_pushnil(L);
        return 1;
    }
    return push_outcome(L, lj, s, &d);
}

/* job:wait() -> what done() returns once the job is done */
static int job_wait(lua_State *L)
{
    ljob *lj = checkjob(L);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_job_wait(lj->j, &d);
    return push_outcome(L, lj, s, &d);
}

static int job_index(lua_State *L)
{
    ljob *lj = keel__lua_checkudata(L, 1, &mt_job);
    const char *k = lua_tostring(L, 2);
    if (k && strcmp(k, "path") == 0) {
        if (lj->j) lua_pushstring(L, keel_job_path(lj->j));
        else lua_pushnil(L);
        return 1;
    }
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    lua_pushvalue(L, 2);
    lua_rawget(L, -2);
    return 1;
}

static int job_tostring(lua_State *L)
{
    ljob *lj = keel__lua_checkudata(L, 1, &mt_job);
    keel_status s;
    if (!lj->j) lua_pushliteral(L, "keel.Job (collected)");
    else
        lua_pushfstring(L, "keel.Job (%s, %s)", keel_job_path(lj->j),
                        keel_job_done(lj->j, &s, NULL) ? "done" : "writing");
    return 1;
}

static void job_mt(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_job) == LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    lua_pop(L, 1);
    static const luaL_Reg meta[] = {
        { "__gc", job_gc }, { "__index", job_index }, { "__tostring", job_tostring }, { NULL, NULL }
    };
    static const luaL_Reg methods[] = { { "done", job_done }, { "wait", job_wait }, { NULL, NULL } };
    keel__lua_newmt(L, &mt_job);
    luaL_setfuncs(L, meta, 0);
    luaL_newlib(L, methods);
    lua_setfield(L, -2, "methods");
    lua_pop(L, 1);
}

/* A Job userdata holding the world at world_idx (for the checkpoint); its job is set after. */
static ljob *push_job(lua_State *L, int world_idx)
{
    world_idx = lua_absindex(L, world_idx);
    job_mt(L);
    ljob *lj = lua_newuserdatauv(L, sizeof *lj, 1);
    memset(lj, 0, sizeof *lj);
    keel__lua_setmt(L, &mt_job);
    lua_pushvalue(L, world_idx);
    lua_setiuservalue(L, -2, 1);
    return lj;
}

keel_job **keel__lua_new_job(lua_State *L, int world_idx)
{
    return &push_job(L, world_idx)->j;
}

static const char *const save_keys[] = { "adopt", NULL };

/* w:save_async([path [, { adopt }]]) -> keel.Job | nil, err: as w:save, the writing on a worker. */
int keel__lua_w_save_async(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    if (!lua_isnoneornil(L, 2) && lua_type(L, 2) != LUA_TSTRING)
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "save_async: a path expected, got %s",
                                luaL_typename(L, 2));
    if (!lua_isnoneornil(L, 2) && keel__lua_has_nul(L, 2))
        return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "save_async: the path holds a NUL byte");
    bool adopt = false;
    if (!lua_isnoneornil(L, 3)) {
        if (lua_type(L, 3) != LUA_TTABLE)
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "save_async: an options table expected, got %s",
                                    luaL_typename(L, 3));
        keel__lua_check_keys(L, 3, "save_async", save_keys);
        lua_getfield(L, 3, "adopt");
        if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TBOOLEAN)
            return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "save_async: adopt must be a boolean, got %s",
                                    luaL_typename(L, -1));
        adopt = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    const char *path = lua_isnoneornil(L, 2) ? lw->path : lua_tostring(L, 2);
    if (!path)
        return keel__lua_raisef(
            L, KEEL_INVALID_ARGUMENT,
            "save_async: this world has no path (w.path is nil): give one, or { adopt = true } to keep it");
    keel__lua_refuse_in_callback(L, lw->w, "w:save_async");
    ljob *lj = push_job(L, 1); /* before the job exists: a memory error here leaks nothing */
    bool own = lw->path && strcmp(path, lw->path) == 0;
    lj->checkpoint = adopt || own;
    lj->adopt = adopt && !own;
    lj->revision = keel_world_revision(lw->w);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_save_async(lw->w, path, &lj->j, &d);
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    return 1;
}
