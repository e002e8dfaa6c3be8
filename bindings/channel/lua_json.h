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
/* Adds _json_decode, _json_encode, _json_array, _json_array_mt and _json_null to the table on top. */
void keel__lua_open_json(lua_State *L);

#endif
