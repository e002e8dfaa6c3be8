-- serve.lua — `keel serve SCENE` and `keel run SCENE --serve` (tools/verb_serve.c parses the
-- arguments and loads the world): the live channel (keel.serve) served until `interrupted()`
-- (ctrl-c), or `frames` frames of `dt` seconds when >= 0; `paused`: nothing steps until a
-- client asks; `watch`: the scene file is watched (conflicts, reloads printed). Returns the frames run, or nil and why the server could not open.
local M = {}

function M.serve(w, scene, port, bind, paused, frames, dt, interrupted, watch)
  local serve = require 'keel.serve'
  local srv, err = serve.serve(w, { port = port, bind = bind, scene = scene, paused = paused, dt = dt, watch = watch })
  if not srv then return nil, err end
  if watch then srv.on_file_event = function(ev) require 'keel.cli.run'.report(scene, ev) end end
  if bind ~= '127.0.0.1' then
    io.stderr:write('keel: serving on ' .. bind .. ', not only this machine: anyone who can reach it and has '
      .. 'the token can edit the world\n')
  end
  print(string.format('keel: serving %s (%s) at %s', scene, paused and 'paused' or 'running', srv.url))
  io.stdout:flush()
  local ran = serve.loop(srv, { stop = interrupted, frames = frames >= 0 and frames or nil })
  srv:close()
  return ran
end

return M
