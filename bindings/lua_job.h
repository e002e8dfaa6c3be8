/* lua_job.h — keel.Job (lua_job.c). */
#ifndef KEEL_LUA_JOB_H
#define KEEL_LUA_JOB_H

#include <lua.h>

#include "keel.h"

/* Pushes a keel.Job with no job yet, holding the world at world_idx; the job goes in the slot. */
keel_job **keel__lua_new_job(lua_State *L, int world_idx);
/* w:save_async([path [, { adopt }]]) */
int keel__lua_w_save_async(lua_State *L);

#endif
