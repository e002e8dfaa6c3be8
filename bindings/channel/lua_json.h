/* lua_json.h — JSON values between jansson and Lua (lua_json.c). */
#ifndef KEEL_LUA_JSON_H
#define KEEL_LUA_JSON_H

#include <stdbool.h>
#include <jansson.h>
#include <lua.h>

/* The Lua value at idx as a new json_t; NULL with *err saying why (a function, a cycle...). */
json_t *keel__lua_to_json(lua_State *L, int idx, const char **err);
/* json_dumps with the fewest digits that read every real back exactly. */
char *keel__json_dump(const json_t *j, size_t flags);
/* Pushes j as a Lua value; false when nested too deep (the stack is then left as it was plus garbage: settop). */
bool keel__lua_push_json(lua_State *L, json_t *j);
/* The module keel.json (decode, encode, array, array_mt, null): keel.core registers it in
 * package.preload. */
int keel__luaopen_json(lua_State *L);

#endif
