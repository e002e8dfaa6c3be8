/* lua_error.c — keel error objects: { code, message, diagnostics, where } with a __tostring;
 * a raised one carries the Lua position of the call into keel that caused it. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lua_internal.h"

static int error_tostring(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TTABLE)
        return keel__lua_argerror(L, 1, "%s expected, got %s", KEEL_LUA_ERROR, luaL_typename(L, 1));
    lua_getfield(L, 1, "code");
    lua_getfield(L, 1, "message");
    lua_getfield(L, 1, "where");
    if (lua_type(L, -1) == LUA_TSTRING)
        lua_pushfstring(L, "%s: %s: %s", lua_tostring(L, -1), luaL_optstring(L, -3, "Error"),
                        luaL_optstring(L, -2, ""));
    else lua_pushfstring(L, "%s: %s", luaL_optstring(L, -3, "Error"), luaL_optstring(L, -2, ""));
    return 1;
}

static bool is_error(lua_State *L, int idx)
{
    if (!lua_getmetatable(L, idx)) return false;
    luaL_getmetatable(L, KEEL_LUA_ERROR);
    bool same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return same;
}

/* The text of an operand of `..`: an error object's tostring; strings and numbers as Lua
 * concatenates them; anything else raises Lua's own message, as an InvalidArgument object. */
static void concat_operand(lua_State *L, int idx)
{
    if (lua_type(L, idx) == LUA_TSTRING || lua_type(L, idx) == LUA_TNUMBER) {
        lua_pushvalue(L, idx);
        lua_tostring(L, -1); /* a number as `..` writes it: 1, 1.0 */
    } else if (is_error(L, idx)) {
        luaL_tolstring(L, idx, NULL);
    } else {
        keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "attempt to concatenate a %s value", luaL_typename(L, idx));
    }
}

/* "could not load: " .. err works as it does with io.open's message string. */
static int error_concat(lua_State *L)
{
    concat_operand(L, 1);
    concat_operand(L, 2);
    lua_concat(L, 2);
    return 1;
}

static void push_error_mt(lua_State *L)
{
    if (luaL_newmetatable(L, KEEL_LUA_ERROR)) {
        lua_pushcfunction(L, error_tostring);
        lua_setfield(L, -2, "__tostring");
        lua_pushcfunction(L, error_concat);
        lua_setfield(L, -2, "__concat");
    }
}

static void set_str(lua_State *L, const char *k, const char *v)
{
    if (v) {
        lua_pushstring(L, v);
        lua_setfield(L, -2, k);
    }
}

void keel__lua_push_diags(lua_State *L, const keel_diags *d)
{
    lua_createtable(L, (int)d->count, 0);
    for (size_t i = 0; i < d->count; i++) {
        const keel_diag *g = &d->items[i];
        lua_createtable(L, 0, 7);
        set_str(L, "code", keel_status_name(g->code));
        set_str(L, "message", g->message);
        set_str(L, "path", g->path ? g->path : "");
        set_str(L, "file", g->file);
        if (g->line) { lua_pushinteger(L, g->line); lua_setfield(L, -2, "line"); }
        if (g->col) { lua_pushinteger(L, g->col); lua_setfield(L, -2, "col"); }
        set_str(L, "severity", g->severity == KEEL_SEV_ERROR ? "error" : "warning");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

/* Whether `source` is one of keel's own Lua modules (lua/keel/NAME.lua, loaded by require): an
 * error keel raises is blamed on the code that called into keel, as error(msg, 2) would be. */
static bool own_chunk(const char *source)
{
    static const char *const mods[] = { "init", "system", "history", "kindfiles", "repl", "meta" };
    if (source[0] != '@') return false;
    size_t n = strlen(source);
    for (size_t i = 0; i < sizeof mods / sizeof *mods; i++) {
        char tail[32];
        size_t t = (size_t)snprintf(tail, sizeof tail, "keel/%s.lua", mods[i]);
        if (n >= t + 1 && strcmp(source + n - t, tail) == 0 && (source[n - t - 1] == '/' || n == t + 1))
            return true;
    }
    return false;
}

bool keel__lua_position(lua_State *L, char *buf, size_t cap)
{
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar) || strcmp(ar.what, "C") == 0)
            break;                          /* called from C (pcall(w.spawn, ...)) */
        if (own_chunk(ar.source)) continue; /* keel's own Lua: blame its caller */
        if (ar.currentline <= 0) break;
        snprintf(buf, cap, "%s:%d", ar.short_src, ar.currentline);
        return true;
    }
    return false;
}

bool keel__lua_error_where(lua_State *L, int idx, char *buf, size_t cap)
{
    idx = lua_absindex(L, idx);
    bool found = false;
    if (lua_type(L, idx) == LUA_TTABLE) {
        lua_pushliteral(L, "where");
        if (lua_rawget(L, idx) == LUA_TSTRING) {
            snprintf(buf, cap, "%s", lua_tostring(L, -1));
            found = true;
        }
        lua_pop(L, 1);
    } else if (lua_type(L, idx) == LUA_TSTRING) { /* "chunk:12: text", as Lua's error() writes it */
        const char *s = lua_tostring(L, idx);
        for (const char *c = strchr(s, ':'); c; c = strchr(c + 1, ':')) {
            const char *e = c + 1;
            while (*e >= '0' && *e <= '9') e++;
            if (e > c + 1 && e[0] == ':' && e[1] == ' ' && c > s) {
                snprintf(buf, cap, "%.*s", (int)(e - s), s);
                found = true;
                break;
            }
        }
    }
    return found;
}

/* Pushes the error object for `d`; frees d's contents. `raised`: it is about to be raised (it gets
 * the position of the Lua code that called keel, when there is one). */
static void push_error(lua_State *L, keel_status s, keel_diags *d, bool raised)
{
    const keel_diag *first = NULL;
    for (size_t i = 0; d && i < d->count; i++)
        if (d->items[i].severity == KEEL_SEV_ERROR) { first = &d->items[i]; break; }
    if (!first && d && d->count > 0) first = &d->items[0];
    lua_createtable(L, 0, 3);
    keel_status code = first && first->severity == KEEL_SEV_ERROR ? first->code : s;
    if (code == KEEL_OK) code = s;
    set_str(L, "code", keel_status_name(code));
    set_str(L, "message", first ? first->message : keel_status_name(code));
    if (d) keel__lua_push_diags(L, d);
    else lua_newtable(L);
    lua_setfield(L, -2, "diagnostics");
    char where[256];
    if (raised && keel__lua_position(L, where, sizeof where)) set_str(L, "where", where);
    push_error_mt(L);
    lua_setmetatable(L, -2);
    if (d) keel_diags_free(d);
}

int keel__lua_fail(lua_State *L, keel_diags *d)
{
    lua_pushnil(L);
    push_error(L, KEEL_INVALID_OPERATION, d, false);
    return 2;
}

int keel__lua_raise(lua_State *L, keel_status s, keel_diags *d)
{
    push_error(L, s, d, true);
    return lua_error(L);
}

int keel__lua_raisef(lua_State *L, keel_status s, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    keel_diags d;
    keel_diags_init(&d);
    KEEL_ERROR(&d, s, "", "%s", buf);
    return keel__lua_raise(L, s, &d);
}
