-- fuzz_rpc.lua — fuzz_rpc.c's Lua half: a kind with every awkward field type, and the function
-- each input goes through (the channel's handler on a fresh small world; a response must be JSON).
local keel = require 'keel'
local channel = require 'keel.channel'
local json = require 'keel.json'
keel.kind{ key = 'fz:k', multiplicity = 'many', max = 4, fields = { { 'v', 'float', min = 0, max = 10 },
  { 'e', 'enum', choices = { 'a', 'b' } }, { 't', 'entity' }, { 's', 'string' }, { 'p', 'vec3' } } }
return function(text)
  local w = keel.world('F')
  local a = w:spawn{ name = 'A', components = { 'core:transform', 'fz:k' } }
  w:spawn{ name = 'B', parent = a, components = { { 'fz:k', v = 3 } } }
  local ch = channel.new(w, { paused = true, save = false, max_frames = 8 })
  local out = ch:handle(text)
  if out ~= '' then assert(json.decode(out), 'the response is not JSON') end
  w:close()
end
