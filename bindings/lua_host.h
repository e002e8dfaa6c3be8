/* lua_host.h — what a program hosting keel's Lua module may call: opening the module into a
 * state, and interrupting a running step from a signal handler. Binding internals stay in
 * lua_internal.h. */
#ifndef KEEL_LUA_HOST_H
#define KEEL_LUA_HOST_H

#include <lua.h>

int luaopen_keel_core(lua_State *L); /* pushes the `keel.core` module table */
/* For a host's SIGINT handler (async-signal-safe): while keel_lua_stepping()
 * is true, keel_lua_interrupt() makes w:step/w:run raise "interrupted!" once
 * the frame under way has finished, so no callback is blamed for the signal. */
void keel_lua_interrupt(void);
int keel_lua_stepping(void);
/* Whether a served world's HTTP request is being answered (its Lua handler runs): a host's
 * SIGTERM handler then interrupts the handler, which answers an error, so a long request (a
 * world.step of many frames) never keeps the program from stopping. */
int keel_lua_answering(void);

#endif
