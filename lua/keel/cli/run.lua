-- run.lua — `keel run [SCENE]` (tools/verb_run.c parses the arguments and loads the world): the
-- frames stepped headless, the summary line, the callback errors, --save and --play's check.
local M = {}

-- Returns the number of callback errors, and the reason when --save could not write.
-- `now` and `interrupted` are the program's clock and ctrl-c flag; `tty`: stdout is a terminal
-- (the frame counter is shown).
function M.run(w, name, frames, dt, save, tty, now, interrupted, play)
  local authored = play and w:dump()
  if play then w:play() end
  local t0 = now()
  local every = math.max(1, frames // 100)
  local ran = frames
  for i = 1, frames do
    if interrupted() then ran = i - 1; break end
    w:step(dt)
    if tty and (i % every == 0 or i == frames) then
      io.stdout:write(string.format('\rframe %d/%d', i, frames)); io.stdout:flush()
    end
  end
  local elapsed = now() - t0
  if tty and frames > 0 then io.stdout:write('\r\27[K') end
  local errs = w:errors()
  local function n(k, one, many) return k .. ' ' .. (k == 1 and one or many) end
  local done = ran == frames and n(frames, 'frame', 'frames') or
    string.format('interrupted after %d of %s', ran, n(frames, 'frame', 'frames'))
  print(string.format('%s: %s, %s, %.4f ms per frame, %s', name, done,
    n(w:count(), 'entity', 'entities'), ran > 0 and elapsed * 1000 / ran or 0, n(#errs, 'error', 'errors')))
  for i, e in ipairs(errs) do
    if i > 10 then io.stderr:write(string.format('%s: ... and %d more entries\n', name, #errs - 10)); break end
    local msg, phase = tostring(e.message), tostring(e.phase)
    if msg:sub(1, #phase + 1) ~= phase .. ':' then msg = phase .. ': ' .. msg end
    -- the entity by name too, when it is still there (a UUID alone says little)
    local ent = tostring(e.entity)
    local ok, found = pcall(w.find, w, ent)
    if ok and found then ent = string.format('%q %s', found.name, ent) end
    if (e.count or 1) > 1 then msg = msg .. string.format(' (%d times in one step)', e.count) end
    io.stderr:write(string.format('%s: error: %s[%s] on entity %s: %s\n', name,
      tostring(e.kind), tostring(e.slot), ent, msg))
  end
  if #errs > 0 then
    local ok, repl = pcall(require, 'keel.repl')
    if ok then
      io.stderr:write(name, ': callback errors by kind, phase and message:\n',
        table.concat(repl.group_errors(errs), '\n'), '\n')
    end
  end
  if ran < frames then
    if save then io.stderr:write('keel: run: interrupted: ' .. save .. ' not written\n') end
    return #errs
  end
  if save then
    local ok, err = w:save(save)
    if not ok then return #errs, tostring(err) end
    print('saved ' .. save)
  end
  if play then
    w:stop()
    print(w:dump() == authored and 'play: stop put the world back identical to the scene as loaded'
      or 'play: stop did NOT put the world back identical to the scene as loaded')
  end
  return #errs
end

return M
