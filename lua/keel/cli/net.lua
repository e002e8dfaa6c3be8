-- net.lua — `keel run [SCENE] --host [PORT]` and `keel run --connect ADDR:PORT` (tools/verb_net.c
-- parses the arguments): the frame loops of a host and of a client, in real time, until
-- `stopped()` (ctrl-c) or `frames` frames when >= 0. Both return the exit status (0 or 1).
-- `now`, `sleep` and `stopped` are the program's clock, nap and ctrl-c flag.
local M = {}

-- Serves the world `w` (scene `name`) and says who joins and leaves.
function M.host(keel, w, name, port, frames, dt, now, sleep, stopped, bind)
  local host = keel.net.host(w, { port = port, bind = bind })
  -- every address unless --bind narrows it, as game servers do: say which
  print(string.format('%s: hosting on UDP port %d (%s), %d entities', name, host:port(),
    bind and ('on ' .. bind .. ' only') or 'every address', w:count()))
  io.stdout:flush()
  local known, t0, i = {}, now(), 0
  while (frames < 0 or i < frames) and not stopped() do
    i = i + 1
    w:step(dt) -- one network tick too
    local names = {}
    for _, c in ipairs(host:clients()) do
      names[c.name] = true
      if not known[c.name] then print('client joined: ' .. c.name); io.stdout:flush() end
    end
    for n in pairs(known) do if not names[n] then print('client left: ' .. n); io.stdout:flush() end end
    known = names
    local wait = t0 + i * dt - now()
    if wait > 0 then sleep(wait) end
  end
  host:close()
  print(string.format('%s: hosted %d frames', name, i))
  return 0
end

-- Mirrors a host's world and prints what it holds once a second.
function M.connect(keel, addr, port, name, frames, dt, now, sleep, stopped)
  local cl = keel.net.connect(addr, port, { name = name })
  local w, t0, i, last, joined = cl.world, now(), 0, nil, false
  local function fmt(v) return string.format('%.2f', v) end
  while (frames < 0 or i < frames) and not stopped() do
    i = i + 1
    local ok, err = cl:service()
    if not ok then io.stderr:write('keel: run: ' .. tostring(err) .. '\n'); return 1 end
    w:step(dt)
    if cl.connected and not joined then
      joined = true
      print(string.format('connected to %s:%d as %s', addr, port, name)); io.stdout:flush()
    end
    local t = now()
    if joined and (not last or t - last >= 1) then
      last = t
      print(string.format('mirror: %d entities', w:count()))
      local shown = 0
      for e in w:entities() do
        if shown == 20 then print('  ...'); break end
        shown = shown + 1
        local tr = e:get('core:transform')
        local p = tr and tr.position
        print('  ' .. e.name .. (p and ('  ' .. fmt(p[1]) .. ' ' .. fmt(p[2]) .. ' ' .. fmt(p[3])) or ''))
      end
      io.stdout:flush()
    end
    local wait = t0 + i * dt - now()
    if wait > 0 then sleep(wait) end
  end
  -- never joined: say why (a refusal's reason, or that nobody answered) and fail
  local reason = not joined and (cl.reason or "could not connect to the server") or nil
  cl:close()
  if reason then
    io.stderr:write(string.format('keel: run: did not join %s:%d: %s\n', addr, port, reason))
    return 1
  end
  return 0
end

return M
