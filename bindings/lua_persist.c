/* lua_persist.c — the `keel.persist` table: save games from Lua (baseline, save, load, info). */
#include <lua.h>
#include <lauxlib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_internal.h"
#include "lua_job.h"

static const keel_lua_type mt_baseline = { "keel.Baseline" };

typedef struct lbase {
    keel_baseline *b; /* NULL once freed */
} lbase;

static lbase *checkbase(lua_State *L, int idx)
{
    lbase *lb = keel__lua_checkudata(L, idx, &mt_baseline);
    if (!lb->b) keel__lua_argerror(L, idx, "the baseline is freed");
    return lb;
}

static const char *checkpath(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TSTRING)
        keel__lua_argerror(L, idx, "a path string expected, got %s", luaL_typename(L, idx));
    if (keel__lua_has_nul(L, idx))
        keel__lua_argerror(L, idx, "the path holds a NUL byte"); /* would be cut there */
    return lua_tostring(L, idx);
}

/* __gc and __close: safe to run twice. */
static int base_gc(lua_State *L)
{
    lbase *lb = keel__lua_checkudata(L, 1, &mt_baseline);
    keel_baseline_free(lb->b);
    lb->b = NULL;
    return 0;
}

/* b:free(): the same, with misuse raised as keel does */
static int base_free(lua_State *L)
{
    keel__lua_checkudata(L, 1, &mt_baseline);
    return base_gc(L);
}

static int base_tostring(lua_State *L)
{
    lbase *lb = keel__lua_checkudata(L, 1, &mt_baseline);
    if (lb->b) lua_pushfstring(L, "keel.Baseline (%p)", (void *)lb->b);
    else lua_pushliteral(L, "keel.Baseline (freed)");
    return 1;
}

/* keel.persist.baseline(w) -> a value usable with any world loaded from the same scene */
static int persist_baseline(lua_State *L)
{
    keel_world *w = keel_lua_checkworld(L, 1);
    keel__lua_refuse_in_callback(L, w, "keel.persist.baseline");
    lbase *lb = lua_newuserdatauv(L, sizeof *lb, 0); /* owner first, so an error never leaks */
    lb->b = NULL;
    keel__lua_setmt(L, &mt_baseline);
    lb->b = keel_baseline_capture(w);
    return 1;
}

/* A Lua value as a slot-field scalar: strings quoted, numbers and booleans plain. */
static keel_node *field_scalar(lua_State *L, int idx)
{
    char buf[64];
    switch (lua_type(L, idx)) {
    case LUA_TSTRING:
        return keel_node_new_scalar(lua_tostring(L, idx), KEEL_STYLE_DOUBLE);
    case LUA_TBOOLEAN:
        return keel_node_new_scalar(lua_toboolean(L, idx) ? "true" : "false", KEEL_STYLE_PLAIN);
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            snprintf(buf, sizeof buf, "%lld", (long long)lua_tointeger(L, idx));
        } else {
            double v = lua_tonumber(L, idx);
            if (!isfinite(v)) return NULL;
            keel_format_double(v, buf, sizeof buf);
            if (!strpbrk(buf, ".eE")) strcat(buf, ".0"); /* stays a float when read back */
        }
        return keel_node_new_scalar(buf, KEEL_STYLE_PLAIN);
    default: return NULL;
    }
}

