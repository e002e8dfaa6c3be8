-- self_batch_spec.lua — self tables copied in and written back over long runs: a kind's hooks run
-- as one batch per stretch of its components, a system's `each` as one pass; what every item of
-- those must still get (DESIGN.md "Lifecycle and order", gameplay.md "Systems").
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("self_batch")
local N = 300 -- more items than a batch or a pass keeps read-back values on the Lua stack

local function float_kind(k, update)
  keel.kind{ key = k, fields = { { "x", "float" }, { "vx", "float", default = 1 } }, update = update }
end

local function spawn_all(w, k, n)
  local cs = {}
  for i = 1, n do cs[i] = w:spawn("e" .. i):add(k, { vx = i }) end
  return cs
end

describe("a batch of plain-float hooks", function()
  it("writes every component back, step after step", function()
    local k = key("move")
    float_kind(k, function(self, e, dt) self.x = self.x + self.vx * dt end)
    local w = keel.world("Batch")
    local cs = spawn_all(w, k, N)
    for _ = 1, 3 do w:step(0.5) end
    assert.are.same({}, w:errors())
    for i = 1, N do
      assert.are.equal(1.5 * i, cs[i].x)
      assert.are.equal(i, cs[i].vx)
      assert.are.equal("float", math.type(cs[i].x))
    end
  end)

  it("writes back a kind of sixteen float fields, every one changed by every hook", function()
    local k = key("wide")
    local fields = {}
    for j = 1, 16 do fields[j] = { "f" .. j, "float" } end
    keel.kind{ key = k, fields = fields, update = function(self)
      for j = 1, 16 do self["f" .. j] = self["f" .. j] + j end
    end }
    local w = keel.world("Batch")
    local cs = {}
    for i = 1, N do cs[i] = w:spawn("e" .. i):add(k) end
    w:step(0)
    w:step(0)
    assert.are.same({}, w:errors())
    for i = 1, N, 37 do
      for j = 1, 16 do assert.are.equal(2 * j, cs[i]["f" .. j]) end
    end
  end)

  it("gives each hook its own component's values, as floats", function()
    local k = key("seen")
    local seen = {}
    float_kind(k, function(self, e)
      seen[#seen + 1] = { e.name, self.x, self.vx, math.type(self.vx) }
      self.x = 7 -- an integer written: stored as the float 7.0
    end)
    local w = keel.world("Batch")
    local cs = spawn_all(w, k, N)
    w:step(0)
    w:step(0)
    assert.are.equal(2 * N, #seen)
    for i = 1, N do
      assert.are.same({ "e" .. i, 0, i, "float" }, seen[i])
      assert.are.same({ "e" .. i, 7, i, "float" }, seen[N + i])
      assert.are.equal("float", math.type(cs[i].x))
    end
  end)

  it("rolls back and faults only the item that fails; the rest of the batch goes on", function()
    local k = key("fail")
    float_kind(k, function(self, e)
      self.x = self.x + 1
      if e.name == "e150" then error("boom") end
    end)
    local w = keel.world("Batch")
    local cs = spawn_all(w, k, N)
    w:step(0)
    w:step(0)
    local errs = w:errors()
    assert.are.equal(1, #errs)
    assert.truthy(errs[1].message:match("boom"))
    for i = 1, N do assert.are.equal(i == 150 and 0 or 2, cs[i].x) end
  end)

  it("refuses a value of the wrong type for that item only, with the message a single hook gets", function()
    local k, k1 = key("bad"), key("bad1")
    local function bad(self, e)
      self.vx = self.vx + 1
      if e.name == "e7" then self.x = "far" end
      if e.name == "e9" then self.x = nil end
    end
    float_kind(k, bad)
    float_kind(k1, bad)
    local w = keel.world("Batch")
    local cs = spawn_all(w, k, N)
    w:step(0)
    local errs = w:errors()
    assert.are.equal(2, #errs)
    for i = 1, N do
      assert.are.equal((i == 7 or i == 9) and i or i + 1, cs[i].vx)
      assert.are.equal(0, cs[i].x)
    end
    -- the same hook on three components runs one call at a time, not as a batch
    local w1 = keel.world("Single")
    spawn_all(w1, k1, 9)
    w1:step(0)
    local errs1 = w1:errors()
    assert.are.equal(2, #errs1)
    assert.are.equal(errs1[1].message, errs[1].message)
    assert.are.equal(errs1[2].message, errs[2].message)
  end)

  it("takes writes made through the component's handle during the hook", function()
    local k = key("handle")
    float_kind(k, function(self, e)
      e:get(k).vx = 100 -- an entry into the core: self is synced, the copy-back takes the slow path
      self.x = self.vx
    end)
    local w = keel.world("Batch")
    local cs = spawn_all(w, k, N)
    w:step(0)
    assert.are.same({}, w:errors())
    for i = 1, N do
      assert.are.equal(100, cs[i].x)
      assert.are.equal(100, cs[i].vx)
    end
  end)
end)

describe("a system's each over many entities", function()
  local n = 0
  local function sys() n = n + 1 return ("self_batch:sys%d"):format(n) end

  it("writes every entity's components back, step after step", function()
    local a, b = key("a"), key("b")
    keel.kind{ key = a, fields = { { "x", "float" } } }
    keel.kind{ key = b, fields = { { "vx", "float", default = 1 } } }
    local name = sys()
    keel.system{ name = name, phase = "update", query = { a, b },
      each = function(e, sa, sb, dt) sa.x = sa.x + sb.vx * dt end }
    local w = keel.world("Pass")
    local as = {}
    for i = 1, N do
      local e = w:spawn("e" .. i)
      as[i] = e:add(a)
      e:add(b, { vx = i })
    end
    for _ = 1, 3 do w:step(0.5) end
    assert.are.same({}, w:errors())
    for i = 1, N do assert.are.equal(1.5 * i, as[i].x) end
    keel.system_reset(name)
  end)

  it("writes back four selves of sixteen float fields, every one changed by every call", function()
    local ks, fields = {}, {}
    for j = 1, 16 do fields[j] = { "f" .. j, "float" } end
    for q = 1, 4 do
      ks[q] = key("wide")
      keel.kind{ key = ks[q], fields = fields }
    end
    local name = sys()
    keel.system{ name = name, phase = "update", query = ks,
      each = function(e, ...)
        for q = 1, 4 do
          local s = select(q, ...)
          for j = 1, 16 do s["f" .. j] = s["f" .. j] + q * j end
        end
      end }
    local w = keel.world("Pass")
    local cs = {}
    for i = 1, N do
      local e = w:spawn("e" .. i)
      for q = 1, 4 do cs[(i - 1) * 4 + q] = e:add(ks[q]) end
    end
    w:step(0)
    w:step(0)
    assert.are.same({}, w:errors())
    for i = 1, N, 37 do
      for q = 1, 4 do
        for j = 1, 16 do assert.are.equal(2 * q * j, cs[(i - 1) * 4 + q]["f" .. j]) end
      end
    end
    keel.system_reset(name)
  end)

  it("writes back a pass that mixes a plain-float self with one of other fields", function()
    local a, b = key("ma"), key("mb")
    keel.kind{ key = a, fields = { { "x", "float" } } }
    keel.kind{ key = b, fields = { { "n", "int" }, { "tag", "string", default = "" } } }
    local name = sys()
    keel.system{ name = name, phase = "update", query = { a, b },
      each = function(e, sa, sb)
        assert(math.type(sa.x) == "float" and math.type(sb.n) == "integer")
        sa.x = sa.x + sb.n
        sb.n = sb.n + 1
        sb.tag = e.name
      end }
    local w = keel.world("Pass")
    local as, bs = {}, {}
    for i = 1, N do
      local e = w:spawn("e" .. i)
      as[i] = e:add(a)
      bs[i] = e:add(b, { n = i })
    end
    w:step(0)
    w:step(0)
    assert.are.same({}, w:errors())
    for i = 1, N do
      assert.are.equal(2 * i + 1, as[i].x)
      assert.are.equal(i + 2, bs[i].n)
      assert.are.equal("e" .. i, bs[i].tag)
    end
    keel.system_reset(name)
  end)

  it("ends the pass at the first failing call, rolled back, the calls before it kept", function()
    local a = key("fa")
    keel.kind{ key = a, fields = { { "x", "float" } } }
    keel.system{ name = sys(), phase = "update", query = { a },
      each = function(e, sa)
        sa.x = sa.x + 1
        if e.name == "e200" then sa.x = "far" end
      end }
    local w = keel.world("Pass")
    local as = {}
    for i = 1, N do as[i] = w:spawn("e" .. i):add(a) end
    w:step(0)
    local errs = w:errors()
    assert.are.equal(1, #errs)
    for i = 1, N do assert.are.equal(i < 200 and 1 or 0, as[i].x) end
  end)
end)
