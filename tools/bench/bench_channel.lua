-- bench_channel.lua — the live channel's rows: "rpc round trip", "object.list 100k", "watch 10k".
-- Run with the keel program (release build): build/keel tools/bench/bench_channel.lua
-- Prints BENCH\t<row>\t<keel>\t<baseline>\t<unit>.
local keel = require "keel"
local channel = require "keel.channel"
local watch = require "keel.watch"

local clock = require "keel.core.channel".clock

local function best(runs, f)
  local b = math.huge
  for _ = 1, runs do
    collectgarbage()
    local t0 = clock()
    f()
    b = math.min(b, clock() - t0)
  end
  return b
end

local function row(name, k, b, unit) print(string.format("BENCH\t%s\t%.1f\t%.1f\t%s", name, k, b, unit)) end

-- ---- rpc round trip: component.get over loopback on one keep-alive connection (curl), against
-- the same request answered in process (ch:handle) ----
do
  local w = keel.world("rpc")
  w:spawn{ name = "P", components = { { "core:transform", position = { 1, 2, 3 } } } }
  local srv = assert(keel.serve(w, { port = 0, token = "bench" }))
  local body = '{"jsonrpc":"2.0","id":1,"method":"component.get","params":{"object":"P","kind":"core:transform"}}'
  local N = 2000
  local url = ("http://127.0.0.1:%d/rpc"):format(srv.port)
  local cfg = os.tmpname()
  local f = assert(io.open(cfg, "w"))
  f:write('header = "Authorization: Bearer bench"\nheader = "Content-Type: application/json"\n')
  f:write("data = '" .. body .. "'\nsilent\noutput = /dev/null\n")
  for _ = 1, N do f:write('url = "' .. url .. '"\noutput = /dev/null\n') end
  f:close()
  local function over_http()
    local done = os.tmpname()
    os.remove(done)
    os.execute("(env -u LD_PRELOAD curl -K " .. cfg .. " >/dev/null 2>&1; touch " .. done .. ") &")
    while not io.open(done) do srv:poll(0.0005) end
    os.remove(done)
  end
  -- the curl process itself: its start and its per-request work with no server work to wait for
  local http = best(3, over_http)
  local ch = srv.channel
  local inproc = best(3, function() for _ = 1, N do ch:handle(body) end end)
  row("rpc round trip", http / N * 1e6, inproc / N * 1e6, "us")
  os.remove(cfg)
  srv:close()
  w:close()
end

-- ---- object.list: 100k entities, paged by 1000, the whole walk; against w:dump() of them ----
do
  local N = 100000
  local w = keel.world("list")
  for i = 1, N do w:spawn{ name = "E" .. i, components = { "core:transform" } } end
  local ch = channel.new(w)
  local function walk()
    local offset = 0
    repeat
      local r = ch:handle(('{"jsonrpc":"2.0","id":1,"method":"object.list","params":{"offset":%d,"limit":1000}}'):format(offset))
      offset = offset + 1000
    until offset >= N or #r < 100
  end
  local k = best(3, function()
    w:spawn("bump"):destroy() -- a new revision: the walk starts from the world, not a cache
    walk()
  end)
  local b = best(3, function() w:dump() end)
  row("object.list 100k", k * 1000, b * 1000, "ms")
  w:close()
end

-- ---- watch: a delta of 10k components whose fields all changed, encoded for one subscriber;
-- against the scene writer writing the same components as YAML ----
do
  local N = 10000
  local w = keel.world("watch")
  local comps = {}
  for i = 1, N do comps[i] = w:spawn{ name = "E" .. i, components = { "core:transform" } }:get("core:transform") end
  local ch = channel.new(w, { paused = true })
  local sent = 0
  local wt = watch.new(ch, function(_, text) sent = sent + #text; return true end, function() return 0 end, function() end)
  wt:subscribe({ kinds = "core:transform" })
  wt:publish()
  local frame = 0
  local function change()
    frame = frame + 1
    for i = 1, N do comps[i].position = { frame + 0.5, i * 0.25, 0 } end -- not all integers: both write float text
  end
  local k, b = math.huge, math.huge
  for _ = 1, 5 do -- interleaved, the best of each kept; the writes are not timed
    change()
    collectgarbage()
    local t0 = clock()
    ch:on_step()
    wt:publish()
    k = math.min(k, clock() - t0)
    change()
    collectgarbage()
    t0 = clock()
    w:dump()
    b = math.min(b, clock() - t0)
  end
  assert(sent > N * 20, "the deltas were sent")
  row("watch 10k", k * 1000, b * 1000, "ms")
  w:close()
end