/* Reads the info table into `info` (fields a heap MAP). Raises on misuse, before anything is owned. */
static void check_info(lua_State *L, int idx)
{
    if (lua_isnoneornil(L, idx)) return;
    if (lua_type(L, idx) != LUA_TTABLE)
        keel__lua_argerror(L, idx, "a table of slot details expected, got %s", luaL_typename(L, idx));
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING) keel__lua_argerror(L, idx, "slot details keys must be strings");
        const char *k = lua_tostring(L, -2);
        int t = lua_type(L, -1);
        if (keel__lua_has_nul(L, -2)) keel__lua_argerror(L, idx, "a slot details key holds a NUL byte");
        if (t == LUA_TSTRING && keel__lua_has_nul(L, -1)) /* kept as C strings */
            keel__lua_argerror(L, idx, "slot field %s holds a NUL byte", k);
        if (strcmp(k, "title") == 0 && t != LUA_TSTRING) keel__lua_argerror(L, idx, "title must be a string");
        else if (strcmp(k, "play_seconds") == 0 && t != LUA_TNUMBER)
            keel__lua_argerror(L, idx, "play_seconds must be a number");
        else if (strcmp(k, "saved_at") == 0 && !lua_isinteger(L, -1))
            keel__lua_argerror(L, idx, "saved_at must be an integer");
        else if (t != LUA_TSTRING && t != LUA_TNUMBER && t != LUA_TBOOLEAN)
            keel__lua_argerror(L, idx, "slot field %s must be a string, number or boolean", k);
        else if (t == LUA_TNUMBER && !lua_isinteger(L, -1) && !isfinite(lua_tonumber(L, -1)))
            keel__lua_argerror(L, idx, "slot field %s is not finite", k);
        lua_pop(L, 1);
    }
}

/* The info table at idx as slot details: title and fields point into Lua's strings (kept alive by
 * the table) and a heap MAP the caller frees. Nothing here raises (check_info ran first). */
static keel_node *read_info(lua_State *L, int idx, keel_slot_info *info)
{
    memset(info, 0, sizeof *info);
    const char *title = NULL;
    keel_node *fields = NULL;
    if (lua_istable(L, idx)) {
        lua_getfield(L, idx, "title");
        title = lua_tostring(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, idx, "play_seconds");
        info->play_seconds = lua_tonumber(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, idx, "saved_at");
        info->saved_at = (int64_t)lua_tointeger(L, -1);
        lua_pop(L, 1);
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            const char *k = lua_tostring(L, -2);
            if (strcmp(k, "title") != 0 && strcmp(k, "play_seconds") != 0 && strcmp(k, "saved_at") != 0) {
                keel_node *v = field_scalar(L, -1);
                if (v) {
                    if (!fields) fields = keel_node_new_map();
                    keel_node_put(fields, k, v);
                }
            }
            lua_pop(L, 1);
        }
    }
    info->title = (char *)(title ? title : "");
    info->fields = fields;
    return fields;
}

/* keel.persist.save(w, base, path, info) -> true | nil, err */
static int persist_save(lua_State *L)
{
    keel_world *w = keel_lua_checkworld(L, 1);
    lbase *lb = checkbase(L, 2);
    const char *path = checkpath(L, 3);
    check_info(L, 4);
    keel__lua_refuse_in_callback(L, w, "keel.persist.save");
    keel_slot_info info;
    keel_node *fields = read_info(L, 4, &info);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_persist_save(w, lb->b, path, &info, &d);
    keel_node_free(fields);
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    lua_pushboolean(L, 1);
    return 1;
}

/* keel.persist.save_async(w, base, path, info) -> keel.Job | nil, err: the capture now, the
 * writing on a worker; the job holds its own reference to the baseline. */
static int persist_save_async(lua_State *L)
{
    keel_world *w = keel_lua_checkworld(L, 1);
    lbase *lb = checkbase(L, 2);
    const char *path = checkpath(L, 3);
    check_info(L, 4);
    keel__lua_refuse_in_callback(L, w, "keel.persist.save_async");
    keel_job **slot = keel__lua_new_job(L, 1); /* before anything is owned */
    keel_slot_info info;
    keel_node *fields = read_info(L, 4, &info);
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_persist_save_async(w, lb->b, path, &info, slot, &d);
    keel_node_free(fields);
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    return 1;
}

