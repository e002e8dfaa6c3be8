/* lua_module.c — luaopen_keel_core: the module table, the per-state context and its sentinel,
 * and the modules keel.core registers beside itself (keel.json, keel.core.*). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "channel/lua_http.h"
#include "channel/lua_json.h"
#include "channel/lua_watch.h"

keel_lua_frame keel__lua_cur;
unsigned long keel__lua_entries;
unsigned long keel__lua_kinds_freed;

#define CTX_KEY "keel.ctx"

/* ---- userdata types and argument errors ---- */

const keel_lua_type keel__lua_mt_world = { KEEL_LUA_WORLD }, keel__lua_mt_entity = { KEEL_LUA_ENTITY },
                    keel__lua_mt_comp = { KEEL_LUA_COMPONENT }, keel__lua_mt_cmd = { KEEL_LUA_COMMAND },
                    keel__lua_mt_iter = { KEEL_LUA_ITER };
static const keel_lua_type mt_box = { "keel.Box" };

void keel__lua_newmt(lua_State *L, const keel_lua_type *t)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, t) == LUA_TTABLE) return;
    lua_pop(L, 1);
    luaL_newmetatable(L, t->name); /* sets __name (luaL_tolstring shows it) */
    lua_pushboolean(L, 1);
    lua_rawsetp(L, -2, t);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, t);
}

void *keel__lua_testudata(lua_State *L, int idx, const keel_lua_type *t)
{
    void *p = lua_touserdata(L, idx);
    if (!p || lua_islightuserdata(L, idx) || !lua_getmetatable(L, idx)) return NULL;
    bool is = lua_rawgetp(L, -1, t) == LUA_TBOOLEAN;
    lua_pop(L, 2);
    return is ? p : NULL;
}

void *keel__lua_checkudata(lua_State *L, int idx, const keel_lua_type *t)
{
    void *p = keel__lua_testudata(L, idx, t);
    if (!p) keel__lua_argerror(L, idx, "%s expected, got %s", t->name, luaL_typename(L, idx));
    return p;
}

int keel__lua_argerror(lua_State *L, int idx, const char *fmt, ...)
{
    char what[512]; /* as long as keel__lua_raisef's own buffer: it cuts the message where it did */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "bad argument #%d (%s)", idx, what);
}

static int box_gc(lua_State *L)
{
    void **box = lua_touserdata(L, 1);
    free(*box);
    *box = NULL;
    return 0;
}

void **keel__lua_newbox(lua_State *L)
{
    void **box = lua_newuserdatauv(L, sizeof *box, 0);
    *box = NULL;
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &mt_box) != LUA_TTABLE) {
        lua_pop(L, 1);
        keel__lua_newmt(L, &mt_box);
        lua_pushcfunction(L, box_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return box;
}

int keel__lua_push_handle_world(lua_State *L, int idx)
{
    lua_getmetatable(L, idx);
    lua_rawgeti(L, -1, 1);
    lua_remove(L, -2);
    return lua_gettop(L);
}

void keel__lua_setmt(lua_State *L, const keel_lua_type *t)
{
    lua_rawgetp(L, LUA_REGISTRYINDEX, t);
    lua_setmetatable(L, -2);
}

void keel__lua_ctx_release(keel_lua_ctx *ctx)
{
    if (ctx && --ctx->refs == 0) {
        keel__lua_fields_free(ctx);
        keel__lua_timers_free(ctx);
        free(ctx);
    }
}

keel_lua_ctx *keel__lua_upctx(lua_State *L)
{
    return (keel_lua_ctx *)lua_touserdata(L, lua_upvalueindex(1));
}

/* The sentinel's __gc runs when the state closes: kinds declared from it turn inert. */
static int sentinel_gc(lua_State *L)
{
    keel_lua_ctx **pc = lua_touserdata(L, 1);
    if (*pc) {
        (*pc)->alive = false;
        if (keel__lua_cur.ctx == *pc) memset(&keel__lua_cur, 0, sizeof keel__lua_cur);
        keel__lua_shadows_free(*pc);
        free((*pc)->each_list);
        (*pc)->each_list = NULL;
        keel__lua_ctx_release(*pc);
        *pc = NULL;
    }
    return 0;
}

static keel_lua_ctx *get_ctx(lua_State *L)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, CTX_KEY) == LUA_TUSERDATA) {
        keel_lua_ctx *ctx = *(keel_lua_ctx **)lua_touserdata(L, -1);
        lua_pop(L, 1);
        return ctx;
    }
    lua_pop(L, 1);
    keel_lua_ctx **pc = lua_newuserdatauv(L, sizeof *pc, 0);
    *pc = NULL;
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, sentinel_gc);
    lua_setfield(L, -2, "__gc");
    lua_setmetatable(L, -2);
    keel_lua_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) luaL_error(L, "out of memory");
    *pc = ctx;
    lua_setfield(L, LUA_REGISTRYINDEX, CTX_KEY);
    lua_rawgeti(L, LUA_REGISTRYINDEX, LUA_RIDX_MAINTHREAD);
    ctx->main = lua_tothread(L, -1);
    lua_pop(L, 1);
    ctx->alive = true;
    ctx->refs = 1;
    ctx->loading_ref = LUA_NOREF;
    ctx->systems_ref = LUA_NOREF;
    keel__lua_ext_init(ctx);
    for (int i = 0; i < KEEL_LUA_MAX_DEPTH; i++) ctx->self_tab[i] = ctx->self_mt[i] = LUA_NOREF;
    ctx->names_ref = LUA_NOREF;
    lua_newtable(L); /* keel_world* -> World udata, weak values */
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    ctx->worlds_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return ctx;
}

