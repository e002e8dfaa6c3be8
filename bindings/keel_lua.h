/* keel_lua.h — the old name of lua_internal.h, kept while tools/keel_lua.c still includes it. */
#include "lua_internal.h"
