-- replay_inputs_spec.lua — design/replay.md's inputs beyond commands: messages sent from outside
-- a step, timers, channel edits, play's stop, replicated changes on a client; what a keyframe
-- holds pending; a Lua kind's source file in the header.
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("rpin")

local dir
before_each(function() dir = H.tmpdir() end)
after_each(function() H.rmrf(dir) end)

-- Records `frames` frames of w into the spec's folder (H.record).
local function record(w, frames, between, opts) return H.record(w, dir .. "/s.keelrec", frames, between, opts) end

-- Replays path frame by frame, each frame's world as recorded.
local function replays_alike(path, dumps, opts)
  local rp = assert(keel.replay(path, opts))
  assert.are.equal(#dumps, rp.frames)
  for f = 1, #dumps do
    rp:step()
    assert.are.equal(dumps[f], rp.world:dump(), "frame " .. f)
  end
  return rp
end

-- A kind that sums what its messages carry: the replay must deliver the same data in the same order.
local function inbox_kind()
  local k = key("inbox")
  keel.kind{ key = k, version = 1, multiplicity = "one",
    fields = { { "sum", "int" }, { "log", "string" }, { "from", "entity" } },
    on_message = function(self, e, name, data, sender)
      local part = name
      if type(data) == "table" then
        self.sum = self.sum + (data.amount or 0)
        if data.by then self.from = data.by end
        if data.list then part = part .. ":" .. table.concat(data.list, ",") end
        if data.flag ~= nil then part = part .. ":" .. tostring(data.flag) end
        if data.x then part = part .. ":" .. string.format("%.3f", data.x) end
      elseif data ~= nil then
        part = part .. ":" .. tostring(data)
      end
      if sender then part = part .. "<" .. sender.name end
      self.log = self.log .. part .. ";"
    end }
  return k
end

describe("recording messages", function()
  it("records e:send and w:broadcast from outside a step, data and order, as inputs", function()
    local k = inbox_kind()
    local w = keel.world("Mail")
    local a = w:spawn{ name = "A", components = { k } }
    local b = w:spawn{ name = "B", components = { k } }
    local path, dumps = record(w, 12, function(i)
      if i == 2 then a:send("hit", { amount = 3, by = b }) end
      if i == 3 then w:broadcast("tick", { amount = 1, list = { "x", "y" }, flag = false, x = 0.25 }) end
      if i == 4 then b:send("plain", "text"); b:send("num", 42); a:send("none") end
      if i == 5 then a:send("first", { amount = 10 }); w:broadcast("second", { amount = 100 }) end
      if i == 7 then
        local c = w:spawn{ name = "C", components = { k } } -- spawned and addressed in one frame
        c:send("welcome", { amount = 5, by = a })
      end
    end)
    local rp = replays_alike(path, dumps)
    local ra = rp.world:find("A"):get(k)
    assert.are.equal(3 + 1 + 10 + 100, ra.sum)
    assert.matches("hit;tick:x,y:false:0.250;none;first;second;", ra.log, 1, true)
    assert.are.equal(rp.world:find("B"), ra.from)
    assert.matches("plain:text;num:42;", rp.world:find("B"):get(k).log, 1, true)
    assert.are.equal(rp.world:find("A"), rp.world:find("C"):get(k).from)
  end)

  it("starts with messages pending and restores them when seeking back to keyframe 0", function()
    local k = inbox_kind()
    local w = keel.world("Pending")
    local a = w:spawn{ name = "A", components = { k } }
    a:send("early", { amount = 7 })
    w:broadcast("all", { amount = 1, list = { "p" } })
    local path, dumps = record(w, 30, nil, { keyframe_every = 10 })
    local rp = replays_alike(path, dumps)
    assert.are.equal(8, rp.world:find("A"):get(k).sum)
    assert.are.equal(0, rp:seek(0))
    assert.are.equal(1, rp:step())
    assert.are.equal(dumps[1], rp.world:dump())
    assert.are.equal(25, rp:seek(25))
    assert.are.equal(dumps[25], rp.world:dump())
  end)

  it("keeps a message sent after the last step in the closing keyframe", function()
    local k = inbox_kind()
    local w = keel.world("Closing")
    local a = w:spawn{ name = "A", components = { k } }
    local path = dir .. "/c.keelrec"
    local rec = assert(keel.record(w, path, { keyframe_every = 1000 }))
    w:step(1 / 60)
    a:send("late", { amount = 2 })
    assert.is_true(rec:close())
    local rp = assert(keel.replay(path))
    assert.are.same({ 0, 1 }, rp.keyframes)
    assert.are.equal(1, rp:seek(1)) -- restored from the closing keyframe
    local b = rp:branch() -- the live world at frame 1: the message still queued
    b:step(1 / 60)
    assert.are.equal(2, b:find("A"):get(k).sum)
  end)
end)

describe("recording timers", function()
  it("refuses a timer made from outside a step while recording, and keeps those hooks make", function()
    local t = key("ticker")
    keel.kind{ key = t, version = 1, multiplicity = "one", fields = { { "ticks", "int" } },
      start = function(self, e)
        e:every(0.05, function(ent) local c = ent:get(t); c.ticks = c.ticks + 1 end)
      end }
    local w = keel.world("Timers")
    local rec = assert(keel.record(w, dir .. "/t.keelrec"))
    local err = H.fails("InvalidOperation", w.after, w, 1, function() end)
    assert.matches("recording", tostring(err.message or err))
    local e = w:spawn{ name = "T", components = { t } } -- its start hook makes the timer: replayed
    H.fails("InvalidOperation", e.every, e, 1, function() end)
    for _ = 1, 30 do w:step(1 / 60) end
    local want = w:dump()
    assert.is_true(rec:close())
    w:after(1, function() end) -- not recording any more
    local rp = assert(keel.replay(dir .. "/t.keelrec"))
    rp:step(30)
    assert.are.equal(want, rp.world:dump())
    assert.is_true(rp.world:find("T"):get(t).ticks > 5)
  end)

  it("records timers whose action is a message, and their cancels, made from outside a step", function()
    local k = inbox_kind()
    local w = keel.world("MsgTimers")
    local a = w:spawn{ name = "A", components = { k } }
    local b = w:spawn{ name = "B", components = { k } }
    local early = w:every(0.2, "early", { amount = 1 }) -- pending when the recording starts
    local timers = {}
    local path, dumps = record(w, 90, function(i)
      if i == 2 then timers.tick = w:every(0.1, "tick", { amount = 2, list = { "t" } }) end
      if i == 3 then timers.hit = a:after(0.3, "hit", { amount = 50, by = b }) end
      if i == 4 then timers.poke = b:every(0.05, "poke") end
      if i == 30 then assert.is_true(timers.tick:cancel()) end
      if i == 40 then assert.is_true(early:cancel()) end
      if i == 50 then assert.is_true(timers.poke:cancel()) end
    end, { keyframe_every = 20 })
    local live = w:find("A"):get(k)
    assert.matches("early;", live.log, 1, true)
    assert.matches("tick:t;", live.log, 1, true)
    assert.matches("hit;", live.log, 1, true)
    assert.are.equal(b, live.from)
    local rp = replays_alike(path, dumps)
    assert.are.equal(live.sum, rp.world:find("A"):get(k).sum)
    assert.are.equal(w:find("B"):get(k).log, rp.world:find("B"):get(k).log)
    -- keyframes with only message timers pending are places a seek restores to
    for _, f in ipairs({ 45, 20, 85, 60, 1, 0, 3 }) do
      assert.are.equal(f, rp:seek(f))
      if f > 0 then assert.are.equal(dumps[f], rp.world:dump(), "frame " .. f) end
    end
    H.fails("InvalidArgument", w.after, w, 1, "") -- a message needs a name
    H.fails("InvalidArgument", w.after, w, 1, "x", { f = print }) -- and plain data
  end)

  it("records the cancel of a timer a hook made, by its place among the live timers", function()
    local t = key("beeper")
    local handles = {}
    keel.kind{ key = t, version = 1, multiplicity = "one", fields = { { "beeps", "int" } },
      start = function(self, e)
        handles[e.name] = e:every(0.1, function(ent) local c = ent:get(t); c.beeps = c.beeps + 1 end)
      end }
    local w = keel.world("HookTimers")
    local path, dumps = record(w, 60, function(i, wd)
      if i <= 3 then wd:spawn{ name = "B" .. i, components = { t } } end
      if i == 20 then assert.is_true(handles.B2:cancel()) end
    end, { keyframe_every = 25 })
    assert.is_true(w:find("B2"):get(t).beeps < w:find("B1"):get(t).beeps)
    assert.is_true(w:find("B3"):get(t).beeps > w:find("B2"):get(t).beeps)
    local rp = replays_alike(path, dumps)
    assert.are.equal(30, rp:seek(30)) -- keyframes with a function's timer pending: re-simulated
    assert.are.equal(dumps[30], rp.world:dump())
  end)

  it("refuses to start while a timer holding a function is pending, saying so", function()
    local w = keel.world("Busy")
    w:after(1, function() end)
    local ok, err = pcall(keel.record, w, dir .. "/x.keelrec")
    assert.is_false(ok)
    assert.are.equal("InvalidOperation", err.code)
    assert.matches("timers", err.message, 1, true)
  end)
end)

describe("timers whose action is a message", function()
  it("broadcast (a world's) or send to their owner (an entity's) each time they fire", function()
    local k = inbox_kind()
    local w = keel.world("MT")
    local a = w:spawn{ name = "A", components = { k } }
    local b = w:spawn{ name = "B", components = { k } }
    local once = w:after(0.1, "all", { amount = 1, list = { "w" } })
    local rep = b:every(0.1, "mine", { amount = 10 })
    assert.is_true(once.remaining > 0)
    for _ = 1, 7 do w:step(1 / 60) end -- 0.117 s: each fired once
    assert.is_nil(once.remaining)
    assert.are.equal("all:w;", a:get(k).log)
    assert.are.equal("all:w;mine;", b:get(k).log)
    for _ = 1, 6 do w:step(1 / 60) end
    assert.are.equal(1, a:get(k).sum)
    assert.are.equal(21, b:get(k).sum)
    assert.is_true(rep:cancel())
    for _ = 1, 12 do w:step(1 / 60) end
    assert.are.equal(21, b:get(k).sum)
    local gone = b:every(0.05, "mine", { amount = 1 })
    b:destroy()
    w:step(0.1)
    assert.is_nil(gone.remaining) -- ended with its owner
  end)
end)

describe("recording other inputs", function()
  it("records channel edits as inputs", function()
    local channel = require "keel.channel"
    local k = key("mover")
    keel.kind{ key = k, version = 1, multiplicity = "one", fields = { { "x", "float" }, { "v", "float" } },
      update = function(self, e, dt) self.x = self.x + self.v * dt end }
    local w = keel.world("Edits")
    w:spawn{ name = "A", components = { k, "core:transform" } }
    local ch = channel.new(w)
    local path, dumps = record(w, 10, function(i)
      if i == 2 then ch:call("component.set", { object = "A", kind = k, fields = { v = 3 } }) end
      if i == 4 then ch:call("object.rename", { object = "A", name = "A2" }) end
      if i == 5 then ch:call("object.spawn", { name = "N" }) end
      if i == 6 then ch:call("history.undo") end
    end)
    replays_alike(path, dumps)
  end)

  it("records play's stop as the world it leaves", function()
    local k = key("counter")
    keel.kind{ key = k, version = 1, multiplicity = "one", fields = { { "n", "int" } },
      update = function(self, e) self.n = self.n + 1; self.n = self.n + e.world:random(0, 1) end }
    local w = keel.world("Play")
    w:spawn{ name = "A", components = { k } }
    local path, dumps = record(w, 20, function(i, wd)
      if i == 3 then wd:play() end
      if i == 5 then wd:spawn{ name = "Temp", components = { k } } end
      if i == 9 then wd:stop() end
      if i == 12 then wd:find("A"):get(k).n = 100 end
    end)
    local rp = replays_alike(path, dumps)
    assert.is_nil(rp.world:find("Temp"))
  end)

  it("records replicated changes on a client, in the order they came", function()
    local ship = key("ship")
    keel.kind{ key = ship, version = 1, multiplicity = "one", sync = { interval = 1 },
      fields = { { "hp", "int", sync = true, default = 10 }, { "seen", "int" } },
      late_update = function(self) self.seen = self.hp end }
    local w = keel.world("Host")
    local s = w:spawn{ name = "S", components = { { ship, hp = 5 } } }
    local made, host = pcall(keel.net.host, w, { port = 0 })
    if not made and type(host) == "table" and host.code == "Unsupported" then return end -- no replication built
    assert(made, tostring(host))
    local cl = keel.net.connect("127.0.0.1", host:port(), { name = "p" })
    for _ = 1, 200 do host:service(); cl:service(); if cl.world:find(s.uuid) then break end end
    assert.is_not_nil(cl.world:find(s.uuid))
    local path, dumps = record(cl.world, 40, function(i)
      if i % 5 == 0 then s:get(ship).hp = i end
      if i == 12 then w:spawn{ name = "Late", components = { { ship, hp = 1 } } } end
      if i == 20 then w:find("Late"):destroy() end
      w:step(1 / 60)
      host:service()
      if i % 7 == 0 then cl:service() end -- between steps too: inputs before the step
    end)
    local changed = false
    for f = 2, 40 do changed = changed or dumps[f] ~= dumps[f - 1] end
    assert.is_true(changed, "the client saw the host's changes")
    local rp = replays_alike(path, dumps)
    H.fails("InvalidOperation", function() rp:branch():find("S"):get(ship).hp = 1 end) -- still a mirror
    cl:close()
    host:close()
  end)
end)

describe("a Lua kind's source file", function()
  it("is hashed in the header: a changed file is a changed kind, refused unless allowed", function()
    local k = key("sourced")
    local file = dir .. "/sourced.lua"
    local function declare(step)
      H.spit(file, ([[
local keel = require "keel"
keel.kind{ key = %q, version = 1, multiplicity = "one", fields = { { "x", "float" } },
  update = function(self, e, dt) self.x = self.x + %s end }
]]):format(k, step))
      dofile(file)
    end
    declare("dt")
    local w = keel.world("Src")
    w:spawn{ name = "A", components = { k } }
    local path = dir .. "/src.keelrec"
    local rec = assert(keel.record(w, path))
    w:run(20)
    rec:close()
    declare("dt") -- the same text again: the same kind
    local rp = assert(keel.replay(path))
    rp:step(20)
    rp:close()
    declare("dt * 2") -- same version and fields, other code
    local none, err = keel.replay(path)
    assert.is_nil(none)
    assert.are.equal("InvalidOperation", err.code)
    local named = false
    for _, d in ipairs(err.diagnostics) do
      named = named or (d.message:find(k, 1, true) ~= nil and d.message:find("source", 1, true) ~= nil)
    end
    assert.is_true(named, tostring(err))
    rp = assert(keel.replay(path, { allow_changed_kinds = true }))
    H.fails("Diverged", rp.step, rp, 20)
    assert.are.equal(1, rp.diverged) -- the first frame differs, and it is named
    local d = rp.differences[1]
    assert.are.equal(k, d.kind)
    assert.are.equal("x", d.field)
  end)
end)
