/* lua_net.c — keel.net: host(w, opts) and connect(addr, port, opts), the Lua face of keel_net.h.
 * A Host keeps its World alive (user value 1); a Client owns its mirror world, handed to Lua
 * borrowed as cl.world and closed when the client is collected or closed. */
#include "lua_internal.h"
#include "bind.h" /* keel__net_stats */
#include "keel_net.h"


#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const keel_lua_type mt_host = { "keel.net.Host" }, mt_client = { "keel.net.Client" };

typedef struct lhost {
    keel_net_host *h;
} lhost;
typedef struct lclient {
    keel_net_client *c;
    keel_lua_ctx *ctx;
    double last; /* when service last ran client_update (monotonic seconds) */
} lclient;

static const char CLIENT_UPDATE[] = "keel.net.client_update"; /* registry: { [kind key] = function } */

void keel__lua_net_note_kind(lua_State *L, const char *key)
{
    if (lua_getfield(L, LUA_REGISTRYINDEX, CLIENT_UPDATE) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, CLIENT_UPDATE);
    }
    lua_getfield(L, 1, "client_update"); /* nil clears a redeclared kind's */
    lua_setfield(L, -2, key);
    lua_pop(L, 1);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Every component of a kind with client_update in the mirror: fn(component, entity, dt), after
 * what the service brought in. An error in one raises out of service (the rest wait). */
static void run_client_updates(lua_State *L, lclient *x)
{
    double t = mono(), dt = x->last > 0 ? t - x->last : 0;
    x->last = t;
    if (lua_getfield(L, LUA_REGISTRYINDEX, CLIENT_UPDATE) != LUA_TTABLE) {
        lua_pop(L, 1);
        return;
    }
    int fns = lua_gettop(L);
    lua_getiuservalue(L, 1, 1);
    int wi = lua_gettop(L);
    keel_world *w = keel_net_client_world(x->c);
    lua_pushnil(L);
    while (lua_next(L, fns)) {
        const char *key = lua_tostring(L, -2);
        keel_kind_id k = key ? keel_kind_find(key) : KEEL_NO_KIND;
        size_t n = k ? keel_storage_count(w, k) : 0;
        /* owners first: a hook may change the storage */
        keel_comp *cs = n ? malloc(n * sizeof *cs) : NULL;
        for (size_t i = 0; i < n && cs; i++)
            cs[i] = (keel_comp){ keel_storage_owner(w, k, i), k, keel_storage_slot(w, k, i) };
        for (size_t i = 0; i < n && cs; i++) {
            if (!keel_comp_alive(w, cs[i])) continue;
            lua_pushvalue(L, -1);
            keel__lua_push_comp(L, wi, cs[i], NULL); /* a known kind: no key */
            keel__lua_push_entity(L, wi, cs[i].entity);
            lua_pushnumber(L, dt);
            if (lua_pcall(L, 3, 0, 0) != LUA_OK) {
                free(cs);
                lua_error(L);
            }
        }
        free(cs);
        lua_pop(L, 1);
    }
    lua_settop(L, fns - 1);
}

static lhost *check_host(lua_State *L)
{
    lhost *x = keel__lua_checkudata(L, 1, &mt_host);
    if (!x->h) keel__lua_raisef(L, KEEL_NOT_FOUND, "the host is closed");
    return x;
}

static lclient *check_client(lua_State *L)
{
    lclient *x = keel__lua_checkudata(L, 1, &mt_client);
    if (!x->c) keel__lua_raisef(L, KEEL_NOT_FOUND, "the client is closed");
    return x;
}

static double opt_num(lua_State *L, int t, const char *k, double def)
{
    if (lua_type(L, t) != LUA_TTABLE) return def;
    lua_getfield(L, t, k);
    double v = def;
    if (!lua_isnil(L, -1)) {
        if (!lua_isnumber(L, -1)) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s must be a number", k);
        v = lua_tonumber(L, -1);
    }
    lua_pop(L, 1);
    return v;
}

static const char *opt_string(lua_State *L, int t, const char *k)
{
    if (lua_type(L, t) != LUA_TTABLE) return NULL;
    lua_getfield(L, t, k);
    const char *s = NULL;
    if (!lua_isnil(L, -1)) {
        if (lua_type(L, -1) != LUA_TSTRING) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "%s must be a string", k);
        s = lua_tostring(L, -1);
    }
    lua_pop(L, 1); /* the string stays reachable through the options table */
    return s;
}

