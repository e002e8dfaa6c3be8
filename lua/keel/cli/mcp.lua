-- mcp.lua — `keel mcp SCENE` (tools/verb_mcp.c loads the world): the world served paused (as by
-- `keel serve`), nothing stepping until world_step asks, as Model Context Protocol tools on
-- stdin/stdout. The protocol is keel.mcp's; stdout carries only its messages.
local M = {}

function M.mcp(w, scene)
  local channel = require 'keel.channel'
  local ch = channel.new(w, { scene = scene, paused = true })
  require 'keel.mcp'.run(ch, io.stdin, io.stdout)
end

return M
