-- lifecycle_spec.lua — w:step(): phases and their order, transactions, faults, parking, self.
local keel = require "keel"

local log = {}
local function note(s) log[#log + 1] = s end

keel.kind{ key = "sl:trace", multiplicity = "many", fields = { { "tag", "string" } },
  awake = function(self, e) note("awake " .. self.tag) end,
  start = function(self, e) note("start " .. self.tag) end,
  fixed_update = function(self, e, dt) note("fixed " .. self.tag) end,
  update = function(self, e, dt) note("update " .. self.tag) end,
  late_update = function(self, e, dt) note("late " .. self.tag) end,
  on_destroy = function(self, e) note("destroy " .. self.tag) end,
}
keel.kind{ key = "sl:root_trace", fields = {}, update = function(self, e) note("update root") end }

local function fresh()
  log = {}
end

local function only(prefix)
  local out = {}
  for _, s in ipairs(log) do
    if s:sub(1, #prefix) == prefix then out[#out + 1] = s:sub(#prefix + 2) end
  end
  return out
end

describe("lifecycle", function()
  describe(":step()", function()
    it("runs start, fixed_update, update, late_update in that order", function()
      local w = keel.world("P")
      local e = w:spawn("e")
      e:add("sl:trace", { tag = "a" })
      fresh()
      w:step(1 / 60)
      assert.are.same({ "start a", "fixed a", "update a", "late a" }, log)
      fresh()
      w:step(1 / 60)
      assert.are.same({ "fixed a", "update a", "late a" }, log)
    end)
    it("runs fixed_update by the accumulator", function()
      local w = keel.world("P")
      w:spawn("e"):add("sl:trace", { tag = "a" })
      w:step(0)
      fresh()
      w:step(3.5 / 60)
      assert.are.equal(3, #only("fixed"))
      assert.are.equal(1, #only("update"))
    end)
    it("orders root first, then pre-order, then membership order", function()
      local w = keel.world("O")
      local a = w:spawn("a")
      local b = w:spawn("b")
      local a1 = w:spawn{ name = "a1", parent = a }
      b:add("sl:trace", { tag = "b" })
      a1:add("sl:trace", { tag = "a1" })
      a:add("sl:trace", { tag = "a.0" })
      a:add("sl:trace", { tag = "a.1" })
      w.root:add("core:world_settings")
      w.root:add("sl:root_trace")
      fresh()
      w:step(1 / 60)
      assert.are.same({ "root", "a.0", "a.1", "a1", "b" }, only("update"))
      assert.are.same({ "a.0", "a.1", "a1", "b" }, only("start"))
    end)
    it("runs things spawned during a step from the next step", function()
      local w = keel.world("N")
      keel.kind{ key = "sl:spawner", fields = { { "done", "bool" } },
        update = function(self, e, dt)
          if not self.done then
            self.done = true
            e.world:spawn("child"):add("sl:trace", { tag = "late" })
          end
        end }
      w:spawn("s"):add("sl:spawner")
      fresh()
      w:step(1 / 60)
      assert.are.same({}, only("update"))
      assert.are.equal(2, w:count())
      w:step(1 / 60)
      assert.are.same({ "late" }, only("update"))
    end)
    it("makes a destroy visible at once", function()
      local w = keel.world("D")
      local victim, armed
      keel.kind{ key = "sl:killer", fields = {},
        update = function(self, e)
          if not armed then return end
          victim:destroy()
          assert(not victim:alive())
        end }
      w:spawn("k"):add("sl:killer")
      victim = w:spawn("v")
      victim:add("sl:trace", { tag = "v" })
      w:step(0)
      armed = true
      fresh()
      w:step(1 / 60)
      assert.are.same({}, only("update"))
      assert.are.same({ "v" }, only("destroy"))
      assert.are.same({}, w:errors())
      assert.is_false(victim:alive())
    end)
    it("does not run parked entities and components, and keeps their state", function()
      local w = keel.world("Park")
      local p = w:spawn("p")
      local c = w:spawn{ name = "c", parent = p }
      local ca = c:add("sl:trace", { tag = "c" })
      local other = w:spawn("o"):add("sl:trace", { tag = "o" })
      p.enabled = false
      other.enabled = false
      fresh()
      w:step(1 / 60)
      assert.are.same({}, only("update"))
      assert.are.equal("c", ca.tag)
      local text = w:dump()
      assert.truthy(text:match("tag: c"))
      assert.truthy(text:match("enabled: false"))
      p.enabled = true
      other.enabled = true
      fresh()
      w:step(1 / 60)
      assert.are.same({ "c", "o" }, only("update"))
    end)
  end)

  describe("transactions", function()
    it("roll back writes and queued structure of a failing callback, record it once, stop the component", function()
      local w = keel.world("T")
      local calls = 0
      keel.kind{ key = "sl:bad", fields = { { "n", "int" } },
        update = function(self, e)
          calls = calls + 1
          self.n = 99
          e:get("sl:bad").n = 98
          e.world:spawn("ghost")
          e:add("core:transform")
          error("boom")
        end }
      local e = w:spawn("bad")
      local c = e:add("sl:bad")
      w:step(1 / 60)
      assert.are.equal(0, c.n)
      assert.are.equal(1, w:count())
      assert.is_false(e:has("core:transform"))
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.are.equal(e.uuid, errs[1].entity)
      assert.are.equal("sl:bad", errs[1].kind)
      assert.are.equal(0, errs[1].slot)
      assert.are.equal("update", errs[1].phase)
      assert.truthy(errs[1].message:match("boom"))
      w:step(1 / 60)
      w:step(1 / 60)
      assert.are.equal(1, calls)
      assert.are.equal(1, #w:errors())
    end)
    it("rolls back a write of the wrong type made through self", function()
      local w = keel.world("T")
      keel.kind{ key = "sl:badtype", fields = { { "n", "int" } },
        update = function(self, e) self.n = "seven" end }
      local c = w:spawn("x"):add("sl:badtype")
      w:step(1 / 60)
      assert.are.equal(0, c.n)
      assert.are.equal(1, #w:errors())
      assert.are.equal("InvalidArgument", (function()
        local ok, err = pcall(function() c.n = "seven" end)
        return not ok and err.code
      end)())
    end)
    it("goes on with the other components", function()
      local w = keel.world("T")
      keel.kind{ key = "sl:thrower", fields = {}, update = function() error({ code = "NotFound", message = "custom" }) end }
      w:spawn("a"):add("sl:thrower")
      w:spawn("b"):add("sl:trace", { tag = "b" })
      fresh()
      w:step(1 / 60)
      assert.are.same({ "b" }, only("update"))
      assert.are.equal("custom", w:errors()[1].message:match("custom"))
    end)
  end)

  describe("self", function()
    it("sees the fields, writes back changes, and offers the component methods", function()
      local w = keel.world("Self")
      local seen = {}
      keel.kind{ key = "sl:self", fields = { { "x", "float" }, { "v", "vec3" }, { "k", "int" } },
        update = function(self, e, dt)
          seen.kind, seen.slot, seen.entity, seen.enabled = self.kind, self.slot, self.entity, self.enabled
          self.x = self.x + 1
          self.v[2] = 5
          self:set{ k = 3 }
          seen.body = self:body()
          seen.unpack = { self:unpack("v") }
        end }
      local e = w:spawn("s")
      local c = e:add("sl:self")
      w:step(1 / 60)
      assert.are.same({}, w:errors())
      assert.are.equal("sl:self", seen.kind)
      assert.are.equal(0, seen.slot)
      assert.are.equal(e, seen.entity)
      assert.is_true(seen.enabled)
      assert.are.equal(1, c.x)
      assert.are.same({ 0, 5, 0 }, c.v)
      assert.are.equal(3, c.k)
      assert.are.equal(1, seen.body.x)
      assert.are.same({ 0, 5, 0 }, seen.unpack)
    end)
    it("refuses unknown fields and is only valid during its callback", function()
      local w = keel.world("Self")
      local kept
      keel.kind{ key = "sl:selfkeep", fields = { { "x", "float" } },
        update = function(self) kept = self; self.y = 1 end }
      w:spawn("s"):add("sl:selfkeep")
      w:step(1 / 60)
      assert.truthy(w:errors()[1].message:match("no field 'y'"))
      local ok, err = pcall(function() kept:set{ x = 1 } end)
      assert.is_false(ok)
      assert.are.equal("Unsupported", err.code)
    end)
    it("reads writes made through a handle during the callback", function()
      local w = keel.world("Self")
      keel.kind{ key = "sl:mix", fields = { { "a", "int" }, { "b", "int" } },
        update = function(self, e)
          self.a = 1
          local c = e:get("sl:mix")
          assert(c.a == 1, "the handle sees self's pending write")
          c.b = 2
          assert(self.b == 2, "self sees the handle's write")
        end }
      local c = w:spawn("m"):add("sl:mix")
      w:step(1 / 60)
      assert.are.same({}, w:errors())
      assert.are.equal(1, c.a)
      assert.are.equal(2, c.b)
    end)
  end)

  describe("readonly fields", function()
    it("are written by the kind's own hooks, not from outside", function()
      local w = keel.world("RO")
      keel.kind{ key = "sl:counter", fields = { { "ticks", "int", readonly = true } },
        update = function(self, e)
          self.ticks = self.ticks + 1
          e:get("sl:counter").ticks = self.ticks + 1
        end }
      local c = w:spawn("c"):add("sl:counter")
      w:step(1 / 60)
      assert.are.same({}, w:errors())
      assert.are.equal(2, c.ticks)
      local ok, err = pcall(function() c.ticks = 5 end)
      assert.is_false(ok)
      assert.are.equal("Unsupported", err.code)
    end)
  end)

  describe("coroutines", function()
    it("run hooks on the thread that called w:step(); a yield from a hook is a fault", function()
      local w = keel.world("Co")
      local threads = {}
      keel.kind{ key = "sl:co", fields = { { "n", "int" } },
        update = function(self) threads[#threads + 1] = coroutine.running(); self.n = self.n + 1 end }
      keel.kind{ key = "sl:yielder", fields = {}, update = function() coroutine.yield(1) end }
      local c = w:spawn("a"):add("sl:co")
      w:spawn("b"):add("sl:yielder")
      local co = coroutine.create(function() w:step(1 / 60); return "done" end)
      local ok, res = coroutine.resume(co)
      assert.is_true(ok)
      assert.are.equal("done", res)
      assert.are.equal(co, threads[1])
      assert.are.equal(1, c.n)
      assert.are.equal(1, #w:errors())
      assert.truthy(w:errors()[1].message:match("yield"))
      w:step(1 / 60)
      assert.are.equal(2, c.n)
    end)
  end)

  describe(":run()", function()
    it("steps n frames", function()
      local w = keel.world("Run")
      w:spawn("e"):add("sl:trace", { tag = "r" })
      fresh()
      w:run(3, 1 / 60)
      assert.are.equal(3, #only("update"))
      local ok, err = pcall(function() w:run(-1) end)
      assert.are.equal("InvalidArgument", err.code)
      local _ = ok
    end)

    it("takes a float with an integer value as a frame count, and refuses 2.5 and '3'", function()
      local w = keel.world("Run")
      w:spawn("e"):add("sl:trace", { tag = "r" })
      fresh()
      w:run(2.0, 1 / 60)
      assert.are.equal(2, #only("update"))
      for _, bad in ipairs{ 2.5, "3" } do
        local ok, err = pcall(w.run, w, bad)
        assert.is_false(ok)
        assert.are.equal("InvalidArgument", err.code)
      end
    end)
  end)
end)
