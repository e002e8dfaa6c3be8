/* lua_http.h — the channel's HTTP server (lua_http.c). */
#ifndef KEEL_LUA_HTTP_H
#define KEEL_LUA_HTTP_H

#include "lua_internal.h"

/* Runs the function set with keel.core.channel.http_on_step for w (answers requests between frames). */
void keel__lua_http_step(lua_State *L, keel_lua_ctx *ctx, keel_world *w);
/* Adds http_open, http_on_step, random_token and clock to the table on top (keel.core.channel);
 * servers opened count in ctx->http_open (the step looks for none, at no cost, while it is 0). */
void keel__lua_open_http(lua_State *L, keel_lua_ctx *ctx);

#endif
