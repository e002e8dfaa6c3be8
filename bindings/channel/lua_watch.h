/* lua_watch.h — an event-stream subscriber's view of a world (lua_watch.c). */
#ifndef KEEL_LUA_WATCH_H
#define KEEL_LUA_WATCH_H

#include <lua.h>

/* Adds watcher to the table on top (keel.core.channel). */
void keel__lua_open_watch(lua_State *L);

#endif