/* keel.net.host(w, { port, bind, max_clients, interest = { radius }, max_radius, budget, tick }) */
static int n_host(lua_State *L)
{
    keel_world *w = keel_lua_checkworld(L, 1);
    if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TTABLE);
    keel_net_host_opts o = KEEL_NET_HOST_OPTS_INIT;
    double port = opt_num(L, 2, "port", o.port);
    if (port < 0 || port > 65535 || port != (double)(int)port)
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "port must be an integer in 0..65535");
    o.port = (uint16_t)port;
    o.bind = opt_string(L, 2, "bind");
    double mc = opt_num(L, 2, "max_clients", o.max_clients);
    if (mc < 1 || mc > 4095) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "max_clients must be in 1..4095");
    o.max_clients = (uint32_t)mc;
    double budget = opt_num(L, 2, "budget", (double)o.budget);
    if (!(budget >= 0 && budget <= 1e12)) keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "budget must be a byte count");
    o.budget = (size_t)budget;
    o.tick = opt_num(L, 2, "tick", o.tick); /* keel_net_host_new refuses one that is not > 0 */
    o.max_radius = opt_num(L, 2, "max_radius", 0); /* 0: the default cap; keel_net_host_new checks */
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_getfield(L, 2, "max_radius");
        bool given = !lua_isnil(L, -1);
        lua_pop(L, 1);
        if (given && !(o.max_radius > 0))
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "max_radius must be a finite number > 0");
    }
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_getfield(L, 2, "interest");
        if (lua_type(L, -1) == LUA_TTABLE) o.interest_radius = opt_num(L, lua_gettop(L), "radius", 0);
        else if (!lua_isnil(L, -1))
            keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "interest must be a table { radius = R }");
        lua_pop(L, 1);
    }
    lhost *x = lua_newuserdatauv(L, sizeof *x, 1);
    x->h = NULL;
    keel__lua_setmt(L, &mt_host);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the world outlives its host */
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_net_host_new(w, &o, &x->h, &d);
    keel__lua_check(L, s, &d, NULL);
    return 1;
}

static int h_service(lua_State *L)
{
    lhost *x = check_host(L);
    keel_diags d;
    keel_diags_init(&d);
    KEEL_LUA_ENTER(L, keel__lua_upctx(L));
    keel_status s = keel_net_host_service(x->h, &d);
    KEEL_LUA_LEAVE();
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    lua_pushboolean(L, 1);
    return 1;
}

