-- mcp.lua — `keel mcp SCENE` (tools/verb_mcp.c loads the world): the world served paused (as by
-- `keel serve`), nothing stepping until world_step asks, as Model Context Protocol tools on
-- stdin/stdout. The protocol is keel.mcp's; stdout carries only its messages.
local M = {}

function M.mcp(w, scene)
  local channel = require 'keel.channel'
  local rp
  if w == nil then -- `keel mcp FILE.keelrec`: the recording's replay, with the replay_* tools
    local err
    rp, err = require 'keel'.replay(scene)
    if not rp then error(err, 0) end
    w, scene = rp.world, nil
  end
  local ch = channel.new(w, { scene = scene, paused = true })
  ch.replay = rp
  require 'keel.mcp'.run(ch, io.stdin, io.stdout)
end

return M