/* keel.persist.dump(w, base [, info]) -> the text persist.save would write | nil, err */
static int persist_dump(lua_State *L)
{
    keel_world *w = keel_lua_checkworld(L, 1);
    lbase *lb = checkbase(L, 2);
    check_info(L, 3);
    keel__lua_refuse_in_callback(L, w, "keel.persist.dump");
    keel_slot_info info;
    keel_node *fields = read_info(L, 3, &info);
    keel_diags d;
    keel_diags_init(&d);
    char *text = NULL;
    size_t len = 0;
    keel_status s = keel_persist_dump(w, lb->b, &info, &text, &len, &d);
    keel_node_free(fields);
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    lua_pushlstring(L, text, len); /* a memory error here would leak text: its size is a save's */
    free(text);
    return 1;
}

/* keel.persist.load_text(w, text [, name]) -> true | nil, err (as load; all or nothing) */
static int persist_load_text(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    size_t len = 0;
    if (lua_type(L, 2) != LUA_TSTRING) keel__lua_argerror(L, 2, "a save game's text expected, got %s", luaL_typename(L, 2));
    const char *text = lua_tolstring(L, 2, &len);
    const char *name = luaL_optstring(L, 3, NULL);
    keel_diags d;
    keel_diags_init(&d);
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = keel_persist_load_text(lw->w, text, len, name, &d);
    KEEL_LUA_LEAVE();
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    lua_pushboolean(L, 1);
    return 1;
}

/* keel.persist.load(w, path) -> true | nil, err (all or nothing) */
static int persist_load(lua_State *L)
{
    keel_lua_world *lw = keel__lua_checklw(L, 1);
    const char *path = checkpath(L, 2);
    keel_diags d;
    keel_diags_init(&d);
    /* Lua migrations and awake hooks of restored components run in this state */
    KEEL_LUA_ENTER(L, lw->ctx);
    keel_status s = keel_persist_load(lw->w, path, &d);
    KEEL_LUA_LEAVE();
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    lua_pushboolean(L, 1);
    return 1;
}

/* keel.persist.info(path) -> { title, saved_at, play_seconds, <game fields>... } | nil, err */
static int persist_info(lua_State *L)
{
    const char *path = checkpath(L, 1);
    lua_createtable(L, 0, 4); /* made before anything is owned */
    keel_slot_info info;
    keel_diags d;
    keel_diags_init(&d);
    keel_status s = keel_persist_info(path, &info, &d);
    if (s != KEEL_OK) return keel__lua_fail(L, &d);
    keel_diags_free(&d);
    /* the pushes below can only fail on memory; slot details are small */
    if (info.fields)
        for (size_t i = 0; i < info.fields->count; i++) {
            keel__lua_push_node(L, &info.fields->items[2 * i + 1]); /* quoted: a string; plain: bool/int/number */
            lua_setfield(L, -2, info.fields->items[2 * i].text);
        }
    lua_pushstring(L, info.title ? info.title : "");
    lua_setfield(L, -2, "title");
    lua_pushinteger(L, (lua_Integer)info.saved_at);
    lua_setfield(L, -2, "saved_at");
    lua_pushnumber(L, info.play_seconds);
    lua_setfield(L, -2, "play_seconds");
    keel_slot_info_free(&info);
    return 1;
}

int keel_lua_open_persist(lua_State *L)
{
    static const luaL_Reg meta[] = {
        { "__gc", base_gc },
        { "__close", base_gc },
        { "__tostring", base_tostring },
        { NULL, NULL },
    };
    static const luaL_Reg funcs[] = {
        { "baseline", persist_baseline },
        { "save", persist_save },
        { "save_async", persist_save_async },
        { "dump", persist_dump },
        { "load_text", persist_load_text },
        { "load", persist_load },
        { "info", persist_info },
        { NULL, NULL },
    };
    keel__lua_newmt(L, &mt_baseline);
    luaL_setfuncs(L, meta, 0);
    lua_pushcfunction(L, base_free);
    lua_setfield(L, -2, "free");
    lua_pushvalue(L, -1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_newlib(L, funcs);
    return 1;
}
