/* lua_http.h — the channel's HTTP server (lua_http.c). */
#ifndef KEEL_LUA_HTTP_H
#define KEEL_LUA_HTTP_H

#include "lua_internal.h"

/* Servers open in this process: the step looks for none (no cost) while it is 0. */
extern int keel__lua_http_open_count;
/* Runs the function set with keel.core._http_on_step for w (answers requests between frames). */
void keel__lua_http_step(lua_State *L, keel_lua_ctx *ctx, keel_world *w);
/* Adds _http_open, _http_on_step and _random_token to the table on top. */
void keel__lua_open_http(lua_State *L);

#endif
