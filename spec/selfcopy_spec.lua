-- selfcopy_spec.lua — a hook's `self`: fields copied in, changed ones written back when the hook
-- returns (checked all first, then stored), and rolled back with the hook's transaction.
local keel = require "keel"

keel.kind{ key = "sc:pair", fields = { { "a", "float", default = 0 }, { "b", "float", default = 0, max = 10 },
  { "n", "int", default = 0 }, { "s", "string", default = "" } },
  update = function(self, e, dt)
    if self.s == "bad_b" then self.a = 5; self.b = 11
    elseif self.s == "bad_type" then self.a = 5; self.n = "x"
    elseif self.s == "nan" then self.a = 0 / 0
    else self.a = self.a + 1; self.n = self.n + 2; self.s = "ran" end
  end }

-- A hook that changes another component and then fails: the other's write-back is rolled back.
keel.kind{ key = "sc:outer", fields = { { "fail", "bool", default = false } },
  update = function(self, e, dt)
    e:get("sc:inner"):set{ v = 7 }
    if self.fail then error("outer failed") end
  end }
keel.kind{ key = "sc:dying", fields = { { "v", "float", default = 1 } },
  on_destroy = function(self, e) self.v = 99 end }
keel.kind{ key = "sc:remover", fields = {},
  update = function(self, e, dt)
    e:remove("sc:dying")
    error("remover failed")
  end }
keel.kind{ key = "sc:inner", fields = { { "v", "float", default = 1 } },
  update = function(self, e, dt) self.v = self.v * 2 end }

keel.kind{ key = "sc:ref", fields = { { "target", "entity" }, { "label", "string", default = "" },
  { "dir", "vec3" } },
  update = function(self, e, dt)
    self.target = e
    self.label = "seen " .. e.name
    self.dir = { 1, 2, 3 }
  end }

describe("self", function()
  describe("write-back", function()
    it("stores every changed field and bumps the version once per field", function()
      local w = keel.world()
      local c = w:spawn("E"):add("sc:pair", { a = 1 })
      local v0, r0 = c.version, w.revision
      w:step(0.1)
      assert.are.equal(2, c.a)
      assert.are.equal(2, c.n)
      assert.are.equal("ran", c.s)
      assert.are.equal(v0 + 3, c.version)
      assert.is_true(w.revision >= r0 + 3)
      assert.are.same({}, w:errors())
    end)

    it("stores entity, string and vector fields", function()
      local w = keel.world()
      local e = w:spawn("E")
      local c = e:add("sc:ref")
      w:step(0.1)
      assert.are.same({}, w:errors())
      assert.are.equal(e, c.target)
      assert.are.equal("seen E", c.label)
      assert.are.same({ 1, 2, 3 }, c.dir)
    end)

    it("writes nothing when a later field is out of range, and faults the component", function()
      local w = keel.world()
      local c = w:spawn("E"):add("sc:pair", { a = 1, s = "bad_b" })
      local v0 = c.version
      w:step(0.1)
      assert.are.equal(1, c.a)
      assert.are.equal(0, c.b)
      assert.are.equal(v0, c.version)
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.are.equal("sc:pair", errs[1].kind)
      assert.truthy(errs[1].message:match("b"))
      w:step(0.1) -- faulted: no more hooks
      assert.are.equal(1, #w:errors())
    end)

    it("writes nothing when a field gets a value of the wrong type", function()
      local w = keel.world()
      local c = w:spawn("E"):add("sc:pair", { a = 1, s = "bad_type" })
      w:step(0.1)
      assert.are.equal(1, c.a)
      assert.are.equal(0, c.n)
      assert.are.equal(1, #w:errors())
      assert.truthy(w:errors()[1].message:match("n"))
    end)

    it("refuses a non-finite float", function()
      local w = keel.world()
      local c = w:spawn("E"):add("sc:pair", { a = 3, s = "nan" })
      w:step(0.1)
      assert.are.equal(3, c.a)
      assert.are.equal(1, #w:errors())
    end)

    it("of a hook inside a failing hook is rolled back with it", function()
      local w = keel.world()
      local e = w:spawn("E")
      local inner = e:add("sc:inner")
      e:add("sc:outer", { fail = true })
      w:step(0.1)
      -- inner ran first (v 1 -> 2), then outer set v = 7 and failed: back to 2
      assert.are.equal(2, inner.v)
      assert.are.equal(1, #w:errors())
      assert.are.equal("sc:outer", w:errors()[1].kind)
      local ok = w:spawn("F")
      local inner2 = ok:add("sc:inner")
      ok:add("sc:outer")
      w:step(0.1)
      assert.are.equal(7, inner2.v)
    end)

    it("of a nested hook (on_destroy inside a failing update) is rolled back with it", function()
      local w = keel.world()
      local e = w:spawn("E")
      local d = e:add("sc:dying", { v = 3 })
      e:add("sc:remover")
      w:step(0.1)
      assert.are.equal(1, #w:errors())
      assert.are.equal("sc:remover", w:errors()[1].kind)
      local back = e:get("sc:dying")
      assert.truthy(back)
      assert.are.equal(3, back.v)
    end)
  end)
end)
