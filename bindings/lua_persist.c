/* lua_persist.c — the `keel.persist` table: save games from Lua. */
#include <lua.h>
#include <lauxlib.h>

int keel_lua_open_persist(lua_State *L);

int keel_lua_open_persist(lua_State *L)
{
    lua_newtable(L);
    return 1;
}
