/* lua_json.c — JSON text to Lua values and back, through jansson (the channel's wire format),
 * and the module keel.json that offers it to Lua, as lua-cjson is a module of its own:
 * json.decode(text) -> value | nil, message;  json.encode(value) -> text. JSON null is
 * json.null (a light userdata); a decoded array carries the metatable json.array_mt so it
 * encodes as an array again, even empty; json.array(t) marks one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lua_internal.h"
#include "channel/lua_json.h"

#define JSON_MAX_DEPTH 128 /* nesting a value may have, both ways (jansson's parser allows 2048) */

static const char array_mt_key = 0; /* registry: the array metatable */
static const char null_key = 0;     /* its address is the null sentinel */

/* Made on first use: decoding needs it whether or not keel.json was required yet. */
static void push_array_mt(lua_State *L)
{
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &array_mt_key) != LUA_TNIL) return;
    lua_pop(L, 1);
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "json array");
    lua_setfield(L, -2, "__name");
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, &array_mt_key);
}

static bool to_lua(lua_State *L, json_t *j, int depth)
{
    if (depth > JSON_MAX_DEPTH || !lua_checkstack(L, 4)) return false;
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        lua_createtable(L, 0, (int)json_object_size(j));
        const char *k;
        size_t klen;
        json_t *v;
        json_object_keylen_foreach(j, k, klen, v)
        {
            lua_pushlstring(L, k, klen);
            if (!to_lua(L, v, depth + 1)) return false;
            lua_rawset(L, -3);
        }
        return true;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        lua_createtable(L, (int)n, 0);
        for (size_t i = 0; i < n; i++) {
            if (!to_lua(L, json_array_get(j, i), depth + 1)) return false;
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        push_array_mt(L);
        lua_setmetatable(L, -2);
        return true;
    }
    case JSON_STRING: lua_pushlstring(L, json_string_value(j), json_string_length(j)); return true;
    case JSON_INTEGER: lua_pushinteger(L, (lua_Integer)json_integer_value(j)); return true;
    case JSON_REAL: lua_pushnumber(L, json_real_value(j)); return true;
    case JSON_TRUE: lua_pushboolean(L, 1); return true;
    case JSON_FALSE: lua_pushboolean(L, 0); return true;
    default: lua_pushlightuserdata(L, (void *)&null_key); return true;
    }
}

static int m_decode(lua_State *L)
{
    if (lua_type(L, 1) != LUA_TSTRING)
        return keel__lua_argerror(L, 1, "a JSON text expected, got %s", luaL_typename(L, 1));
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    json_error_t err;
    json_t *j = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (!j) {
        lua_pushnil(L);
        lua_pushfstring(L, "%s (line %d, column %d)", err.text, err.line, err.column);
        return 2;
    }
    int top = lua_gettop(L);
    bool ok = to_lua(L, j, 0);
    json_decref(j);
    if (!ok) {
        lua_settop(L, top);
        lua_pushnil(L);
        lua_pushfstring(L, "nested deeper than %d", JSON_MAX_DEPTH);
        return 2;
    }
    return 1;
}

/* A table is an array when it carries the array metatable, or when its keys are exactly 1..n, n > 0. */
static bool is_array(lua_State *L, int idx, size_t *n)
{
    *n = (size_t)lua_rawlen(L, idx);
    if (lua_getmetatable(L, idx)) {
        push_array_mt(L);
        bool marked = lua_rawequal(L, -1, -2);
        lua_pop(L, 2);
        if (marked) return true;
    }
    if (*n == 0) return false;
    size_t count = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (++count > *n || !lua_isinteger(L, -1)) {
            lua_pop(L, 1);
            return false;
        }
    }
    return count == *n;
}

