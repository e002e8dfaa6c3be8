-- replay_spec.lua — design/replay.md: the world's random generator, recording, replaying,
-- verifying (Diverged), seeking, branching, the file's damage and the replay.* channel methods.
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("rp")

-- A kind that counts and moves, drawing from the world's generator.
local function walker_kind()
  local k = key("walker")
  keel.kind{ key = k, version = 1, multiplicity = "one",
    fields = { { "x", "float" }, { "n", "int" }, { "roll", "int" } },
    update = function(self, e, dt)
      self.x = self.x + dt
      self.n = self.n + 1
      self.roll = e.world:random(1, 1000)
    end }
  return k
end

local dir
before_each(function() dir = H.tmpdir() end)
after_each(function() H.rmrf(dir) end)

-- Records `frames` frames of w into the spec's folder (H.record).
local function record(w, frames, between, opts) return H.record(w, dir .. "/s.keelrec", frames, between, opts) end

describe("w:random and w.seed", function()
  it("has math.random's signature and draws from the world's own generator", function()
    local w = keel.world("R")
    w.seed = 7
    for _ = 1, 100 do
      local u = w:random()
      assert.is_true(u >= 0 and u < 1)
      local a = w:random(6)
      assert.is_true(math.type(a) == "integer" and a >= 1 and a <= 6)
      local b = w:random(-3, 3)
      assert.is_true(b >= -3 and b <= 3)
    end
    H.fails("InvalidArgument", w.random, w, 3, 1)
    H.fails("InvalidArgument", w.random, w, 1.5)
    H.fails("InvalidArgument", function() w.seed = "x" end)
  end)

  it("draws the same numbers from the same seed, and math.random is not touched", function()
    local a, b = keel.world("A"), keel.world("B")
    a.seed, b.seed = 42, 42
    math.randomseed(1)
    local m = math.random(1000)
    for _ = 1, 50 do assert.are.equal(a:random(1, 1 << 40), b:random(1, 1 << 40)) end
    math.randomseed(1)
    assert.are.equal(m, math.random(1000))
    assert.are.equal(42, a.seed)
  end)

  it("derives the default seed from the scene UUID", function()
    local text = keel.world("S"):dump()
    local a, b = keel.parse(text), keel.parse(text)
    assert.are.equal(a.seed, b.seed)
    assert.are.equal(a:random(1, 1 << 40), b:random(1, 1 << 40))
    assert.are_not.equal(keel.world("T").seed, a.seed)
  end)

  it("is carried by a dump (settings.random) and goes on where it was", function()
    local w = keel.world("D")
    w.seed = 3
    w:random()
    local text = w:dump()
    assert.truthy(text:find("  random:\n    seed: 3\n    state: %x+\n"))
    local back = assert(keel.parse(text))
    assert.are.equal(3, back.seed)
    assert.are.equal(w:random(1, 1 << 40), back:random(1, 1 << 40))
    -- a world that never drew nor was seeded writes no settings.random
    assert.is_nil(keel.world("E"):dump():find("random:"))
  end)

  it("refuses a malformed settings.random", function()
    local text = keel.world("D"):dump():gsub("settings:\n", "settings:\n  random:\n    seed: 1\n    state: xyz\n")
    local w, err = keel.parse(text)
    assert.is_nil(w)
    assert.are.equal("InvalidArgument", err.code)
  end)

  it("is carried by play mode (stop puts it back) and by save games", function()
    local w = keel.world("P")
    w.seed = 11
    w:play()
    local during = w:random(1, 1 << 40)
    w:stop()
    assert.are.equal(during, w:random(1, 1 << 40))

    local text = w:dump()
    local base_w = assert(keel.parse(text))
    local base = keel.persist.baseline(base_w)
    base_w:random()
    local expect = base_w.seed
    local slot = dir .. "/slot.sav"
    assert(keel.persist.save(base_w, base, slot))
    local after = base_w:random(1, 1 << 40)
    local fresh = assert(keel.parse(text))
    assert(keel.persist.load(fresh, slot))
    assert.are.equal(expect, fresh.seed)
    assert.are.equal(after, fresh:random(1, 1 << 40))
  end)
end)

