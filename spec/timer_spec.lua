-- timer_spec.lua — w:after/w:every, e:after/e:every, t:cancel(), t.remaining (gameplay.md, "Timers").
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("timer")

local LOG = {}
local function note(s) LOG[#LOG + 1] = s end

local TICK = key("tick")
keel.kind{
  key = TICK, fields = { { "n", "int" } },
  start = function(self, e) note("start") end,
  fixed_update = function(self, e, dt) note("fixed") end,
  update = function(self, e, dt) note("update") end,
  late_update = function(self, e, dt) note("late") end,
}
local HP = key("hp")
keel.kind{ key = HP, fields = { { "hp", "int", default = 10 } } }

local function world()
  LOG = {}
  return keel.world("T")
end

describe("timers", function()
  describe("w:after()", function()
    it("fires once, after that many seconds of world time (the sum of the step's dt), with the world", function()
      local w = world()
      local got
      local t = w:after(0.5, function(w2) got = w2; note("a") end)
      assert.are.equal("keel.Timer", getmetatable(t).__name)
      w:step(0.25)
      assert.are.same({}, LOG)
      w:step(0.25)
      assert.are.same({ "a" }, LOG)
      assert.are.equal(w, got)
      w:step(1)
      assert.are.same({ "a" }, LOG)
      assert.is_nil(t.remaining)
    end)

    it("fires due timers in due-time order, ties in creation order", function()
      local w = world()
      w:after(0.3, function() note("c") end)
      w:after(0.1, function() note("a") end)
      w:every(0.3, function() note("d") end)
      w:after(0.2, function() note("b") end)
      w:spawn("E"):after(0.3, function() note("e") end)
      w:step(1)
      assert.are.same({ "a", "b", "c", "d", "e" }, LOG)
    end)

    it("fires at the start of the update phase, after fixed_update, before any update hook", function()
      local w = world()
      w:spawn("Ticker"):add(TICK)
      w:after(0, function() note("timer") end)
      w:step(2 / 60 + 1e-9)
      assert.are.same({ "start", "fixed", "fixed", "timer", "update", "late" }, LOG)
    end)

    it("made while timers fire, waits for the next step even when already due", function()
      local w = world()
      w:after(0, function(w2) note("outer"); w2:after(0, function() note("inner") end) end)
      w:step(0.1)
      assert.are.same({ "outer" }, LOG)
      w:step(0.1)
      assert.are.same({ "outer", "inner" }, LOG)
    end)
  end)

  describe("w:every() and e:every()", function()
    it("repeat, at most once per step however many periods the step passes", function()
      local w = world()
      local e = w:spawn("E")
      local got
      local t = e:every(0.1, function(e2) got = e2; note("x") end)
      w:step(1.05)
      assert.are.same({ "x" }, LOG)
      assert.are.equal(e, got)
      assert.is_true(math.abs(t.remaining - 0.05) < 1e-9)
      w:step(0.05)
      w:step(0.1)
      assert.are.same({ "x", "x", "x" }, LOG)
      local n = 0
      w:every(1, function() n = n + 1 end)
      for _ = 1, 10 do w:step(0.5) end
      assert.are.equal(5, n)
    end)
  end)

  describe("t:cancel() and t.remaining", function()
    it("cancel stops the timer; remaining counts down and is nil once it ended", function()
      local w = world()
      local t = w:after(1, function() note("a") end)
      assert.are.equal(1, t.remaining)
      w:step(0.25)
      assert.are.equal(0.75, t.remaining)
      assert.is_true(t:cancel())
      assert.is_nil(t.remaining)
      assert.is_false(t:cancel())
      w:step(2)
      assert.are.same({}, LOG)
      assert.matches("ended", tostring(t))
    end)

    it("a repeating timer may cancel itself from its own callback", function()
      local w = world()
      local t
      t = w:every(0.1, function() note("x"); t:cancel() end)
      w:step(0.1)
      w:step(0.1)
      assert.are.same({ "x" }, LOG)
    end)

    it("a timer cancelled by an earlier one in the same step does not fire", function()
      local w = world()
      local b
      w:after(0.1, function() b:cancel() end)
      b = w:after(0.2, function() note("b") end)
      w:step(1)
      assert.are.same({}, LOG)
    end)
  end)

  describe("owned timers", function()
    it("are cancelled when the entity is destroyed", function()
      local w = world()
      local e = w:spawn("E")
      local t = e:every(0.1, function() note("x") end)
      w:step(0.1)
      e:destroy()
      assert.is_nil(t.remaining)
      w:step(1)
      assert.are.same({ "x" }, LOG)
    end)

    it("are cancelled when a hook destroys the entity, and when it is transferred out of the world", function()
      local w = world()
      local e = w:spawn("E")
      e:after(0.5, function() note("e") end)
      local k = key("killer")
      keel.kind{ key = k, update = function(self, me) me.world:find("E"):destroy() end }
      w:spawn("Killer"):add(k)
      w:step(0.1)
      w:step(1)
      local m = w:spawn("Moving")
      local t = m:after(0.5, function() note("m") end)
      w:transfer(m, keel.world("B"))
      w:step(1)
      assert.is_nil(t.remaining)
      assert.are.same({}, LOG)
    end)

    it("are cancelled when the world is closed", function()
      local w = world()
      local t = w:spawn("E"):every(1, function() end)
      local u = w:after(1, function() end)
      w:close()
      assert.is_nil(t.remaining)
      assert.is_nil(u.remaining)
      assert.is_false(u:cancel())
    end)
  end)

  describe("each call is a transaction", function()
    it("an error rolls back its writes and structural changes, is recorded once, and the step goes on", function()
      local w = world()
      local e = w:spawn("E")
      local c = e:add(HP)
      w:spawn("Ticker"):add(TICK)
      local t = w:every(0.1, function(w2)
        c.hp = 99
        w2:spawn("Ghost")
        e:destroy()
        error("boom")
      end)
      local after_it = 0
      w:after(0.1, function() after_it = after_it + 1 end)
      w:step(0.1)
      w:step(0.1)
      assert.are.equal(10, c.hp)
      assert.is_true(e:alive())
      assert.is_nil(w:find("Ghost"))
      assert.are.equal(1, after_it)
      local n = 0
      for _, s in ipairs(LOG) do if s == "update" then n = n + 1 end end
      assert.are.equal(2, n)
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.are.equal(t.id, errs[1].timer)
      assert.are.equal("", errs[1].kind)
      assert.are.equal(w.root.uuid, errs[1].entity)
      assert.matches("timer: .*boom", errs[1].message)
      assert.is_nil(t.remaining) -- a failed timer ends, as a faulted component runs no more
    end)

    it("an owned timer's error names its entity", function()
      local w = world()
      local e = w:spawn("E")
      local t = e:after(0, function() error({ code = "NotFound", message = "nope" }) end)
      w:step(0)
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.are.equal(e.uuid, errs[1].entity)
      assert.are.equal(t.id, errs[1].timer)
      assert.matches("nope", errs[1].message)
    end)
  end)

  describe("runtime state", function()
    it("is not written to scene dumps or save games", function()
      local w = world()
      w:spawn("E"):add(HP)
      local base = keel.persist.baseline(w)
      local before = w:dump()
      local dir = H.tmpdir()
      assert.is_true(w:save(dir .. "/before.yaml"))
      w:after(1, function() note("a") end)
      w:find("E"):every(0.5, function() note("e") end)
      assert.are.equal(before, w:dump())
      local path = dir .. "/slot.sav"
      assert.is_true(keel.persist.save(w, base, path))
      local scene = dir .. "/scene.yaml"
      assert.is_true(w:save(scene))
      assert.are.equal(H.slurp(dir .. "/before.yaml"), H.slurp(scene))
      local w2 = assert(keel.load(dir .. "/before.yaml"))
      assert.is_true(keel.persist.load(w2, path))
      w2:step(2)
      assert.are.same({}, LOG)
      os.execute("rm -rf " .. H.shell_quote(dir))
    end)

    it("w:stop() cancels timers", function()
      local w = world()
      local before = w:after(1, function() note("before") end)
      w:play()
      local during = w:every(0.5, function() note("during") end)
      w:step(0.25)
      w:stop()
      assert.is_nil(before.remaining)
      assert.is_nil(during.remaining)
      w:step(2)
      assert.are.same({}, LOG)
    end)
  end)

  describe("bad arguments", function()
    it("are InvalidArgument: seconds a finite number >= 0 (every: > 0), fn a function or a message name", function()
      local w = world()
      local e = w:spawn("E")
      local f = function() end
      for _, s in ipairs({ -1, 0 / 0, math.huge, "1", {} }) do
        H.fails("InvalidArgument", function() w:after(s, f) end)
        H.fails("InvalidArgument", function() e:every(s, f) end)
      end
      H.fails("InvalidArgument", function() w:every(0, f) end)
      H.fails("InvalidArgument", function() e:every(0, f) end)
      H.fails("InvalidArgument", function() w:after(1) end)
      H.fails("InvalidArgument", function() e:after(1, true) end)
      H.fails("InvalidArgument", function() e:after(1, "f", { g = f }) end) -- a message's data is plain
      assert.is_not_nil(e:after(1, "f")) -- a name: the timer sends that message
      assert.is_not_nil(w:after(0, f))
      e:destroy()
      H.fails("NotFound", function() e:after(1, f) end)
    end)
  end)
end)