/* NULL with a message in err (an owned json_t otherwise). */
static json_t *from_lua(lua_State *L, int idx, int depth, const char **err)
{
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return json_null();
    case LUA_TBOOLEAN: return json_boolean(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) return json_integer((json_int_t)lua_tointeger(L, idx));
        else {
            double v = lua_tonumber(L, idx);
            if (!isfinite(v)) return json_null(); /* JSON has no inf or nan */
            if (v == floor(v) && fabs(v) < 9007199254740992.0) return json_integer((json_int_t)v);
            return json_real(v);
        }
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        json_t *j = json_stringn(s, len);
        if (!j) *err = "a string that is not UTF-8"; /* refused rather than sent as text a parser rejects */
        return j;
    }
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) == &null_key) return json_null();
        break;
    case LUA_TTABLE: {
        if (depth > JSON_MAX_DEPTH || !lua_checkstack(L, 4)) {
            *err = "nested too deep (or a cycle)";
            return NULL;
        }
        if (idx < 0) idx = lua_gettop(L) + idx + 1;
        size_t n;
        if (is_array(L, idx, &n)) {
            json_t *a = json_array();
            for (size_t i = 1; i <= n; i++) {
                lua_rawgeti(L, idx, (lua_Integer)i);
                json_t *v = from_lua(L, -1, depth + 1, err);
                lua_pop(L, 1);
                if (!v || json_array_append_new(a, v) != 0) {
                    json_decref(a);
                    return NULL;
                }
            }
            return a;
        }
        json_t *o = json_object();
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            char buf[32];
            const char *k;
            size_t klen;
            if (lua_type(L, -2) == LUA_TSTRING) k = lua_tolstring(L, -2, &klen);
            else if (lua_isinteger(L, -2)) {
                klen = (size_t)snprintf(buf, sizeof buf, "%lld", (long long)lua_tointeger(L, -2));
                k = buf;
            } else {
                lua_pop(L, 2);
                json_decref(o);
                *err = "a table key that is neither a string nor an integer";
                return NULL;
            }
            json_t *v = from_lua(L, -1, depth + 1, err);
            lua_pop(L, 1);
            if (!v || json_object_setn_new(o, k, klen, v) != 0) {
                if (v) *err = "a key that is not UTF-8";
                lua_pop(L, 1);
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    default: break;
    }
    *err = lua_typename(L, lua_type(L, idx));
    return NULL;
}

json_t *keel__lua_to_json(lua_State *L, int idx, const char **err)
{
    *err = NULL;
    return from_lua(L, idx, 0, err);
}

bool keel__lua_push_json(lua_State *L, json_t *j)
{
    return to_lua(L, j, 0);
}

/* The fewest significant digits (15..17) that read back every real in j exactly, so 0.2 goes
 * out as 0.2 and not as jansson's default 17 digits. */
static int real_digits(const json_t *j, int digits)
{
    if (digits == 17) return digits;
    if (json_is_real(j)) {
        double v = json_real_value(j);
        char buf[32];
        for (int p = digits; p < 17; p++) {
            snprintf(buf, sizeof buf, "%.*g", p, v);
            if (strtod(buf, NULL) == v) return p;
        }
        return 17;
    }
    if (json_is_array(j)) {
        for (size_t i = 0, n = json_array_size(j); i < n && digits < 17; i++) digits = real_digits(json_array_get(j, i), digits);
    } else if (json_is_object(j)) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) digits = real_digits(v, digits);
    }
    return digits;
}

char *keel__json_dump(const json_t *j, size_t flags)
{
    return json_dumps(j, flags | JSON_REAL_PRECISION(real_digits(j, 15)));
}

static int m_encode(lua_State *L)
{
    if (lua_isnone(L, 1)) return keel__lua_argerror(L, 1, "a value expected");
    lua_settop(L, 1);
    const char *err = NULL;
    json_t *j = from_lua(L, 1, 0, &err);
    if (!j) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "json: cannot encode %s", err ? err : "the value");
    char *text = keel__json_dump(
        j, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS); /* the same text for the same value */
    json_decref(j);
    if (!text) return keel__lua_raisef(L, KEEL_INVALID_ARGUMENT, "json: cannot encode the value");
    lua_pushstring(L, text);
    free(text);
    return 1;
}

static int m_array(lua_State *L)
{
    if (lua_isnoneornil(L, 1)) lua_newtable(L);
    if (!lua_istable(L, 1)) return keel__lua_argerror(L, 1, "a table expected, got %s", luaL_typename(L, 1));
    lua_settop(L, 1);
    push_array_mt(L);
    lua_setmetatable(L, 1);
    return 1;
}

int keel__luaopen_json(lua_State *L)
{
    static const luaL_Reg fns[] = {
        { "decode", m_decode }, { "encode", m_encode }, { "array", m_array }, { NULL, NULL }
    };
    luaL_newlib(L, fns);
    push_array_mt(L);
    lua_setfield(L, -2, "array_mt");
    lua_pushlightuserdata(L, (void *)&null_key);
    lua_setfield(L, -2, "null");
    return 1;
}