static int h_clients(lua_State *L)
{
    lhost *x = check_host(L);
    size_t n = keel_net_host_client_count(x->h);
    lua_createtable(L, (int)n, 0);
    for (size_t i = 0; i < n; i++) {
        lua_createtable(L, 0, 1);
        lua_pushstring(L, keel_net_host_client_name(x->h, i));
        lua_setfield(L, -2, "name");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

/* host:focus(client, e): client is a name or a table from host:clients() */
static int h_focus(lua_State *L)
{
    lhost *x = check_host(L);
    const char *name = NULL;
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_getfield(L, 2, "name");
        name = lua_tostring(L, -1);
        lua_replace(L, 2);
    } else if (lua_type(L, 2) == LUA_TSTRING) name = lua_tostring(L, 2);
    if (!name) return keel__lua_argerror(L, 2, "a client or its name expected");
    keel_lua_entity *e = keel__lua_checkentity(L, 3);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_net_host_focus(x->h, name, e->e, &d);
    keel__lua_check(L, s, &d, NULL);
    return 0;
}

static int h_port(lua_State *L)
{
    lua_pushinteger(L, keel_net_host_port(check_host(L)->h));
    return 1;
}

static int h_shim(lua_State *L)
{
    lhost *x = check_host(L);
    luaL_checktype(L, 2, LUA_TTABLE);
    keel_net_host_set_loss(x->h, opt_num(L, 2, "drop", 0), opt_num(L, 2, "dup", 0), opt_num(L, 2, "reorder", 0),
                           (uint32_t)opt_num(L, 2, "seed", 1));
    return 0;
}

static int h_close(lua_State *L)
{
    lhost *x = keel__lua_checkudata(L, 1, &mt_host);
    keel_net_host_free(x->h);
    x->h = NULL;
    return 0;
}

/* keel.net.connect(addr, port, { name }) */
static int n_connect(lua_State *L)
{
    const char *addr = luaL_checkstring(L, 1);
    lua_Integer port = luaL_checkinteger(L, 2);
    if (port < 1 || port > 65535) return keel__lua_argerror(L, 2, "a port in 1..65535 expected");
    if (!lua_isnoneornil(L, 3)) luaL_checktype(L, 3, LUA_TTABLE);
    const char *name = opt_string(L, 3, "name");
    keel_lua_ctx *ctx = keel__lua_upctx(L);
    lclient *x = lua_newuserdatauv(L, sizeof *x, 1);
    x->c = NULL;
    x->ctx = ctx;
    keel__lua_setmt(L, &mt_client);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_net_connect(addr, (uint16_t)port, name ? name : "client", &x->c, &d);
    keel__lua_check(L, s, &d, NULL);
    keel__lua_push_world(L, ctx, keel_net_client_world(x->c), false);
    lua_setiuservalue(L, -2, 1);
    return 1;
}

static int c_service(lua_State *L)
{
    lclient *x = check_client(L);
    keel_diags d;
    keel_diags_init(&d);
    KEEL_LUA_ENTER(L, x->ctx);
    keel_status s = keel_net_client_service(x->c, &d);
    KEEL_LUA_LEAVE();
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    lua_settop(L, 1);
    run_client_updates(L, x);
    lua_pushboolean(L, 1);
    return 1;
}

/* `retire`: client:close() runs the mirrors' on_destroy (while the mirror world's handle still
 * works); a collected client runs no hook, as a collected world does. */
static void close_client(lua_State *L, lclient *x, int idx, bool retire)
{
    if (!x->c) return;
    KEEL_LUA_ENTER(L, retire ? x->ctx : NULL); /* NULL: no Lua hook runs from the free below */
    if (retire) keel__world_retire(keel_net_client_world(x->c), NULL);
    /* the mirror world goes with the client: its World handle is closed first */
    if (lua_getiuservalue(L, idx, 1) == LUA_TUSERDATA) {
        keel_lua_world *lw = lua_touserdata(L, -1);
        if (lw && lw->w == keel_net_client_world(x->c)) {
            if (x->ctx->alive) {
                lua_rawgeti(L, LUA_REGISTRYINDEX, x->ctx->worlds_ref);
                lua_pushnil(L);
                lua_rawsetp(L, -2, lw->w);
                lua_pop(L, 1);
            }
            lw->w = NULL;
        }
    }
    lua_pop(L, 1);
    keel_net_client_free(x->c);
    KEEL_LUA_LEAVE();
    x->c = NULL;
}

static int c_close(lua_State *L)
{
    lclient *x = keel__lua_checkudata(L, 1, &mt_client);
    close_client(L, x, 1, true);
    return 0;
}

static int c_gc(lua_State *L)
{
    close_client(L, keel__lua_checkudata(L, 1, &mt_client), 1, false);
    return 0;
}

static int c_index(lua_State *L)
{
    lclient *x = keel__lua_checkudata(L, 1, &mt_client);
    const char *k = luaL_checkstring(L, 2);
    if (!strcmp(k, "world")) {
        lua_getiuservalue(L, 1, 1);
        return 1;
    }
    if (!strcmp(k, "connected")) {
        lua_pushboolean(L, x->c && keel_net_client_joined(x->c));
        return 1;
    }
    if (!strcmp(k, "reason")) {
        const char *r = x->c ? keel_net_client_reason(x->c) : "closed";
        if (r) lua_pushstring(L, r);
        else lua_pushnil(L);
        return 1;
    }
    if (!strcmp(k, "stats") && x->c) {
        keel__net_stats s = keel__net_client_stats(x->c);
        lua_createtable(L, 0, 6);
        lua_pushinteger(L, (lua_Integer)s.spawns);
        lua_setfield(L, -2, "spawns");
        lua_pushinteger(L, (lua_Integer)s.removals);
        lua_setfield(L, -2, "removals");
        lua_pushinteger(L, (lua_Integer)s.deltas);
        lua_setfield(L, -2, "deltas");
        lua_pushinteger(L, (lua_Integer)s.bytes);
        lua_setfield(L, -2, "bytes");
        return 1;
    }
    lua_getmetatable(L, 1);
    lua_getfield(L, -1, "methods");
    lua_getfield(L, -1, k);
    return 1;
}

static const luaL_Reg host_methods[] = {
    { "service", h_service }, { "clients", h_clients }, { "focus", h_focus }, { "port", h_port },
    { "close", h_close },     { "_shim", h_shim },      { NULL, NULL }
};
static const luaL_Reg client_methods[] = { { "service", c_service }, { "close", c_close }, { NULL, NULL } };


void keel__lua_open_net(lua_State *L, keel_lua_ctx *ctx)
{
    keel__lua_newmt(L, &mt_host);
    lua_newtable(L);
    lua_pushlightuserdata(L, ctx);
    luaL_setfuncs(L, host_methods, 1);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, h_close);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    keel__lua_newmt(L, &mt_client);
    lua_newtable(L);
    lua_pushlightuserdata(L, ctx);
    luaL_setfuncs(L, client_methods, 1);
    lua_setfield(L, -2, "methods");
    lua_pushcfunction(L, c_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, c_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    lua_createtable(L, 0, 2); /* keel.net */
    lua_pushlightuserdata(L, ctx);
    lua_pushcclosure(L, n_host, 1);
    lua_setfield(L, -2, "host");
    lua_pushlightuserdata(L, ctx);
    lua_pushcclosure(L, n_connect, 1);
    lua_setfield(L, -2, "connect");
    lua_setfield(L, -2, "net");
}
