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

/* Runs fn(ud) as a call from L into keel, the way keel.load runs its load: the kinds declared in
 * L run their Lua hooks (migrate, validate, awake) in what fn loads, builds or cooks through the C
 * API. Worlds fn makes stay the caller's: a handle a hook took to one goes stale when fn returns.
 * What the keel program's file verbs (check, cook, fmt, dump, merge) load through. Returns fn's
 * result. */
int keel_lua_host_call(lua_State *L, int (*fn)(void *ud), void *ud);

#endif
