-- run.lua — `keel run [SCENE]` (tools/verb_run.c parses the arguments and loads the world): the
-- frames stepped headless, the summary line, the callback errors, --save and --play's check.
local M = {}

local function value_text(v)
  if v == nil then return "(absent)" end
  if type(v) == "table" then return require "keel.json".encode(v) end
  return tostring(v)
end

-- One line per thing a scene file watcher (--watch) reported: a reload, a merge, each conflict
-- (path and the three values), each error.
function M.report(name, ev)
  local function changes(n) return n == 1 and "1 change" or (n or 0) .. " changes" end
  if ev.reloaded then print(string.format("%s: reloaded from disk (%s)", name, changes(ev.changes))) end
  if ev.merged then print(string.format("%s: merged the file's changes with the live ones (%s)", name, changes(ev.changes))) end
  for _, c in ipairs(ev.conflicts or {}) do
    print(string.format("%s: conflict: %s: base %s, ours %s, theirs %s", name, c.path, value_text(c.base),
      value_text(c.ours), value_text(c.theirs)))
  end
  for _, e in ipairs(ev.errors or {}) do
    io.stderr:write(string.format("%s: watch: %s%s: error: %s: %s\n", name, e.file and (e.file .. ":") or "",
      e.line and (e.line .. ":" .. (e.col or 0)) or "", tostring(e.code), tostring(e.message)))
  end
  if ev.kinds then
    for _, p in ipairs(ev.kinds.reloaded or {}) do print(string.format("%s: reloaded kind file %s", name, p)) end
    for _, m in ipairs(ev.kinds.errors or {}) do io.stderr:write(name, ": watch: ", m, "\n") end
  end
  io.stdout:flush() -- a served world's log is often a file, read as it is written
end

-- --profile: the figures of every frame (w:stats()) summed per system and kind hook.
local Profile = {}
Profile.__index = Profile

local function new_profile(w)
  w.profiling = true
  return setmetatable({ w = w, rows = {}, times = {} }, Profile)
end

