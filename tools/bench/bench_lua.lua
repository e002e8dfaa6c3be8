-- bench_lua.lua — the Lua rows (update, access, spawn, system, columns, churn, message, timer, stats):
-- keel vs a baseline, same process run.
-- Run with the keel program (release build): build/keel tools/bench/bench_lua.lua [N]
-- KEEL_BENCH_ROWS="update,system" runs only those rows (update, access, spawn, system, columns,
-- churn, message, timer; stats: profiling on against off); KEEL_BENCH_STEPS and KEEL_BENCH_RUNS set
-- the frames per run and the runs per row, and
-- KEEL_BENCH_SIDE=keel or =base runs one side only: instruction counts under callgrind at a small N
-- (the difference between two STEPS, over N times that difference, is one side's cost a frame).
-- Prints BENCH\t<row>\t<keel>\t<baseline>\t<unit> (ns per component-update / per entity).
local keel = require "keel"

local N = tonumber(arg and arg[1]) or 100000
local STEPS = tonumber(os.getenv("KEEL_BENCH_STEPS")) or 100
local RUNS = tonumber(os.getenv("KEEL_BENCH_RUNS")) or 3
local only = os.getenv("KEEL_BENCH_ROWS")
local side = os.getenv("KEEL_BENCH_SIDE")
local function want(name) return not only or (("," .. only .. ","):find("," .. name .. ",", 1, true) ~= nil) end
local MSGS, TIMERS = 20000, 20000 -- the message and timer rows' counts
local dt = 1 / 60
local clock = os.clock

local function update(self, entity, dt_)
  self.x = self.x + self.vx * dt_
end

keel.kind{ key = "bench:mover", fields = { { "x", "float", default = 0 }, { "vx", "float", default = 1 } },
  update = update }

local function best(runs, f)
  local b = math.huge
  if not f then return 0 end
  for _ = 1, runs do
    -- twice: a closed World's finalizer keeps what it reaches (its handle caches) alive until
    -- the next cycle, which would otherwise run inside the timed row
    collectgarbage()
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
  if side == "keel" then fb = nil elseif side == "base" then fk = nil end
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
local spawn_base = best(3, want("spawn") and side ~= "keel" and function()
  local t = {}
  for i = 1, N do t[i] = { name = "e", x = 0, vx = i % 7 } end
end or nil)
-- lua update (first: the plain tables are made before keel allocates anything, so the
-- baseline gets the same tidy heap the keel records get)
local pa, pb = {}, {} -- the lua system row's baseline, made now for the same reason
local update_keel, update_base = 0, 0
if want("update") then
local plain = {}
for i = 1, N do plain[i] = { x = 0, vx = i % 7 } end
if want("system") then for i = 1, N do pa[i] = { x = 0 }; pb[i] = { vx = i % 7 } end end
local w = keel.world("bench")
for i = 1, N do w:spawn("e"):add("bench:mover", { vx = i % 7 }) end
w:step(dt) -- the start phase, once
update_keel, update_base = pair(RUNS, function()
  for _ = 1, STEPS do w:step(dt) end
end, function()
  for _ = 1, STEPS do
    for i = 1, N do update(plain[i], nil, dt) end
  end
end)
w:close()
w, plain = nil, nil
elseif want("system") then
  for i = 1, N do pa[i] = { x = 0 }; pb[i] = { vx = i % 7 } end
end

-- lua access: components read and written through handles outside their own hooks, in a
-- query loop, against the same loop over plain tables (one call per entity, as the update row)
local access_keel, access_base = 0, 0
if want("access") then
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
access_keel, access_base = pair(RUNS, function()
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
end

-- lua spawn (keel; its baseline ran first)
local spawn_keel = best(3, want("spawn") and side ~= "base" and function()
  local sw = keel.world("bench")
  for i = 1, N do
    local e = sw:spawn("e")
    e:add("bench:mover", { vx = i % 7 })
  end
  return function() sw:close() end
end or nil)

-- lua system: 100 steps of a system's `each(e, a, b, dt)` over N entities holding two kinds,
-- against the same function called on two plain tables per entity (as `lua update`'s baseline)
local system_keel, system_base = 0, 0
if want("system") then
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
system_keel, system_base = pair(RUNS, function()
  for _ = 1, STEPS do ws:step(dt) end
end, function()
  for _ = 1, STEPS do
    for i = 1, N do move(nil, pa[i], pb[i], dt) end
  end
end)
ws:close()
ws, pa, pb = nil, nil, nil
end

-- lua columns: the lua system row's workload through a `columns` system (one call per batch of
-- field arrays, pos written back), against the same plain-Lua loop as that row's baseline
local columns_keel, columns_base = 0, 0
if want("columns") then
local function move(e, a, b, dt_) a.x = a.x + b.vx * dt_ end
local ca, cb = {}, {}
for i = 1, N do ca[i] = { x = 0 }; cb[i] = { vx = i % 7 } end
keel.kind{ key = "bench:cpos", fields = { { "x", "float", default = 0 } } }
keel.kind{ key = "bench:cvel", fields = { { "vx", "float", default = 1 } } }
keel.system{ name = "bench:cmove", phase = "update", query = { "bench:cpos", "bench:cvel" }, writes = { "bench:cpos" },
  columns = function(n, a, b, dt_)
    local x, vx = a.x, b.vx
    for i = 1, n do x[i] = x[i] + vx[i] * dt_ end
  end }
local wc = keel.world("bench-columns")
for i = 1, N do
  local e = wc:spawn("e")
  e:add("bench:cpos")
  e:add("bench:cvel", { vx = i % 7 })
end
wc:step(dt)
columns_keel, columns_base = pair(RUNS, function()
  for _ = 1, STEPS do wc:step(dt) end
end, function()
  for _ = 1, STEPS do
    for i = 1, N do move(nil, ca[i], cb[i], dt) end
  end
end)
wc:close()
end

-- lua churn: a component added to and removed from each of N entities from Lua, per entity,
-- against setting and clearing a field (a fresh small table) of N plain tables
local churn_keel, churn_base = 0, 0
if want("churn") then
local plain = {}
for i = 1, N do plain[i] = { name = "e" } end
keel.kind{ key = "bench:tag", fields = { { "n", "float", default = 0 } } }
local wh = keel.world("bench-churn")
local ents = {}
for i = 1, N do ents[i] = wh:spawn("e") end
churn_keel, churn_base = pair(RUNS, function()
  for i = 1, N do
    local e = ents[i]
    e:add("bench:tag")
    e:remove("bench:tag")
  end
end, function()
  for i = 1, N do
    local t = plain[i]
    t.tag = { n = 0 }
    t.tag = nil
  end
end)
wh:close()
end

-- message: MSGS sends to one component and their delivery at the next step, per message, against
-- queueing copies of the same tables in plain Lua and calling the handler on each
local message_keel, message_base = 0, 0
if want("message") then
local got = 0
keel.kind{ key = "bench:ear", on_message = function(self, e, name, data) got = got + data.n end }
local wm = keel.world("bench-message")
local ear = wm:spawn("ear")
ear:add("bench:ear")
message_keel, message_base = pair(RUNS, function()
  for i = 1, MSGS do ear:send("hit", { n = i }) end
  wm:step(0)
end, function()
  local q = {}
  local handler = function(data) got = got + data.n end
  for i = 1, MSGS do local d = { n = i }; q[#q + 1] = { name = "hit", data = { n = d.n } } end
  for i = 1, #q do handler(q[i].data) end
end)
wm:close()
end

-- timer: TIMERS one-shot timers firing in one step, per timer, against calling N plain closures
local timer_keel, timer_base = 0, 0
if want("timer") then
local wt = keel.world("bench-timer")
local fired = 0
local function tick() fired = fired + 1 end
timer_keel, timer_base = pair(RUNS, function()
  for _ = 1, TIMERS do wt:after(0, tick) end
  wt:step(dt)
end, function()
  local list = {}
  for i = 1, TIMERS do list[i] = tick end
  for i = 1, TIMERS do list[i]() end
end)
wt:close()
end

-- stats: 1,000 steps of the lua system world (STATS_N entities) with w.profiling on, against the
-- same world with it off (design/profiler.md: collecting costs at most 5% of a step)
local STATS_N, STATS_STEPS = 10000, 1000
local stats_keel, stats_base = 0, 0
if want("stats") then
local function move(e, a, b, dt_) a.x = a.x + b.vx * dt_ end
keel.kind{ key = "bench:spos", fields = { { "x", "float", default = 0 } } }
keel.kind{ key = "bench:svel", fields = { { "vx", "float", default = 1 } } }
keel.system{ name = "bench:smove", phase = "update", query = { "bench:spos", "bench:svel" }, each = move }
local wst = keel.world("bench-stats")
for i = 1, STATS_N do
  local e = wst:spawn("e")
  e:add("bench:spos")
  e:add("bench:svel", { vx = i % 7 })
end
wst:step(dt)
local function steps(on)
  return function()
    wst.profiling = on
    for _ = 1, STATS_STEPS do wst:step(dt) end
    wst.profiling = false
  end
end
stats_keel, stats_base = pair(RUNS + 2, steps(true), steps(false))
assert(wst:stats().frame > 0 and wst:stats().systems[1].name == "bench:smove", "stats row: nothing measured")
wst:close()
end

local function row(name, k, b, n)
  if k == 0 and b == 0 then return end
  print(string.format("BENCH\t%s\t%.1f\t%.1f\tns", name, k / n * 1e9, b / n * 1e9))
  io.stderr:write(string.format("%-12s keel %8.1f ns  baseline %8.1f ns  ratio %.2fx\n", name,
    k / n * 1e9, b / n * 1e9, k / b))
end
row("lua update", update_keel, update_base, N * STEPS)
row("lua access", access_keel, access_base, N * STEPS)
row("lua spawn", spawn_keel, spawn_base, N)
row("lua system", system_keel, system_base, N * STEPS)
row("lua columns", columns_keel, columns_base, N * STEPS)
row("lua churn", churn_keel, churn_base, N)
row("message", message_keel, message_base, MSGS)
row("timer", timer_keel, timer_base, TIMERS)
row("stats", stats_keel, stats_base, STATS_N * STATS_STEPS)