describe("keel.record and keel.replay", function()
  it("re-simulates a session exactly, verifying every frame", function()
    local k = walker_kind()
    local w = keel.world("Walk")
    w:spawn{ name = "A", components = { k } }
    local path, dumps = record(w, 120)
    local rp = assert(keel.replay(path))
    assert.are.equal(120, rp.frames)
    assert.are.equal(0, rp.frame)
    assert.are.equal(120, rp:step(120))
    assert.are.equal(dumps[120], rp.world:dump())
    assert.is_nil(rp.diverged)
    rp:close()
  end)

  it("records every input from outside the step, in order, as commands", function()
    local k = walker_kind()
    local w = keel.world("Inputs")
    local a = w:spawn{ name = "A", components = { "core:transform", k } }
    local b = w:spawn("B")
    local path, dumps = record(w, 40, function(i)
      if i == 2 then a:get("core:transform").position = { 1, 2, 3 } end        -- a field write
      if i == 3 then w:spawn{ name = "C", components = { k } } end              -- a spawn
      if i == 4 then b:add("core:transform") end                                 -- an add
      if i == 5 then b.parent = a end                                            -- a reparent
      if i == 6 then b.name = "B2" end                                           -- a rename
      if i == 7 then a.enabled = false end                                       -- an enable
      if i == 8 then a.enabled = true; a:get(k).enabled = false end              -- a component's enable
      if i == 9 then a:get(k).enabled = true; b:remove("core:transform") end     -- a remove
      if i == 10 then w:find("C"):destroy() end                                  -- a destroy
      if i == 11 then w.seed = 99 end                                            -- a seed
      if i == 12 then w:random() end                                             -- a draw from outside
      if i == 13 then a:duplicate() end                                          -- a duplicate
      if i == 14 then a:get(k):set{ x = 5, n = 2 } end                           -- several fields
    end)
    local rp = assert(keel.replay(path))
    for f = 1, 40 do
      rp:step()
      assert.are.equal(dumps[f], rp.world:dump(), "frame " .. f)
    end
  end)

  it("makes the UUIDs of entities hooks and timers spawn again identically", function()
    local k = key("spawner")
    keel.kind{ key = k, version = 1, multiplicity = "one", fields = { { "made", "int" } },
      update = function(self, e)
        if self.made < 5 then
          self.made = self.made + 1
          e.world:spawn("child " .. self.made)
        end
      end }
    local w = keel.world("Spawns")
    w:spawn{ name = "S", components = { k } }
    local path, dumps = record(w, 10)
    local rp = assert(keel.replay(path))
    rp:step(10)
    assert.are.equal(dumps[10], rp.world:dump())
  end)

  it("seeks from the nearest keyframe, back and forth, with timers pending at keyframes", function()
    local k = walker_kind()
    local t = key("ticker")
    keel.kind{ key = t, version = 1, multiplicity = "one", fields = { { "ticks", "int" } },
      start = function(self, e)
        e:every(0.1, function(ent) local c = ent:get(t); c.ticks = c.ticks + 1 end)
      end }
    local w = keel.world("Seek")
    w:spawn{ name = "A", components = { k, t } }
    local path, dumps = record(w, 100, nil, { keyframe_every = 25 })
    local rp = assert(keel.replay(path))
    assert.are.same({ 0, 25, 50, 75, 100 }, rp.keyframes)
    for _, f in ipairs({ 60, 10, 99, 25, 0, 100, 37 }) do
      assert.are.equal(f, rp:seek(f))
      if f > 0 then assert.are.equal(dumps[f], rp.world:dump(), "frame " .. f) end
    end
    H.fails("InvalidArgument", rp.seek, rp, 101)
    H.fails("InvalidArgument", rp.step, rp, 100) -- at 37: past the end
  end)

  it("keeps the replay's world read-only, and branches a live world at a frame", function()
    local k = walker_kind()
    local w = keel.world("Branch")
    w:spawn{ name = "A", components = { k } }
    local path, dumps = record(w, 30)
    local rp = assert(keel.replay(path))
    rp:seek(12)
    local rw = rp.world
    local a = rw:find("A")
    H.fails("InvalidOperation", function() a:get(k).x = 1 end)
    H.fails("InvalidOperation", rw.spawn, rw, "X")
    H.fails("InvalidOperation", a.destroy, a)
    H.fails("InvalidOperation", rw.step, rw, 1 / 60)
    H.fails("InvalidOperation", function() rw.seed = 1 end)
    local live = rp:branch()
    assert.are.equal(rw, live)
    assert.are_not.equal(live, rp.world)
    assert.are.equal(12, rp.frame)
    assert.are.equal(dumps[12], rp.world:dump())
    live:find("A"):get(k).x = 100 -- take control from here
    live:step(1 / 60)
    assert.are.equal(100 + 1 / 60, live:find("A"):get(k).x)
    rp:step(18) -- the replay goes on in its own world
    assert.are.equal(dumps[30], rp.world:dump())
  end)

  it("raises Diverged at the frame a non-deterministic kind differs, naming the component", function()
    local k = key("clocky")
    keel.kind{ key = k, version = 1, multiplicity = "one", fields = { { "t", "float" }, { "v", "float" } },
      update = function(self, e, dt)
        self.t = self.t + dt
        if self.t > 0.25 then self.v = os.clock() end -- the game's own business: not replayable
      end }
    local w = keel.world("Clock")
    local e = w:spawn{ name = "C", components = { k } }
    local path = record(w, 60, nil, { keyframe_every = 20 })
    local rp = assert(keel.replay(path))
    local err = H.fails("Diverged", rp.step, rp, 60)
    local at = rp.diverged
    assert.are.equal(16, at) -- the first frame whose t passes 0.25
    assert.are.equal(at, rp.frame) -- the replay stays at the frame that failed
    assert.truthy(err.message:find("frame 16", 1, true))
    local d = rp.differences[1]
    assert.are.same({ e.uuid, k, 0, "v" }, { d.entity, d.kind, d.slot, d.field })
    assert.is_string(d.recorded)
    assert.is_string(d.replayed)
    assert.are.equal(#rp.differences + 1, #err.diagnostics)
    assert.are.equal("Diverged", err.diagnostics[2].code)
    -- never past it silently
    H.fails("Diverged", rp.step, rp, 1)
    rp:seek(5)
    assert.are.equal(5, rp.frame)
  end)

  it("refuses kinds that changed since the recording, and runs them when allowed", function()
    local k = key("changing")
    keel.kind{ key = k, version = 1, multiplicity = "one", fields = { { "x", "float" } },
      update = function(self, e, dt) self.x = self.x + dt end }
    local w = keel.world("Kinds")
    w:spawn{ name = "A", components = { k } }
    local path = record(w, 20)
    keel.kind{ key = k, version = 1, multiplicity = "one", fields = { { "x", "float" }, { "y", "float" } },
      update = function(self, e, dt) self.x = self.x + dt; if self.x > 0.1 then self.y = 1 end end }
    local rp, err = keel.replay(path)
    assert.is_nil(rp)
    assert.are.equal("InvalidOperation", err.code)
    local named = false
    for _, d in ipairs(err.diagnostics) do named = named or d.message:find(k, 1, true) ~= nil end
    assert.is_true(named, tostring(err))
    rp = assert(keel.replay(path, { allow_changed_kinds = true }))
    H.fails("Diverged", rp.step, rp, 20)
    assert.is_true(rp.diverged >= 1)
  end)

  it("replays a recording killed mid-write to its last whole frame and says so", function()
    local k = walker_kind()
    local w = keel.world("Kill")
    w:spawn{ name = "A", components = { k } }
    local path, dumps = record(w, 50, nil, { keyframe_every = 1000 })
    local bytes = H.slurp(path)
    -- each frame is one chunk: cut the file 7 bytes into the 41st frame's
    local rp = assert(keel.replay(path))
    rp:close()
    local cut = bytes:sub(1, #bytes - 1)
    -- the last chunk is the closing keyframe: find the start of frame 41 by replaying lengths
    local pos, frames = 9, 0
    while pos < #bytes do
      local tag = bytes:sub(pos, pos)
      local len = string.unpack("<I4", bytes, pos + 1)
      if tag == "F" then
        frames = frames + 1
        if frames == 41 then cut = bytes:sub(1, pos + 6) break end
      end
      pos = pos + 9 + len
    end
    H.spit(path, cut)
    rp = assert(keel.replay(path))
    assert.is_true(rp.truncated)
    assert.are.equal(40, rp.frames)
    rp:step(40)
    assert.are.equal(dumps[40], rp.world:dump())
  end)

  it("refuses a flipped byte with its offset", function()
    local k = walker_kind()
    local w = keel.world("Flip")
    w:spawn{ name = "A", components = { k } }
    local path = record(w, 10)
    local bytes = H.slurp(path)
    local at = #bytes // 2
    H.spit(path, bytes:sub(1, at - 1) .. string.char(bytes:byte(at) ~ 0x10) .. bytes:sub(at + 1))
    local rp, err = keel.replay(path)
    assert.is_nil(rp)
    assert.are.equal("ParseError", err.code)
    assert.truthy(err.message:find("offset %d+"), err.message)
    local off = tonumber(err.message:match("offset (%d+)"))
    assert.is_true(off < at)
    H.spit(path, "not a recording")
    rp, err = keel.replay(path)
    assert.is_nil(rp)
    assert.are.equal("ParseError", err.code)
    rp, err = keel.replay(dir .. "/none.keelrec")
    assert.are.equal("IOError", err.code)
  end)

  it("refuses to start with timers pending, on a replay's world, or twice", function()
    local w = keel.world("Busy")
    w:after(1, function() end)
    H.fails("InvalidOperation", keel.record, w, dir .. "/x.keelrec")
    local w2 = keel.world("Twice")
    local rec = assert(keel.record(w2, dir .. "/y.keelrec"))
    H.fails("InvalidOperation", keel.record, w2, dir .. "/z.keelrec")
    rec:close()
    local rp = assert(keel.replay(dir .. "/y.keelrec"))
    H.fails("InvalidOperation", keel.record, rp.world, dir .. "/z.keelrec")
    H.fails("InvalidArgument", keel.record, w2, dir .. "/z.keelrec", { keyframe_every = 0 })
  end)

  it("closes with its world, the file whole to its last frame", function()
    local k = walker_kind()
    local w = keel.world("Closing")
    w:spawn{ name = "A", components = { k } }
    local rec = assert(keel.record(w, dir .. "/c.keelrec"))
    w:run(5)
    w:close()
    assert.is_true(rec.closed)
    assert.are.equal(5, rec.frames)
    local rp = assert(keel.replay(dir .. "/c.keelrec"))
    assert.are.equal(5, rp.frames)
    rp:step(5)
  end)
end)

describe("replay.* channel methods", function()
  it("show, seek, step and branch a served replay", function()
    local channel = require "keel.channel"
    local k = walker_kind()
    local w = keel.world("Served")
    w:spawn{ name = "A", components = { k } }
    local path, dumps = record(w, 30, nil, { keyframe_every = 10 })
    local rp = assert(keel.replay(path))
    local ch = channel.new(rp.world, { paused = true })
    ch.replay = rp
    local info = ch:call("replay.info", {})
    assert.are.same({ 30, 0 }, { info.frames, info.frame })
    assert.are.same({ 0, 10, 20, 30 }, { table.unpack(info.keyframes) })
    assert.are.equal(12, ch:call("replay.seek", { frame = 12 }).frame)
    assert.are.equal(dumps[12], rp.world:dump())
    assert.are.equal(15, ch:call("replay.step", { frames = 3 }).frame)
    H.fails("InvalidOperation", ch.call, ch, "component.set", { object = rp.world:find("A").uuid, kind = k, fields = { x = 1 } })
    local b = ch:call("replay.branch", {})
    assert.are.equal(15, b.frame)
    local a = ch.world:find("A")
    ch:call("component.set", { object = a.uuid, kind = k, fields = { x = 1 } })
    assert.are.equal(1, ch.world:find("A"):get(k).x)
    H.fails("InvalidOperation", ch.call, ch, "replay.info", {})
  end)
end)

describe("keel run --record and keel replay", function()
  local bin = H.find_keel()
  it("records the demo and replays it verified", function()
    local rec = dir .. "/demo.keelrec"
    local code, out, err = H.run_keel(bin, "run --frames 120 --record " .. H.shell_quote(rec))
    assert.are.equal(0, code, err)
    assert.truthy(out:find("recorded 120 frames to", 1, true), out)
    code, out, err = H.run_keel(bin, "replay " .. H.shell_quote(rec) .. " --verify")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("frame 120 of 120", 1, true), out)
    assert.truthy(out:find("replayed to frame 120, state hash %x+"), out)
    code, out = H.run_keel(bin, "replay " .. H.shell_quote(rec) .. " --to 60")
    assert.are.equal(0, code)
    assert.truthy(out:find("replayed to frame 60,", 1, true), out)
  end)

  it("serves a recording to an agent as MCP tools (keel mcp FILE.keelrec)", function()
    local rec = dir .. "/m.keelrec"
    assert.are.equal(0, (H.run_keel(bin, "run --frames 60 --record " .. H.shell_quote(rec))))
    local input = table.concat({
      '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
      '{"jsonrpc":"2.0","method":"notifications/initialized"}',
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"replay_seek","arguments":{"frame":30}}}',
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"replay_info"}}',
      '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"replay_branch"}}',
      '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"component_set","arguments":{"object":"Player","kind":"game:health","fields":{"value":5}}}}',
    }, "\n") .. "\n"
    local code, out, err = H.run_keel(bin, "mcp " .. H.shell_quote(rec), input)
    assert.are.equal(0, code, err)
    local json = require "keel.json"
    local answers = {}
    for line in out:gmatch("[^\n]+") do local m = json.decode(line); answers[m.id] = m end
    assert.is_false(answers[2].result.isError)
    assert.are.equal(30, json.decode(answers[3].result.content[1].text).frame)
    assert.is_true(json.decode(answers[4].result.content[1].text).live)
    assert.is_false(answers[5].result.isError, out)
  end)

  it("exits 1 with Diverged, and 2 on a missing file or bad usage", function()
    local kinds = dir .. "/kinds"
    os.execute("mkdir -p " .. H.shell_quote(kinds))
    H.spit(kinds .. "/clocky.lua", [[
local keel = require "keel"
keel.kind{ key = "cli:clocky", version = 1, multiplicity = "one", fields = { { "t", "float" }, { "v", "float" } },
  update = function(self, e, dt) self.t = self.t + dt; if self.t > 0.5 then self.v = os.clock() end end }
]])
    H.spit(dir .. "/s.yaml", [[
keel: 1
scene:
  uuid: 5a5a5a5a-0000-4000-8000-000000000001
  name: Clock
root: []
entities:
  - uuid: 5a5a5a5a-0000-4000-8000-000000000002
    name: C
    components:
      - kind: cli:clocky
        version: 1
        slot: 0
        body: {}
]])
    local rec = dir .. "/c.keelrec"
    local code, _, err = H.run_keel(bin, "run s.yaml --kinds kinds --frames 60 --record c.keelrec", nil, dir)
    assert.are.equal(0, code, err)
    code, _, err = H.run_keel(bin, "replay c.keelrec --kinds kinds --verify", nil, dir)
    assert.are.equal(1, code)
    assert.truthy(err:find("Diverged", 1, true), err)
    assert.truthy(err:find("cli:clocky[0].v", 1, true), err)
    code = H.run_keel(bin, "replay " .. H.shell_quote(dir .. "/none.keelrec"))
    assert.are.equal(2, code)
    code = H.run_keel(bin, "replay " .. H.shell_quote(rec) .. " --to x")
    assert.are.equal(2, code)
    code = H.run_keel(bin, "run --keyframe-every 5")
    assert.are.equal(2, code)
  end)
end)