function Profile:frame()
  local s = self.w:stats{ history = false }
  if s.frame == 0 then return end
  self.times[#self.times + 1] = s.frame_ms
  local function add(key, what, ms, calls)
    local r = self.rows[key]
    if not r then r = { what = what, total = 0, max = 0, calls = 0 }; self.rows[key] = r end
    r.total, r.calls = r.total + ms, r.calls + calls
    if ms > r.max then r.max = ms end
  end
  for _, r in ipairs(s.systems) do add("s " .. r.name, "system " .. r.name, r.ms, r.calls) end
  for _, r in ipairs(s.kinds) do add("k " .. r.kind .. " " .. r.phase, r.kind .. " " .. r.phase, r.ms, r.calls) end
end

-- nearest rank: the smallest value with at least p of them at or below it
local function percentile(sorted, p)
  return sorted[math.max(1, math.ceil(p * #sorted))]
end

function Profile:print(name)
  local n = #self.times
  if n == 0 then print(name .. ": profile: no frame measured"); return end
  local sorted, sum = {}, 0
  for i, v in ipairs(self.times) do sorted[i] = v; sum = sum + v end
  table.sort(sorted)
  print(string.format("%s: profile: frame time mean %.3f ms, p50 %.3f ms, p95 %.3f ms, max %.3f ms (%d frames)",
    name, sum / n, percentile(sorted, 0.5), percentile(sorted, 0.95), sorted[n], n))
  local rows = {}
  for _, r in pairs(self.rows) do rows[#rows + 1] = r end
  table.sort(rows, function(a, b) if a.total ~= b.total then return a.total > b.total end return a.what < b.what end)
  print(string.format("%s: profile: the costliest systems and kind hooks (ms per frame):", name))
  print(string.format("  %9s %9s %9s  %s", "mean", "max", "calls", "what"))
  for i = 1, math.min(10, #rows) do
    local r = rows[i]
    print(string.format("  %9.4f %9.4f %9d  %s", r.total / n, r.max, r.calls, r.what))
  end
end

-- Returns the number of callback errors, and the reason when --save could not write.
-- `now` and `interrupted` are the program's clock and ctrl-c flag; `tty`: stdout is a terminal
-- (the frame counter is shown); `watch`: the scene file is polled between frames (M.report);
-- `profile`: w.profiling on, and the costliest systems and hooks printed after the summary.
-- `autosave`, `autosave_path`: --autosave SECONDS PATH (design/saving.md), a slot written with
-- keel.persist.save_async every SECONDS of world time against the scene as loaded; one due while
-- the last still writes starts when that one is done; a failed one is printed and the run goes on.
-- `record`, `keyframe_every`: --record FILE, the session as a recording (design/replay.md).
function M.run(w, name, frames, dt, save, tty, now, interrupted, play, watch, profile, autosave, autosave_path,
               record, keyframe_every)
  local authored = play and w:dump()
  local rec
  if record then -- --record FILE: the session as a recording (design/replay.md)
    local err
    rec, err = require "keel".record(w, record, { keyframe_every = keyframe_every })
    if not rec then error(err, 0) end
  end
  local auto = autosave and { base = require("keel").persist.baseline(w), next = autosave, time = 0, saves = 0 }
  local function auto_settle(job)
    local ok, err = job:done()
    if ok == false then
      io.stderr:write(string.format('%s: autosave %s failed: %s\n', name, autosave_path, tostring(err)))
    end
    return ok ~= nil
  end
  local watcher = watch and w:watch{ interval = 0 } -- headless frames are not real time: a stat each
  if play then w:play() end
  local prof = profile and new_profile(w)
  local t0 = now()
  local every = math.max(1, frames // 100)
  local ran = frames
  for i = 1, frames do
    if interrupted() then ran = i - 1; break end
    w:step(dt)
    if prof then prof:frame() end
    if auto then
      auto.time = auto.time + dt
      if auto.job and auto_settle(auto.job) then auto.job = nil end
      if auto.time >= auto.next and not auto.job then
        auto.next = math.max(auto.next + autosave, auto.time) -- late ones do not pile up
        local job, err = require("keel").persist.save_async(w, auto.base, autosave_path,
          { title = name, play_seconds = auto.time })
        if job then auto.job, auto.saves = job, auto.saves + 1
        else io.stderr:write(string.format('%s: autosave %s refused: %s\n', name, autosave_path, tostring(err))) end
      end
    end
    local ev = watcher and watcher:poll()
    if ev then M.report(name, ev) end
    if tty and (i % every == 0 or i == frames) then
      io.stdout:write(string.format('\rframe %d/%d', i, frames)); io.stdout:flush()
    end
  end
  local elapsed = now() - t0
  if auto then
    if auto.job then auto.job:wait(); auto_settle(auto.job) end
    print(string.format('autosave: %d %s to %s', auto.saves, auto.saves == 1 and 'save' or 'saves', autosave_path))
  end
  if rec then
    local frames_done, ok, err = rec.frames, rec:close()
    if not ok then io.stderr:write(string.format('%s: record: %s\n', name, tostring(err))) end
    print(string.format('%s: recorded %d frames to %s', name, frames_done, record))
  end
  if tty and frames > 0 then io.stdout:write('\r\27[K') end
  local errs = w:errors()
  local function n(k, one, many) return k .. ' ' .. (k == 1 and one or many) end
  local done = ran == frames and n(frames, 'frame', 'frames') or
    string.format('interrupted after %d of %s', ran, n(frames, 'frame', 'frames'))
  print(string.format('%s: %s, %s, %.4f ms per frame, %s', name, done,
    n(w:count(), 'entity', 'entities'), ran > 0 and elapsed * 1000 / ran or 0, n(#errs, 'error', 'errors')))
  if prof then prof:print(name) end
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
