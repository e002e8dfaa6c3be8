-- two_states.lua — one Lua state's half of test_lua_states.c: a world with its own system,
-- timer and served channel. The C test runs this in two states and steps them interleaved.
local keel = require "keel"
local name = ...
local w = keel.world(name)
w:spawn { name = "one" }
local seen = { system = 0, timer = 0, foreign = 0 }
keel.system {
  name = "test:count", phase = "update",
  run = function(world)
    -- a state's systems run on its own worlds only
    if world.name == name then seen.system = seen.system + 1 else seen.foreign = seen.foreign + 1 end
  end,
}
w:every(0.1, function() seen.timer = seen.timer + 1 end)
local srv = assert(keel.serve(w, { port = 0 }))
return {
  port = srv.port,
  token = srv.token,
  step = function() w:step(1 / 60) end,
  counts = function() return seen.system, seen.timer, seen.foreign end,
  close = function() srv:close(); w:close() end,
}
