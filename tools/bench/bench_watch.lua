-- bench_watch.lua — the scene file watcher's rows (design/editing.md), keel vs a baseline in the
-- same process run:
--   watch idle    1,000 steps of a 1,000-entity world with w:watch() polled after each step, against
--                 the same steps without a watcher (ns per step; target <= 1.02x)
--   watch reload  a 10,000-entity scene whose file changed in one field: the poll that brings the
--                 world to it in place, against one w:dump() of that world (ns; target <= 2x)
-- Run with the keel program (release build): build/keel tools/bench/bench_watch.lua
local keel = require "keel"

local RUNS = tonumber(os.getenv("KEEL_BENCH_RUNS")) or 3
local clock = os.clock
local dt = 1 / 60

keel.kind{ key = "bench:walker", fields = { { "x", "float", default = 0 }, { "vx", "float", default = 1 } },
  update = function(self, _, dt_) self.x = self.x + self.vx * dt_ end }
keel.kind{ key = "bench:tag", fields = { { "count", "int", default = 0 } } }

local dir = os.tmpname()
os.remove(dir)
os.execute("mkdir -p '" .. dir .. "'")

local function timed(f)
  collectgarbage()
  collectgarbage()
  local t0 = clock()
  f()
  return clock() - t0
end

-- watch idle
local STEPS = 1000
local idle = dir .. "/idle.yaml"
do
  local w = keel.world("bench-watch")
  for i = 1, 1000 do w:spawn{ name = "W" .. i, components = { "bench:walker" } } end
  assert(w:save(idle))
  w:close()
end
local w = assert(keel.load(idle))
local watcher = w:watch()
local k, b = math.huge, math.huge
for _ = 1, RUNS do
  b = math.min(b, timed(function() for _ = 1, STEPS do w:step(dt) end end))
  k = math.min(k, timed(function() for _ = 1, STEPS do w:step(dt); watcher:poll() end end))
end
watcher:close()
w:close()
local function row(name, kt, bt, n)
  print(string.format("BENCH\t%s\t%.1f\t%.1f\tns", name, kt / n * 1e9, bt / n * 1e9))
  io.stderr:write(string.format("%-12s keel %10.1f ns  baseline %10.1f ns  ratio %.2fx\n", name,
    kt / n * 1e9, bt / n * 1e9, kt / bt))
end
row("watch idle", k, b, STEPS)

-- watch reload
local big = dir .. "/big.yaml"
do
  local bw = keel.world("bench-reload")
  for i = 1, 10000 do bw:spawn{ name = "E" .. i, components = { { "bench:tag", count = i } } } end
  assert(bw:save(big))
  bw:close()
end
local text = assert(io.open(big, "rb")):read("a")
w = assert(keel.load(big))
watcher = w:watch{ interval = 0 }
k, b = math.huge, math.huge
for r = 1, RUNS do
  b = math.min(b, timed(function() w:dump() end))
  -- one field of one entity changed on disk (alternating, so each run is a change)
  local f = assert(io.open(big, "wb"))
  f:write((text:gsub("count: 5000\n", ("count: %d\n"):format(50000 + r), 1)))
  f:close()
  local ev
  k = math.min(k, timed(function() ev = watcher:poll() end))
  assert(ev and ev.reloaded and ev.changes == 1, "the reload did not happen: " .. require "keel.json".encode(ev or {}))
end
row("watch reload", k, b, 1)
watcher:close()
w:close()
os.execute("rm -rf '" .. dir .. "'")
