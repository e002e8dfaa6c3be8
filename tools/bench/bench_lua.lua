-- bench_lua.lua — the Lua rows (update, access, spawn, system, message, timer): keel vs a
-- baseline, same process run.
-- Run with the keel program (release build): build/keel tools/bench/bench_lua.lua [N]
-- Prints BENCH\t<row>\t<keel>\t<baseline>\t<unit> (ns per component-update / per entity).
local keel = require "keel"

local N = tonumber(arg and arg[1]) or 100000
local STEPS = 100
local dt = 1 / 60
local clock = os.clock

local function update(self, entity, dt_)
  self.x = self.x + self.vx * dt_
end

keel.kind{ key = "bench:mover", fields = { { "x", "float", default = 0 }, { "vx", "float", default = 1 } },
  update = update }

local function best(runs, f)
  local b = math.huge
  for _ = 1, runs do
    collectgarbage()
    local t0 = clock()
    local cleanup = f()
    local t = clock() - t0
    if cleanup then cleanup() end -- tearing down is not part of the row
    if t < b then b = t end
  end
  return b
end

-- Runs are interleaved (baseline, keel, baseline, keel, ...) and the best of each kept:
-- the machines are noisy and share cores.
local function pair(runs, fk, fb)
  local bk, bb = math.huge, math.huge
  for _ = 1, runs do
    bb = math.min(bb, best(1, fb))
    bk = math.min(bk, best(1, fk))
  end
  return bk, bb
end

-- lua spawn (the baseline runs first, on a heap keel has not touched: after keel's
-- handles are swept, plain tables would land in scattered reused memory and the
-- baseline would look slower than it is)
local spawn_base = best(3, function()
  local t = {}
  for i = 1, N do t[i] = { name = "e", x = 0, vx = i % 7 } end
end)
-- lua update (first: the plain tables are made before keel allocates anything, so the
-- baseline gets the same tidy heap the keel records get)
local plain = {}
for i = 1, N do plain[i] = { x = 0, vx = i % 7 } end
local pa, pb = {}, {} -- the lua system row's baseline, made now for the same reason
for i = 1, N do pa[i] = { x = 0 }; pb[i] = { vx = i % 7 } end
local w = keel.world("bench")
for i = 1, N do w:spawn("e"):add("bench:mover", { vx = i % 7 }) end
w:step(dt) -- the start phase, once
local update_keel, update_base = pair(3, function()
  for _ = 1, STEPS do w:step(dt) end
end, function()
  for _ = 1, STEPS do
    for i = 1, N do update(plain[i], nil, dt) end
  end
end)
w:close()
w, plain = nil, nil

-- lua access: components read and written through handles outside their own hooks, in a
-- query loop, against the same loop over plain tables (one call per entity, as the update row)
keel.kind{ key = "bench:a", fields = { { "x", "float", default = 0 } } }
keel.kind{ key = "bench:b", fields = { { "vx", "float", default = 1 } } }
local qa, qb = {}, {}
for i = 1, N do qa[i], qb[i] = { x = 0 }, { vx = i % 7 } end
local function move(a, b, dt_) a.x = a.x + b.vx * dt_ end
local wa = keel.world("bench-access")
for i = 1, N do
  local e = wa:spawn("e")
  e:add("bench:a")
  e:add("bench:b", { vx = i % 7 })
end
local access_keel, access_base = pair(3, function()
  for _ = 1, STEPS do
    for _, a, b in wa:query("bench:a", "bench:b") do a.x = a.x + b.vx * dt end
  end
end, function()
  for _ = 1, STEPS do
    for i = 1, N do move(qa[i], qb[i], dt) end
  end
end)
wa:close()
wa, qa, qb = nil, nil, nil

-- lua spawn (keel; its baseline ran first)
local spawn_keel = best(3, function()
  local sw = keel.world("bench")
  for i = 1, N do
    local e = sw:spawn("e")
    e:add("bench:mover", { vx = i % 7 })
  end
  return function() sw:close() end
end)

-- lua system: 100 steps of a system's `each(e, a, b, dt)` over N entities holding two kinds,
-- against the same function called on two plain tables per entity (as `lua update`'s baseline)
local function move(e, a, b, dt_) a.x = a.x + b.vx * dt_ end
keel.kind{ key = "bench:pos", fields = { { "x", "float", default = 0 } } }
keel.kind{ key = "bench:vel", fields = { { "vx", "float", default = 1 } } }
keel.system{ name = "bench:move", phase = "update", query = { "bench:pos", "bench:vel" }, each = move }
local ws = keel.world("bench-system")
for i = 1, N do
  local e = ws:spawn("e")
  e:add("bench:pos")
  e:add("bench:vel", { vx = i % 7 })
end
ws:step(dt)
local system_keel, system_base = pair(3, function()
  for _ = 1, STEPS do ws:step(dt) end
end, function()
  for _ = 1, STEPS do
    for i = 1, N do move(nil, pa[i], pb[i], dt) end
  end
end)
ws:close()
ws, pa, pb = nil, nil, nil

-- message: N sends to one component and their delivery at the next step, per message, against
-- queueing copies of the same tables in plain Lua and calling the handler on each
local MSGS = 20000
local got = 0
keel.kind{ key = "bench:ear", on_message = function(self, e, name, data) got = got + data.n end }
local wm = keel.world("bench-message")
local ear = wm:spawn("ear")
ear:add("bench:ear")
local message_keel, message_base = pair(3, function()
  for i = 1, MSGS do ear:send("hit", { n = i }) end
  wm:step(0)
end, function()
  local q = {}
  local handler = function(data) got = got + data.n end
  for i = 1, MSGS do local d = { n = i }; q[#q + 1] = { name = "hit", data = { n = d.n } } end
  for i = 1, #q do handler(q[i].data) end
end)
wm:close()

-- timer: N one-shot timers firing in one step, per timer, against calling N plain closures
local TIMERS = 20000
local wt = keel.world("bench-timer")
local fired = 0
local function tick() fired = fired + 1 end
local timer_keel, timer_base = pair(3, function()
  for _ = 1, TIMERS do wt:after(0, tick) end
  wt:step(dt)
end, function()
  local list = {}
  for i = 1, TIMERS do list[i] = tick end
  for i = 1, TIMERS do list[i]() end
end)
wt:close()

local function row(name, k, b, n)
  print(string.format("BENCH\t%s\t%.1f\t%.1f\tns", name, k / n * 1e9, b / n * 1e9))
  io.stderr:write(string.format("%-12s keel %8.1f ns  baseline %8.1f ns  ratio %.2fx\n", name,
    k / n * 1e9, b / n * 1e9, k / b))
end
row("lua update", update_keel, update_base, N * STEPS)
row("lua access", access_keel, access_base, N * STEPS)
row("lua spawn", spawn_keel, spawn_base, N)
row("lua system", system_keel, system_base, N * STEPS)
row("message", message_keel, message_base, MSGS)
row("timer", timer_keel, timer_base, TIMERS)
