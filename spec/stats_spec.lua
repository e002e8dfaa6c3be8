-- stats_spec.lua — w.profiling and w:stats() (design/profiler.md): the table's shape, the exact
-- counts of a scripted frame, a slow system ranked first, and nothing collected while off.
local keel = require "keel"

local n = 0
local function key(s) n = n + 1; return ("stats%d:%s"):format(n, s) end

local function find(list, f)
  for _, r in ipairs(list) do if f(r) then return r end end
end

local function busy(ms)
  local t = os.clock()
  while (os.clock() - t) * 1000 < ms do end
end

describe("w.profiling", function()
  it("is off by default, and true/false turn it on and off", function()
    local w = keel.world("P")
    assert.is_false(w.profiling)
    w.profiling = true
    assert.is_true(w.profiling)
    w.profiling = false
    assert.is_false(w.profiling)
    w:close()
  end)

  it("refuses anything but a boolean and changes nothing", function()
    local w = keel.world("P")
    local ok, err = pcall(function() w.profiling = 1 end)
    assert.is_false(ok)
    assert.equal("InvalidArgument", err.code)
    assert.is_false(w.profiling)
    w:close()
  end)

  it("collects nothing while off: stats() is the empty shape", function()
    local w = keel.world("P")
    for _ = 1, 3 do w:step(1 / 60) end
    local s = w:stats()
    assert.equal(0, s.frame)
    assert.equal(0, s.frame_ms)
    assert.same({}, s.systems)
    assert.same({}, s.kinds)
    assert.same({}, s.history)
    assert.equal(4, #s.phases)
    assert.is_false(s.profiling)
    w:close()
  end)
end)

describe("w:stats()", function()
  local A, BAD = key("a"), key("bad")
  local SCRIPT = key("script")
  local log = {}
  keel.kind{ key = A, fields = { { "n", "int" } },
    update = function(self) self.n = self.n + 1 end,
    on_message = function(self, e, name) log[#log + 1] = name end }
  keel.kind{ key = BAD, fields = { { "n", "int" } }, update = function() error("bad on purpose") end }
  local script_on = false
  local w, as, doomed
  keel.system{ name = SCRIPT, phase = "update", run = function(world)
    if not script_on then return end
    script_on = false
    for i = 1, 3 do world:spawn("New" .. i) end
    for _, e in ipairs(doomed) do e:destroy() end
    as[1]:send("ping")
    as[2]:send("ping")
    world:broadcast("all")
  end }

  local function scene()
    w = keel.world("Scripted")
    as, doomed = {}, {}
    for i = 1, 4 do as[i] = w:spawn{ name = "A" .. i, components = { A } } end
    for i = 1, 2 do w:spawn{ name = "B" .. i, components = { BAD } } end
    for i = 1, 2 do doomed[i] = w:spawn("D" .. i) end
    return w
  end

  it("has the contract's shape", function()
    local w = scene()
    w.profiling = true
    w:step(1 / 60)
    w:step(1 / 60)
    local s = w:stats()
    assert.equal(w:stats().frame, 2)
    assert.is_number(s.frame_ms)
    assert.is_true(s.frame_ms > 0)
    local names = {}
    for i, p in ipairs(s.phases) do
      names[i] = p.name
      assert.is_number(p.ms)
      assert.is_true(p.ms >= 0)
    end
    assert.same({ "start", "fixed_update", "update", "late_update" }, names)
    local sum = 0
    for _, p in ipairs(s.phases) do sum = sum + p.ms end
    assert.is_true(sum <= s.frame_ms + 1e-9)
    for _, r in ipairs(s.systems) do
      assert.is_string(r.name); assert.is_number(r.ms); assert.is_number(r.calls); assert.is_number(r.entities)
    end
    for _, r in ipairs(s.kinds) do
      assert.is_string(r.kind); assert.is_string(r.phase); assert.is_number(r.ms); assert.is_number(r.calls)
    end
    for _, k in ipairs({ "messages", "timers", "spawned", "destroyed", "faults" }) do
      assert.equal("number", math.type(s[k]) and "number", k)
      assert.equal("integer", math.type(s[k]), k)
    end
    assert.is_true(s.lua_kb > 0)
    assert.equal(2, #s.history)
    for _, v in ipairs(s.history) do assert.is_true(v > 0) end
    assert.equal(s.frame_ms, s.history[2])
    for _, p in ipairs(s.phases) do
      assert.equal(2, #s.phase_history[p.name])
      assert.equal(p.ms, s.phase_history[p.name][2])
    end
    assert.is_true(s.profiling)
    w:close()
  end)

  it("counts a scripted frame exactly: messages, timers, spawns, destroys, faults, hook calls", function()
    local w = scene()
    local fired = 0
    w:after(0.001, function() fired = fired + 1 end)
    w:after(0.002, function() fired = fired + 1 end)
    w.profiling = true
    script_on = true
    log = {}
    w:step(1 / 60)
    local s = w:stats()
    assert.equal(2, fired)
    assert.equal(1, s.frame)
    assert.equal(3, s.messages)      -- two sends and a broadcast, each once
    assert.equal(2, s.timers)
    assert.equal(3, s.spawned)
    assert.equal(2, s.destroyed)
    assert.equal(2, s.faults)        -- BAD's update failed on both holders (one w:errors() entry, count 2)
    assert.equal(6, #log)            -- on_message: 2 sends + the broadcast to 4 holders
    local function kind(k, p) return find(s.kinds, function(r) return r.kind == k and r.phase == p end) end
    assert.equal(4, kind(A, "update").calls)
    assert.equal(6, kind(A, "on_message").calls)
    assert.equal(2, kind(BAD, "update").calls)
    local sys = find(s.systems, function(r) return r.name == SCRIPT end)
    assert.equal(1, sys.calls)
    assert.equal(0, sys.entities)
    assert.is_true(sys.ms > 0)
    -- the next frame: the counts are its own, the faulted kind runs no more
    w:step(1 / 60)
    s = w:stats()
    assert.equal(2, s.frame)
    for _, k in ipairs({ "messages", "timers", "spawned", "destroyed", "faults" }) do assert.equal(0, s[k], k) end
    assert.is_nil(kind(BAD, "update"))
    assert.equal(4, kind(A, "update").calls)
    assert.equal(2, #s.history)
    w:close()
  end)

  it("ranks a deliberately slow system first, with its entity count", function()
    local SLOW, QUICK = key("slow"), key("quick")
    keel.system{ name = QUICK, phase = "update", query = { A }, each = function(e, a) a.n = a.n + 1 end }
    keel.system{ name = SLOW, phase = "late_update", query = { A }, each = function() busy(1) end }
    local w = scene()
    w.profiling = true
    w:step(1 / 60)
    local s = w:stats()
    assert.equal(SLOW, s.systems[1].name)
    assert.equal(4, s.systems[1].entities)
    assert.is_true(s.systems[1].ms >= 4)
    local quick = find(s.systems, function(r) return r.name == QUICK end)
    assert.equal(4, quick.entities)
    for i = 2, #s.systems do assert.is_true(s.systems[i - 1].ms >= s.systems[i].ms) end
    for i = 2, #s.kinds do assert.is_true(s.kinds[i - 1].ms >= s.kinds[i].ms) end
    -- late_update holds the slow system: the costliest phase
    local late = find(s.phases, function(p) return p.name == "late_update" end)
    assert.is_true(late.ms >= s.systems[1].ms)
    keel.system{ name = SLOW, phase = "late_update", query = { A }, each = function() end }
    w:close()
  end)

  it("keeps the last 300 frames, and turning it on again starts a new history", function()
    local w = keel.world("Ring")
    w.profiling = true
    for _ = 1, 310 do w:step(1 / 60) end
    local s = w:stats()
    assert.equal(300, #s.history)
    assert.equal(310, s.frame)
    assert.equal(s.frame_ms, s.history[300])
    w.profiling = false
    w:step(1 / 60)
    assert.equal(310, w:stats().frame) -- off: the last figures stay, nothing new
    w.profiling = true
    w:step(1 / 60)
    assert.equal(1, #w:stats().history)
    assert.equal(312, w:stats().frame)
    w:close()
  end)

  it("turned on inside a step counts from the next one", function()
    local w = keel.world("Inside")
    local SYS = key("switch")
    keel.system{ name = SYS, phase = "update", run = function(world) world.profiling = true end }
    w:step(1 / 60)
    assert.is_true(w.profiling)
    assert.equal(0, w:stats().frame)
    w:step(1 / 60)
    assert.equal(2, w:stats().frame)
    keel.system{ name = SYS, phase = "update", run = function() end }
    w:close()
  end)

  it("a closed world's stats raise", function()
    local w = keel.world("Gone")
    w:close()
    assert.has_error(function() w:stats() end)
  end)
end)

describe("world.stats over the channel", function()
  local channel = require "keel.channel"
  local json = require "keel.json"

  it("turns profiling on and answers the table, its empty lists as JSON arrays", function()
    local w = keel.world("Served")
    local ch = channel.new(w, {})
    local r = json.decode(ch:handle('{"jsonrpc":"2.0","id":1,"method":"world.stats","params":{"profiling":true}}'))
    assert.is_true(r.result.profiling)
    assert.is_true(w.profiling)
    local text = ch:handle('{"jsonrpc":"2.0","id":2,"method":"world.stats"}')
    assert.truthy(text:find('"systems":[]', 1, true))
    assert.truthy(text:find('"history":[]', 1, true))
    w:step(1 / 60)
    r = ch:call("world.stats")
    assert.equal(1, r.frame)
    assert.equal(1, #r.history)
    ch:call("world.stats", { profiling = false })
    assert.is_false(w.profiling)
    w:close()
  end)

  it("refuses a profiling that is not a boolean (-32602), changing nothing", function()
    local w = keel.world("Served")
    local ch = channel.new(w, {})
    local r = json.decode(ch:handle('{"jsonrpc":"2.0","id":1,"method":"world.stats","params":{"profiling":"yes"}}'))
    assert.equal(-32602, r.error.code)
    assert.is_false(w.profiling)
    w:close()
  end)
end)

describe("keel run --profile", function()
  local H = require "helper"
  local keel_bin = H.find_keel()
  local SCENE = H.HEAD .. "entities:\n" ..
    H.ent("3f1c1b6e-2f0a-4c4e-9a51-7d0f8e6b2a11", "B1", nil, H.comp("runprof:busy", "{n: 0}")) ..
    H.ent("3f1c1b6e-2f0a-4c4e-9a51-7d0f8e6b2a12", "B2", nil, H.comp("runprof:busy", "{n: 0}"))
  local KINDS = [[
local keel = require "keel"
keel.kind{ key = "runprof:busy", fields = { { "n", "int" } }, update = function(self) self.n = self.n + 1 end }
keel.system{ name = "runprof:slow", phase = "update", query = { "runprof:busy" }, each = function()
  local t = os.clock()
  while os.clock() - t < 0.001 do end
end }
]]

  it("prints the frame time's mean, p50, p95 and max, and the costliest first", function()
    local dir = H.tmpdir()
    os.execute("mkdir -p " .. H.shell_quote(dir .. "/kinds"))
    H.spit(dir .. "/kinds/runprof.lua", KINDS)
    H.spit(dir .. "/s.yaml", SCENE)
    local code, out, err = H.run_keel(keel_bin, "run s.yaml --frames 20 --profile --kinds kinds", nil, dir)
    H.rmrf(dir)
    assert.equal(0, code, err)
    local mean, p50, p95, max, frames =
      out:match("profile: frame time mean ([%d.]+) ms, p50 ([%d.]+) ms, p95 ([%d.]+) ms, max ([%d.]+) ms %((%d+) frames%)")
    assert.truthy(mean, out)
    assert.equal("20", frames)
    assert.is_true(tonumber(p50) <= tonumber(p95) and tonumber(p95) <= tonumber(max))
    assert.is_true(tonumber(mean) >= 2) -- two entities of 1 ms each
    -- the first row after the header is the slow system, its calls one a frame
    local first = out:match("mean%s+max%s+calls%s+what\n([^\n]+)")
    assert.truthy(first, out)
    local calls, what = first:match("^%s*[%d.]+%s+[%d.]+%s+(%d+)%s+(.-)%s*$")
    assert.equal("system runprof:slow", what)
    assert.equal("20", calls)
    assert.truthy(out:find("runprof:busy update", 1, true))
  end)

  it("refuses --profile with --serve (usage, exit 2)", function()
    local code, _, err = H.run_keel(keel_bin, "run --serve 0 --profile")
    assert.equal(2, code)
    assert.truthy(err:find("--profile does not combine with --serve", 1, true))
  end)
end)

describe("w:stats options", function()
  it("{ history = false } leaves the rings out; anything else is refused", function()
    local w = keel.world("Opts")
    w.profiling = true
    w:step(1 / 60)
    local s = w:stats{ history = false }
    assert.is_nil(s.history)
    assert.is_nil(s.phase_history)
    assert.equal(1, s.frame)
    assert.has_error(function() w:stats{ histroy = false } end)
    assert.has_error(function() w:stats{ history = 1 } end)
    assert.has_error(function() w:stats(5) end)
    w:close()
  end)
end)

describe("profiling and play mode", function()
  it("stays as it was switched while playing, through stop", function()
    local w = keel.world("Play")
    w:play()
    w.profiling = true
    w:step(1 / 60)
    w:stop()
    assert.is_true(w.profiling)
    local before = #w:stats().history
    w:step(1 / 60)
    assert.equal(before + 1, #w:stats().history)
    w:play()
    w.profiling = false
    w:stop()
    assert.is_false(w.profiling)
    w.profiling = true -- on again: measured again
    w:step(1 / 60)
    assert.equal(1, #w:stats().history)
    w:close()
  end)
end)
