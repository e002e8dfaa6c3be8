-- lifecycle_spec.lua — w:step(): phases and their order, transactions, faults, parking, self.
local keel = require "keel"

local H = require "helper"
local fails, raises, code_of = H.fails, H.raises, H.code_of
local entities, names = H.entities, H.names
local doc, entity_text, comp_text, U1 = H.doc, H.entity_text, H.comp_text, H.U1
local key = H.key_maker("lifecycle")

-- The shared cx: kinds; LOG gathers what their tracers note, CTX[name] is what cx:actor's
-- update runs (once) for the entity of that name.
local LOG, CTX = {}, {}
setup(function()
  H.declare_cx_kinds(function(s) LOG[#LOG + 1] = s end,
    function(name) local f = CTX[name]; CTX[name] = nil; return f end)
end)
before_each(function() LOG = {}; CTX = {} end)

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

    it("steps 1/60 s when dt is omitted and refuses a negative or non-finite dt", function()
      local k = key("dt")
      local dts = {}
      keel.kind{ key = k, update = function(self, e, dt) dts[#dts + 1] = dt end }
      local w = keel.world()
      w:spawn("E"):add(k)
      w:step()
      w:run(1)
      assert.is_true(math.abs(dts[1] - 1 / 60) < 1e-12)
      assert.is_true(math.abs(dts[2] - 1 / 60) < 1e-12)
      assert.are.equal("InvalidArgument", code_of(function() w:step(-1) end))
      assert.are.equal("InvalidArgument", code_of(function() w:step(0 / 0) end))
      assert.are.equal("InvalidArgument", code_of(function() w:step("x") end))
      assert.are.equal("InvalidArgument", code_of(function() w:run(-1) end))
    end)

    it("step and run validate their arguments", function()
      local w = keel.world("Args")
      fails("InvalidArgument", w.step, w, -1)
      fails("InvalidArgument", w.step, w, 0 / 0)
      fails("InvalidArgument", w.run, w, -1)
      w:step()
      w:run(2)
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

  describe("on_destroy of a destroy made inside a callback", function()
    -- Committed state only (design/worlds.md): on_destroy runs once for a destroy that commits,
    -- at the commit, in the order the destroys were made; a destroy that rolls back runs none.
    local k = key("doomed")
    local seen
    keel.kind{ key = k, multiplicity = "many", fields = { { "tag", "string" }, { "hp", "int" } },
      on_destroy = function(self, e)
        seen[#seen + 1] = { tag = self.tag, hp = self.hp, alive = e:alive(), gone = not pcall(function() self:body() end) }
        self.hp = 0 -- a gone component takes no write-back: harmless
      end }
    local function tags()
      local out = {}
      for i, s in ipairs(seen) do out[i] = s.tag end
      return out
    end
    before_each(function() seen = {} end)

    it("waits for the commit, then runs once per destroy in the order they were made", function()
      local w = keel.world("D")
      local a, b, c = w:spawn("a"), w:spawn("b"), w:spawn("c")
      a:add(k, { tag = "a", hp = 1 })
      b:add(k, { tag = "b0" })
      b:add(k, { tag = "b1" })
      c:add(k, { tag = "c" })
      local during
      local kk = key("killer")
      keel.kind{ key = kk, fields = {}, update = function(self, e)
        c:destroy()
        a:remove(k, 0)
        b:destroy()
        during = #seen
      end }
      w:spawn("killer"):add(kk)
      w:step(1 / 60)
      assert.are.same({}, w:errors())
      assert.are.equal(0, during)
      assert.are.same({ "c", "a", "b0", "b1" }, tags())
      assert.are.equal(1, seen[2].hp) -- the component's last values, read from its record
      assert.is_false(seen[1].alive) -- c is gone from lookups by the commit
      assert.is_true(seen[2].alive)  -- a only lost a component
      assert.is_true(seen[1].gone)   -- self has the fields, not the methods
      w:step(1 / 60)
      assert.are.equal(4, #seen)     -- once
    end)

    it("runs no hook for a destroy or remove that rolls back: the entity comes back as if nothing happened", function()
      local w = keel.world("D")
      local a, b = w:spawn("a"), w:spawn("b")
      a:add(k, { tag = "a", hp = 5 })
      b:add(k, { tag = "b" })
      local kk = key("failer")
      keel.kind{ key = kk, fields = {}, update = function(self, e)
        a:remove(k, 0)
        b:destroy()
        error("changed my mind")
      end }
      w:spawn("killer"):add(kk)
      w:step(1 / 60)
      assert.are.equal(1, #w:errors())
      assert.are.same({}, tags())
      assert.is_true(b:alive())
      assert.are.equal(5, a:get(k, 0).hp)
      b:destroy() -- outside any callback: at once
      assert.are.same({ "b" }, tags())
    end)

    it("waits for the outermost commit when made from a nested hook", function()
      local w = keel.world("D")
      local t = w:spawn("t")
      t:add(k, { tag = "t" })
      local inner, outer = key("inner"), key("outer")
      keel.kind{ key = inner, fields = {}, awake = function() t:destroy() end }
      local after_inner
      keel.kind{ key = outer, fields = { { "fail", "bool" } }, update = function(self, e)
        e:add(inner)
        after_inner = #seen
        if self.fail then error("outer failed") end
      end }
      local o = w:spawn("o"):add(outer, { fail = true })
      w:step(1 / 60)
      assert.are.equal(0, after_inner)
      assert.are.same({}, tags())  -- the outer failed: the inner's destroy rolled back with it
      assert.is_true(t:alive())
      w:spawn("ok"):add(outer)
      w:step(1 / 60)
      assert.are.equal(0, after_inner)
      assert.are.same({ "t" }, tags())
      assert.is_false(t:alive())
      assert.is_true(o.fail)
    end)

    it("runs at once for a destroy outside any callback", function()
      local w = keel.world("D")
      local e = w:spawn("e")
      e:add(k, { tag = "now" })
      e:destroy()
      assert.are.same({ "now" }, tags())
      assert.is_true(seen[1].alive) -- still there while its hooks run
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

  describe("an entity field the hook leaves alone", function()
    -- Committed state only (design/worlds.md): an unchanged entity field is never re-checked
    -- when self is written back, so a hook may destroy what its own field points to.
    local function killer(k, extra)
      keel.kind{ key = k, fields = { { "target", "entity" }, { "hp", "int" } },
        awake = extra and extra.awake, update = extra and extra.update or function(self, e)
          if self.target then self.target:destroy() end
          self.hp = self.hp + 1
        end }
    end

    it("is not re-checked when the hook destroyed its target: no fault, and it reads nil after", function()
      local w = keel.world("Kill")
      local k = key("kill")
      killer(k)
      local t = w:spawn("target")
      local c = w:spawn("killer"):add(k, { target = t })
      w:step(1 / 60)
      assert.are.same({}, w:errors())
      assert.is_false(t:alive())
      assert.is_nil(c.target)
      assert.are.equal(1, c.hp) -- the other fields were written back
    end)

    it("holds in a batch of the kind's hooks too", function()
      local w = keel.world("Kill")
      local k = key("killbatch")
      killer(k)
      local cs, ts = {}, {}
      for i = 1, 6 do
        ts[i] = w:spawn("t" .. i)
        cs[i] = w:spawn("k" .. i):add(k, { target = ts[i] })
      end
      w:step(1 / 60)
      assert.are.same({}, w:errors())
      for i = 1, 6 do
        assert.is_false(ts[i]:alive())
        assert.is_nil(cs[i].target)
        assert.are.equal(1, cs[i].hp)
      end
    end)

    it("holds outside a step (awake) and when the target is the hook's own entity", function()
      local w = keel.world("Kill")
      local k = key("killawake")
      killer(k, { awake = function(self, e) if self.target then self.target:destroy() end end,
        update = function() end })
      local t = w:spawn("target")
      local c = w:spawn("killer"):add(k, { target = t })
      assert.are.same({}, w:errors())
      assert.is_false(t:alive())
      assert.is_nil(c.target)
      local k2 = key("suicide")
      keel.kind{ key = k2, fields = { { "me", "entity" } }, update = function(self, e) self.me:destroy() end }
      local e = w:spawn("self")
      e:add(k2, { me = e })
      w:step(1 / 60)
      assert.are.same({}, w:errors())
      assert.is_false(e:alive())
    end)

    it("is still checked when the hook changed it to an entity that is not alive", function()
      local w = keel.world("Kill")
      local k = key("swap")
      local other
      keel.kind{ key = k, fields = { { "target", "entity" } }, update = function(self, e)
        other:destroy()
        self.target = other
      end }
      other = w:spawn("other")
      local t = w:spawn("t")
      local c = w:spawn("x"):add(k, { target = t })
      w:step(1 / 60)
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.truthy(errs[1].message:find("stale handle: field 'target': the entity was destroyed", 1, true))
      assert.is_true(other:alive()) -- rolled back with the hook
      assert.are.equal(t, c.target)
    end)

    it("takes a new value the hook wrote through a handle and then put back in self", function()
      local w = keel.world("Kill")
      local k = key("back")
      local a, b
      keel.kind{ key = k, fields = { { "target", "entity" } }, update = function(self, e)
        self.target = b
        assert(e:get(k).target == b, "the handle sees self's pending write")
        self.target = a -- back to what self was given: the store holds b, so a is written
      end }
      a, b = w:spawn("a"), w:spawn("b")
      local c = w:spawn("x"):add(k, { target = a })
      w:step(1 / 60)
      assert.are.same({}, w:errors())
      assert.are.equal(a, c.target)
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

    it("w:step([dt]) and w:run(frames [, dt])", function()
      local k = key("runner")
      local n, last = 0, nil
      keel.kind{ key = k, update = function(self, e, dt) n = n + 1; last = dt end }
      local w = keel.world()
      w:spawn("E"):add(k)
      w:step()
      assert.are.equal(1, n)
      w:run(3, 0.25)
      assert.are.equal(4, n)
      assert.are.equal(0.25, last)
    end)
  end)

  -- ---------------------------------------------------------------------------
  describe("phases and order", function()
    local function recorder(log, tag)
      local function rec(phase) return function(self, e) log[#log + 1] = phase .. ":" .. (tag or e.name) end end
      return { awake = rec("awake"), start = rec("start"), fixed_update = rec("fixed"), update = rec("update"),
        late_update = rec("late"), on_destroy = rec("destroy") }
    end

    it("runs start, fixed_update, update, late_update; awake when added; on_destroy when removed", function()
      local k = key("phases")
      local log = {}
      local d = recorder(log)
      d.key = k
      keel.kind(d)
      local w = keel.world()
      local e = w:spawn("E")
      e:add(k)
      assert.are.same({ "awake:E" }, log)
      w:step(1 / 60)
      assert.are.same({ "awake:E", "start:E", "fixed:E", "update:E", "late:E" }, log)
      w:step(1 / 60)
      assert.are.equal("fixed:E", log[6])
      e:remove(k)
      assert.are.equal("destroy:E", log[#log])
    end)

    it("runs fixed_update by an accumulator at 1/60 s by default", function()
      local k = key("fixed")
      local n = 0
      keel.kind{ key = k, fixed_update = function() n = n + 1 end }
      local w = keel.world()
      w:spawn("E"):add(k)
      w:step(1 / 30)
      assert.are.equal(2, n)
      w:step(1 / 120)
      assert.are.equal(2, n)
      w:step(1 / 120)
      assert.are.equal(3, n)
      w:step(0)
      assert.are.equal(3, n)
    end)

    it("runs a component added during a phase from the next step, and fixed_update with the fixed dt", function()
      local adder, added = key("adder"), key("added")
      local log, fixed_dt = {}, nil
      keel.kind{ key = added, update = function(self, e) log[#log + 1] = "added:" .. e.name end,
        fixed_update = function(self, e, dt) fixed_dt = dt end }
      keel.kind{ key = adder, update = function(self, e)
        log[#log + 1] = "adder:" .. e.name
        if not e.world:find("B"):has(added) then e.world:find("B"):add(added) end
      end }
      local w = keel.world()
      w:spawn("A"):add(adder)
      w:spawn("B")
      w:step(1 / 60)
      assert.are.same({ "adder:A" }, log)
      w:step(1 / 60)
      assert.are.same({ "adder:A", "adder:A", "added:B" }, log)
      assert.is_true(math.abs(fixed_dt - 1 / 60) < 1e-12)
    end)

    it("runs awake for loaded components", function()
      local k = key("loadawake")
      local n = 0
      keel.kind{ key = k, awake = function() n = n + 1 end }
      assert(keel.parse(doc(entity_text(U1, "E", comp_text(k, 1, 0)))))
      assert.are.equal(1, n)
    end)

    it("orders entities in hierarchy pre-order, components in membership order, children never twice", function()
      local a, b = key("a"), key("b")
      local log = {}
      keel.kind{ key = a, update = function(self, e) log[#log + 1] = e.name .. ".a" end }
      keel.kind{ key = b, update = function(self, e) log[#log + 1] = e.name .. ".b" end }
      local w = keel.world()
      local p = w:spawn("P")
      local q = w:spawn("Q")
      local c1 = w:spawn{ name = "C1", parent = p }
      local c2 = w:spawn{ name = "C2", parent = p }
      local g = w:spawn{ name = "G", parent = c1 }
      q.parent = c2
      for _, e in ipairs{ p, q, c1, c2, g } do e:add(b); e:add(a) end
      w:step(1 / 60)
      assert.are.same({ "P.b", "P.a", "C1.b", "C1.a", "G.b", "G.a", "C2.b", "C2.a", "Q.b", "Q.a" }, log)
      assert.are.same({ "P", "C1", "G", "C2", "Q" }, names(entities(w)))
    end)

    it("runs what was spawned during a phase from the next step; one removed before its turn does not run", function()
      local k = key("spawner")
      local log = {}
      local victim
      keel.kind{ key = k, update = function(self, e)
        log[#log + 1] = e.name
        if e.name == "A" and not victim then
          local n = e.world:spawn{ name = "N", components = { k } }
          assert.truthy(n)
          e.world:find("B"):remove(k)
          victim = true
        end
      end }
      local w = keel.world()
      w:spawn("A"):add(k)
      w:spawn("B"):add(k)
      w:step(1 / 60)
      assert.are.same({ "A" }, log)
      log = {}
      w:step(1 / 60)
      assert.are.same({ "A", "N" }, log)
    end)

    it("keeps a phase's order when a callback reparents: each entity runs once, the new order next step", function()
      local k = key("mover")
      local log, first = {}, true
      keel.kind{ key = k, update = function(self, e)
        log[#log + 1] = e.name
        if e.name == "A" and first then
          first = false
          e.world:find("B").parent = e.world:find("C")
          e.world:find("D").parent = e
        end
      end }
      local w = keel.world()
      for _, n in ipairs{ "A", "B", "C", "D" } do w:spawn(n):add(k) end
      w:step(1 / 60)
      assert.are.same({ "A", "B", "C", "D" }, log)
      log = {}
      w:step(1 / 60)
      assert.are.same({ "A", "D", "C", "B" }, log)
    end)

    it("runs no later phase of the same step for what was added during update", function()
      local late, adder = key("late"), key("adder2")
      local log = {}
      keel.kind{ key = late, start = function() log[#log + 1] = "start" end, late_update = function() log[#log + 1] = "late" end }
      keel.kind{ key = adder, update = function(self, e)
        if not e:has(late) then
          e:add(late)
          e.world:spawn{ name = "S", components = { late } }
        end
      end }
      local w = keel.world()
      w:spawn("A"):add(adder)
      w:step(1 / 60)
      assert.are.same({}, log)
      w:step(1 / 60)
      assert.are.same({ "start", "start", "late", "late" }, log)
    end)

    it("makes a destroy visible at once and applies queued changes at the boundary in order", function()
      local k = key("killer")
      local log = {}
      local seen_alive
      keel.kind{ key = k, update = function(self, e)
        log[#log + 1] = e.name
        if e.name == "A" then
          local b = e.world:find("B")
          b:destroy()
          seen_alive = b:alive()
          local x = e.world:spawn("X")
          x.parent = e
          x.name = "Y"
        end
      end }
      local w = keel.world()
      w:spawn("A"):add(k)
      w:spawn("B"):add(k)
      w:step(1 / 60)
      assert.is_false(seen_alive)
      assert.are.same({ "A" }, log)
      assert.are.same({ "A", "Y" }, names(entities(w)))
      assert.are.equal(w:find("A"), w:find("Y").parent)
    end)

    it("parks a disabled entity, its subtree and a disabled component, and still saves them", function()
      local k = key("parked")
      local ran = {}
      keel.kind{ key = k, fields = { { "n", "int" } }, update = function(self, e) ran[#ran + 1] = e.name; self.n = self.n + 1 end }
      local w = keel.world()
      local p = w:spawn("P")
      local c = w:spawn{ name = "C", parent = p }
      local o = w:spawn("O")
      for _, e in ipairs{ p, c, o } do e:add(k, { n = 5 }) end
      p.enabled = false
      o:get(k).enabled = false
      w:step(1 / 60)
      assert.are.same({}, ran)
      assert.are.equal(5, c:get(k).n)
      local text = w:dump()
      assert.truthy(text:find("enabled: false", 1, true))
      local again = assert(keel.parse(text))
      assert.is_false(again:find("P").enabled)
      assert.is_false(again:find("O"):get(k).enabled)
      assert.are.equal(5, again:find("C"):get(k).n)
      p.enabled = true
      o:get(k).enabled = true
      w:step(1 / 60)
      assert.are.equal(3, #ran)
    end)

    it("discards a destroy made by a callback that then fails", function()
      local k = key("undestroy")
      keel.kind{ key = k, update = function(self, e)
        local b = e.world:find("B")
        b:destroy()
        assert(not b:alive())
        error("changed my mind")
      end }
      local w = keel.world()
      w:spawn("A"):add(k)
      local b = w:spawn{ name = "B", components = { { "core:transform", position = { 1, 2, 3 } } } }
      w:step(1 / 60)
      local found = w:find("B")
      assert.truthy(found)
      assert.is_true(found:alive())
      assert.are.same({ 1, 2, 3 }, found:get("core:transform").position)
      assert.are.equal(1, #w:errors())
      assert.truthy(b)
    end)

    it("treats a failing awake like any callback: rolled back, recorded, faulted (on add and on load)", function()
      local k = key("badawake")
      local updates = 0
      keel.kind{ key = k, fields = { { "x", "int" } }, awake = function(self) self.x = 5; error("awake boom") end,
        update = function() updates = updates + 1 end }
      local w = keel.world()
      local e = w:spawn("E")
      local c = e:add(k)
      assert.are.equal(0, c.x)
      assert.are.equal(1, #w:errors())
      assert.are.equal("awake", w:errors()[1].phase)
      w:step(1 / 60)
      assert.are.equal(0, updates)
      local loaded = assert(keel.parse(doc(entity_text(U1, "E", comp_text(k, 1, 0)))))
      assert.are.equal(1, #loaded:errors())
      assert.are.equal(0, loaded:find(U1):get(k).x)
    end)

    it("costs no Lua allocation per step for kinds without callbacks", function()
      local k = key("quiet")
      keel.kind{ key = k, fields = { { "x", "float" } } }
      local w = keel.world()
      for _ = 1, 200 do w:spawn{ name = "E", components = { "core:transform", k } } end
      w:step(1 / 60)
      collectgarbage()
      collectgarbage("stop")
      local before = collectgarbage("count")
      for _ = 1, 50 do w:step(1 / 60) end
      local grown = collectgarbage("count") - before
      collectgarbage("restart")
      assert.are.equal(0, grown)
    end)

    it("runs each callback as a transaction: rollback, discard, fault once, step goes on", function()
      local k, ok_k = key("faulty"), key("fine")
      local calls, fine = 0, 0
      keel.kind{ key = k, fields = { { "x", "int" } }, update = function(self, e)
        calls = calls + 1
        self.x = 99
        e.world:find("F"):get("core:transform").position = { 7, 7, 7 }
        e.world:find("F").name = "Renamed"
        e.world:spawn("Queued")
        e:add("core:camera")
        error("boom")
      end }
      keel.kind{ key = ok_k, update = function() fine = fine + 1 end }
      local w = keel.world()
      local e = w:spawn("E")
      e:add("core:transform")
      local c = e:add(k, { x = 1 }, 0)
      local f = w:spawn{ name = "F", components = { "core:transform" } }
      f:add(ok_k)
      w:step(1 / 60)
      w:step(1 / 60)
      assert.are.same({ 0, 0, 0 }, f:get("core:transform").position)
      assert.are.equal("F", f.name)
      assert.are.equal(1, calls)
      assert.are.equal(2, fine)
      assert.are.equal(1, c.x)
      assert.is_false(e:has("core:camera"))
      assert.is_nil(w:find("Queued"))
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.are.equal(e.uuid, errs[1].entity)
      assert.are.equal(k, errs[1].kind)
      assert.are.equal(0, errs[1].slot)
      assert.are.equal("update", errs[1].phase)
      assert.truthy(errs[1].message:find("boom", 1, true))
    end)

    it("phase order: start, fixed_update, update, late_update; pre-order; membership order", function()
      local w = keel.world("L")
      LOG = {}
      local p = w:spawn{ name = "P", components = { "cx:trace_one", "cx:trace_many" } }
      local q = w:spawn{ name = "Q", components = { "cx:trace_many" } }
      local c = w:spawn{ name = "C", parent = p, components = { "cx:trace_many" } }
      assert.are.same({ "awake:b:P", "awake:a:P", "awake:a:Q", "awake:a:C" }, LOG)
      LOG = {}
      w:step(1 / 60)
      local want = {}
      for _, ph in ipairs { "start", "fixed", "update", "late" } do
        for _, s in ipairs { "b:P", "a:P", "a:C", "a:Q" } do want[#want + 1] = ph .. ":" .. s end
      end
      assert.are.same(want, LOG)
      LOG = {}
      w:step(1 / 60)
      assert.falsy(table.concat(LOG, " "):find("start", 1, true))
      assert.truthy(q and c)
    end)

    it("fixed_update runs per fixed step of 1/60 s with an accumulator", function()
      local w = keel.world("F")
      w:spawn{ name = "Q", components = { "cx:trace_one" } }
      w:step(0) -- start
      local function fixed_count(dt)
        LOG = {}
        w:step(dt)
        local n = 0
        for _, s in ipairs(LOG) do if s:match("^fixed:") then n = n + 1 end end
        return n
      end
      assert.are.equal(3, fixed_count(0.05))
      assert.are.equal(1, fixed_count(0.02))
      assert.are.equal(0, fixed_count(0.01))
      assert.are.equal(1, fixed_count(0.01))
    end)

    it("spawned or added during a phase first runs next step", function()
      local w = keel.world("Sp")
      CTX.S = function() w:spawn{ name = "N", components = { "cx:actor" } } end
      CTX.A = function(self, e) e:add("cx:actor") end
      w:spawn{ name = "S", components = { "cx:actor" } }
      w:spawn{ name = "A", components = { "cx:actor" } }
      w:step(1 / 60)
      assert.are.same({ "u:S", "u:A" }, LOG)
      LOG = {}
      w:step(1 / 60)
      assert.are.same({ "u:S", "u:A", "u:A", "u:N" }, LOG)
    end)

    it("a destroy is visible at once and the entity does not run later in the phase", function()
      local w = keel.world("De")
      local alive
      local v
      CTX.K = function() v:destroy(); alive = v:alive() end
      w:spawn{ name = "K", components = { "cx:actor" } }
      v = w:spawn{ name = "V", components = { "cx:actor" } }
      w:spawn{ name = "Z", components = { "cx:actor" } }
      w:step(1 / 60)
      assert.is_false(alive)
      assert.are.same({ "u:K", "u:Z" }, LOG)
      assert.are.equal(2, w:count())
    end)

    it("a component removed before its turn does not run", function()
      local w = keel.world("Rm")
      local v
      CTX.K = function() v:remove("cx:actor", 0) end
      w:spawn{ name = "K", components = { "cx:actor" } }
      v = w:spawn{ name = "V", components = { "cx:actor", "cx:actor" } }
      w:step(1 / 60)
      assert.are.same({ "u:K", "u:V" }, LOG)
    end)

    it("disabled entities (with their subtree) and components are parked but saved", function()
      local w = keel.world("Dis")
      local p = w:spawn{ name = "P", components = { "cx:actor" } }
      w:spawn{ name = "C", parent = p, components = { "cx:actor" } }
      local o = w:spawn{ name = "O", components = { "cx:actor", "cx:actor" } }
      p.enabled = false
      o:get("cx:actor", 1).enabled = false
      w:step(1 / 60)
      assert.are.same({ "u:O" }, LOG)
      local y = w:dump()
      assert.truthy(y:find("enabled: false", 1, true))
      assert.truthy(y:find("name: C", 1, true))
    end)

    it("a failing callback is rolled back, faulted, and recorded once", function()
      local w = keel.world("Fault")
      local victim, other, target
      local bad = w:spawn{ name = "Bad", components = { { "cx:actor", n = 1 } } }
      victim = w:spawn{ name = "Victim" }
      other = w:spawn{ name = "Other", components = { "cx:actor" } }
      target = w:spawn{ name = "Target" }
      CTX.Bad = function(self, e)
        self.n = 50
        other:get("cx:actor").n = 99
        victim:destroy()
        other:add("core:transform")
        target.parent = other
        w:spawn("FromBad")
        error("boom")
      end
      w:step(1 / 60)
      assert.are.equal(1, bad:get("cx:actor").n)
      assert.are.equal(0, other:get("cx:actor").n)
      assert.is_true(victim:alive())
      assert.is_false(other:has("core:transform"))
      assert.is_nil(target.parent)
      assert.is_nil(w:find("FromBad"))
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.are.equal(bad.uuid, errs[1].entity)
      assert.are.equal("cx:actor", errs[1].kind)
      assert.are.equal(0, errs[1].slot)
      assert.are.equal("update", errs[1].phase)
      assert.truthy(errs[1].message:find("boom", 1, true))
      LOG = {}
      CTX.Bad = function() error("again") end
      w:step(1 / 60)
      w:step(1 / 60)
      assert.are.equal(1, #w:errors())
      for _, s in ipairs(LOG) do assert.are_not.equal("u:Bad", s) end
    end)

    it("a hook write out of range is a fault with the write rolled back", function()
      local w = keel.world("HookRange")
      local e = w:spawn{ name = "E", components = { "core:transform", { "cx:stamina", sprinting = true } } }
      e:get("cx:stamina").value = 0
      w:step(1 / 60)
      assert.are.equal(0, e:get("cx:stamina").value)
      assert.are.equal(1, #w:errors())
    end)

    it("the stamina example runs: one second of sprint costs 20", function()
      local w = keel.world("Run")
      local e = w:spawn{ name = "E", components = { "core:transform", { "cx:stamina", sprinting = true } } }
      w:run(60, 1 / 60)
      assert.is_true(math.abs(e:get("cx:stamina").value - 80) < 1e-6)
      assert.are.same({}, w:errors())
    end)
  end)
end)

describe("every exit reaches on_destroy (worlds.md, Lifecycles balance)", function()
  before_each(function() log = {} end)
  local function traced(w, tag, parent)
    return w:spawn{ name = tag, parent = parent, components = { { "sl:trace", tag = tag } } }
  end

  it("w:close() runs on_destroy, children before their parents, the root's last", function()
    local w = keel.world()
    local a = traced(w, "a")
    traced(w, "b", a)
    traced(w, "c")
    w.root:add("sl:trace", { tag = "root" })
    log = {}
    assert.is_true(w:close())
    assert.are.same({ "destroy c", "destroy b", "destroy a", "destroy root" }, log)
    assert.is_false(pcall(function() return a.name end))
  end)

  it("a failing on_destroy is reported with the count of failures, and the close goes on", function()
    local bad = key("bad")
    keel.kind{ key = bad, multiplicity = "many", fields = {}, on_destroy = function() error("cannot let go") end }
    local w = keel.world()
    for i = 1, 3 do w:spawn{ components = { { bad } } } end
    traced(w, "ok")
    log = {}
    local ok, err = w:close()
    assert.is_nil(ok)
    assert.are.equal(3, err.count)
    assert.matches("cannot let go", err.message)
    assert.are.same({ "destroy ok" }, log)
    assert.are.equal("keel.World (closed)", tostring(w))
  end)

  it("a <close> variable retires its world; a lifted entity is discarded by the close", function()
    do
      local w <close> = keel.world()
      traced(w, "x")
      local lifted = traced(w, "lifted")
      w:lift(lifted)
      log = {}
    end
    table.sort(log)
    assert.are.same({ "destroy lifted", "destroy x" }, log)
  end)

  it("w:stop() retires what play made and wakes what play destroyed", function()
    local w = keel.world()
    local a = traced(w, "a")
    traced(w, "b", a)
    w:play()
    traced(w, "new")
    w:find("b"):destroy()
    log = {}
    w:stop()
    assert.are.same({ "destroy new", "awake b" }, log)
    log = {}
    w:close()
    table.sort(log)
    assert.are.same({ "destroy a", "destroy b" }, log)
  end)
end)
