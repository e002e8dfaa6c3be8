-- replay.lua — `keel replay FILE [--to FRAME] [--verify] [--serve [PORT]]` (tools/verb_replay.c parses
-- the arguments): a recording re-simulated, a line per 1,000 frames, the final state's hash; with
-- --verify the first divergence is reported and the exit code is 1; with --serve the inspector
-- opens the replay (paused at frame 0, or at --to).
local keel = require "keel"

local M = {}

local function report_error(file, err)
  if type(err) ~= "table" then
    io.stderr:write(string.format("%s: error: %s\n", file, tostring(err)))
    return
  end
  local diags = err.diagnostics or {}
  if #diags == 0 then diags = { err } end
  for _, d in ipairs(diags) do
    io.stderr:write(string.format("%s: %s: %s: %s\n", file, d.severity or "error", tostring(d.code), tostring(d.message)))
  end
end

-- Returns the exit code: 0, 1 (a divergence, a damaged file, kinds that differ), 2 (no such file).
function M.run(file, to, verify, serve, port, bind, interrupted)
  local rp, err = keel.replay(file, { verify = verify or serve }) -- the inspector marks a divergence
  if not rp then
    report_error(file, err)
    return (type(err) == "table" and err.code == "IOError") and 2 or 1
  end
  if rp.truncated then
    io.stderr:write(string.format("%s: the recording ends in a torn write: it replays to its last whole frame (%d)\n",
      file, rp.frames))
  end
  local target = to >= 0 and math.min(to, rp.frames) or rp.frames
  if to > rp.frames then
    io.stderr:write(string.format("%s: --to %d is past the recording's end: frame %d\n", file, to, rp.frames))
  end
  if serve then
    target = to >= 0 and target or 0 -- the inspector opens at frame 0 unless told
    if target > 0 then
      local ok, e = pcall(rp.seek, rp, target)
      if not ok then report_error(file, e) end
    end
    local srv, e = require "keel.serve".serve(rp, { port = port, bind = bind })
    if not srv then
      io.stderr:write(string.format("keel: replay: %s\n", tostring(e)))
      return 2
    end
    print(string.format("keel: serving the replay of %s (frame %d of %d) at %s", file, rp.frame, rp.frames, srv.url))
    io.stdout:flush()
    require "keel.serve".loop(srv, { stop = interrupted })
    srv:close()
    return 0
  end
  while rp.frame < target do
    if interrupted() then
      io.stderr:write(string.format("%s: interrupted at frame %d\n", file, rp.frame))
      return 1
    end
    local n = math.min(1000 - rp.frame % 1000, target - rp.frame)
    local ok, e = pcall(rp.step, rp, n)
    if not ok then
      report_error(file, e)
      return 1
    end
    if rp.frame % 1000 == 0 or rp.frame == target then
      print(string.format("%s: frame %d of %d, %d entities%s", file, rp.frame, rp.frames, rp.world:count(),
        verify and ", verified" or ""))
    end
  end
  print(string.format("%s: replayed to frame %d, state hash %s", file, rp.frame, rp.hash))
  rp:close()
  return 0
end

return M
