-- bench_replay.lua — the recording rows (design/replay.md), keel vs a baseline in the same process run:
--   record       1,000 steps of the lua update world (N entities whose update does x += vx * dt) with
--                a recording on, against the same steps with none (ns per step; target <= 1.10x)
--   record size  bytes per frame of the demo scene recorded for 600 frames (reported)
--   seek         rp:seek(F) to a random frame of a 10,000-frame recording of a 1,000-entity world,
--                against re-simulating 300 frames from a keyframe (ns per seek; target <= 1.2x)
--   replay       re-simulating 1,000 frames with verification, against the same 1,000 live steps
--                (ns per frame; target <= 1.10x)
-- Run with the keel program (release build): build/keel tools/bench/bench_replay.lua [N]
local keel = require "keel"

local RUNS = tonumber(os.getenv("KEEL_BENCH_RUNS")) or 3
local N = tonumber(arg and arg[1]) or 10000
local clock = os.clock
local dt = 1 / 60

keel.kind{ key = "bench:rwalker", fields = { { "x", "float", default = 0 }, { "vx", "float", default = 1 } },
  update = function(self, _, dt_) self.x = self.x + self.vx * dt_ end }

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

local function row(name, k, b, unit)
  print(string.format("BENCH\t%s\t%s\t%s\t%s", name, k, b, unit))
end

local function walkers(n)
  local w = keel.world("bench-replay")
  for i = 1, n do w:spawn{ name = "W" .. i, components = { { "bench:rwalker", vx = i % 7 } } } end
  return w
end

-- record
local STEPS = 1000
local k, b = math.huge, math.huge
for _ = 1, RUNS do
  local w = walkers(N)
  b = math.min(b, timed(function() for _ = 1, STEPS do w:step(dt) end end))
  local rec = assert(keel.record(w, dir .. "/record.keelrec"))
  k = math.min(k, timed(function() for _ = 1, STEPS do w:step(dt) end end))
  rec:close()
  w:close()
end
row("record", ("%.1f"):format(k / STEPS * 1e9), ("%.1f"):format(b / STEPS * 1e9), "ns")

-- replay: the recording of the last run, re-simulated with verification
do
  local w = walkers(N)
  local rec = assert(keel.record(w, dir .. "/replay.keelrec"))
  for _ = 1, STEPS do w:step(dt) end
  rec:close()
  w:close()
  k, b = math.huge, math.huge
  for _ = 1, RUNS do
    local live = walkers(N)
    b = math.min(b, timed(function() for _ = 1, STEPS do live:step(dt) end end))
    live:close()
    local rp = assert(keel.replay(dir .. "/replay.keelrec"))
    k = math.min(k, timed(function() rp:step(STEPS) end))
    rp:close()
  end
  row("replay", ("%.1f"):format(k / STEPS * 1e9), ("%.1f"):format(b / STEPS * 1e9), "ns")
end

-- record size: the demo scene (its kinds are the bundled ones keel loads at start-up)
do
  local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
  local w = assert(keel.load(here .. "../../scenes/demo.yaml"))
  local rec = assert(keel.record(w, dir .. "/demo.keelrec"))
  for _ = 1, 600 do w:step(dt) end
  rec:close()
  local f = assert(io.open(dir .. "/demo.keelrec", "rb"))
  local size = f:seek("end")
  f:close()
  row("record size", ("%.1f"):format(size / 600), "-", "B/frame")
  w:close()
end

-- seek
do
  local FRAMES, SEEKS = 10000, 20
  local w = walkers(1000)
  local rec = assert(keel.record(w, dir .. "/seek.keelrec", { keyframe_every = 300 }))
  for _ = 1, FRAMES do w:step(dt) end
  rec:close()
  w:close()
  local rp = assert(keel.replay(dir .. "/seek.keelrec"))
  local rng = keel.world("rng")
  rng.seed = 1
  k, b = 0, 0
  for _ = 1, SEEKS do
    rp:seek(FRAMES) -- far from where the next seek goes
    local f = rng:random(0, FRAMES - 1)
    k = k + timed(function() rp:seek(f) end)
    local key = rng:random(0, FRAMES // 300 - 2) * 300
    rp:seek(key)
    b = b + timed(function() rp:step(300) end)
  end
  rp:close()
  row("seek", ("%.0f"):format(k / SEEKS * 1e9), ("%.0f"):format(b / SEEKS * 1e9), "ns")
end

os.execute("rm -rf '" .. dir .. "'")