/* keel.core.errors.invalid(message): raises an InvalidArgument error object, so misuse caught
 * in the Lua modules (keel.history) fails like misuse caught in C (a message that is no string
 * is misuse of its own, raised the same way). */
static int m_invalid(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING)
        return keel__lua_argerror(L, 1, "a message string expected, got %s", luaL_typename(L, 1));
    return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s", lua_tostring(L, 1));
}

/* ---- modules beside keel.core ----
 * keel.json is the channel's JSON codec, a module of its own as lua-cjson is. The keel.core.*
 * modules are what keel's own Lua files (lua/keel/) need from the C side and the Lua face does
 * not offer: keel.core.errors { invalid }, keel.core.systems { set_runner } (lua/keel/system.lua),
 * keel.core.channel { http_open, http_on_step, random_token, clock, watcher } (serve.lua,
 * channel.lua, watch.lua). Loading keel.core puts them in package.preload; each is made on its
 * first require. */

static int open_errors(lua_State *L)
{
    lua_createtable(L, 0, 1);
    lua_pushcfunction(L, m_invalid);
    lua_setfield(L, -2, "invalid");
    return 1;
}

static int open_systems(lua_State *L)
{
    lua_createtable(L, 0, 1);
    keel__lua_open_system(L, get_ctx(L));
    return 1;
}

static int open_channel(lua_State *L)
{
    lua_createtable(L, 0, 5);
    keel__lua_open_http(L, get_ctx(L));
    keel__lua_open_watch(L);
    return 1;
}

static void preload(lua_State *L)
{
    static const luaL_Reg mods[] = { { "keel.json", keel__luaopen_json },
                                     { "keel.core.errors", open_errors },
                                     { "keel.core.systems", open_systems },
                                     { "keel.core.channel", open_channel },
                                     { NULL, NULL } };
    luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
    luaL_setfuncs(L, mods, 0);
    lua_pop(L, 1);
}

keel_lua_ctx *keel__lua_state_ctx(lua_State *L) { return get_ctx(L); }

/* The module's one entry point: the rest of core.so is built with hidden visibility. */
#if defined(__GNUC__)
__attribute__((visibility("default")))
#endif
int luaopen_keel_core(lua_State *L);

int luaopen_keel_core(lua_State *L)
{
    keel_status s = keel_init();
    if (s != KEEL_OK) return keel__lua_raisef(L, s, "keel_init failed");
    keel_lua_ctx *ctx = get_ctx(L);
    lua_newtable(L);
    lua_pushlightuserdata(L, ctx);
    keel__lua_open_world(L);   /* world, load, parse; pops the ctx upvalue... */
    keel__lua_open_message(L, ctx);
    keel__lua_open_entity(L);
    keel__lua_open_component(L);
    lua_pushlightuserdata(L, ctx);
    keel__lua_open_prefab(L); /* prefab; pops the ctx */
    lua_pushlightuserdata(L, ctx);
    keel__lua_open_kind(L);
    keel__lua_open_derived(L);
    keel__lua_open_net(L, ctx);
    lua_pushstring(L, KEEL_VERSION_STRING);
    lua_setfield(L, -2, "version");
    keel__lua_open_rescene(L);
    keel_lua_open_persist(L);
    lua_setfield(L, -2, "persist");
    lua_pushlightuserdata(L, ctx);
    keel__lua_open_replay(L); /* record, replay; pops the ctx */
    preload(L);
    return 1;
}
