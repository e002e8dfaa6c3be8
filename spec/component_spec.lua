-- component_spec.lua — Component handles: slots, kind rules, field access and every value type.
local keel = require "keel"

local fails = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helper.lua").fails

keel.kind{ key = "sc:one", fields = { { "n", "int", default = 1, min = 0, max = 10 } } }
keel.kind{ key = "sc:many", multiplicity = "many", max = 3, fields = { { "v", "float", default = 0.5 } } }
keel.kind{ key = "sc:needs", requires = { "sc:one" }, fields = {} }
keel.kind{ key = "sc:hates", rejects = { "sc:one" }, fields = {} }
keel.kind{ key = "sc:ro", fields = { { "locked", "int", default = 5, readonly = true }, { "free", "int" } } }
keel.kind{ key = "sc:all", fields = {
  { "b", "bool", default = true },
  { "i", "int", default = -3 },
  { "f", "float", default = 0.25 },
  { "v2", "vec2", default = { 1, 2 } },
  { "v3", "vec3" },
  { "v4", "vec4", default = { 1, 2, 3, 4 } },
  { "q", "quat", default = { 0, 0, 0, 1 } },
  { "col", "color", default = { 1, 0.5, 0.25, 1 } },
  { "mode", "enum", choices = { "walk", "run" }, default = "run" },
  { "s", "string", default = "hi" },
  { "a", "asset" },
  { "ref", "entity" },
} }

describe("component", function()
  describe("slots", function()
    it("a many kind takes max(existing)+1 and never renumbers", function()
      local w = keel.world("S")
      local e = w:spawn("e")
      local c0 = e:add("sc:many")
      local c1 = e:add("sc:many")
      local c2 = e:add("sc:many")
      assert.are.same({ 0, 1, 2 }, { c0.slot, c1.slot, c2.slot })
      e:remove("sc:many", 1)
      assert.are.equal(2, c2.slot)
      assert.are.equal(c2, e:get("sc:many", 2))
      fails("NotFound", function() return c1.v end)
      assert.is_nil(e:get("sc:many", 1))
      assert.are.equal(c0, e:get("sc:many"))
      local c3 = e:add("sc:many")
      assert.are.equal(3, c3.slot)
    end)
    it("exceeding max is InvalidOperation", function()
      local w = keel.world("S")
      local e = w:spawn("e")
      for _ = 1, 3 do e:add("sc:many") end
      fails("InvalidOperation", function() e:add("sc:many") end)
      assert.are.equal(3, w:count("sc:many"))
    end)
    it("a removed slot stays NotFound", function()
      local w = keel.world("S")
      local e = w:spawn("e")
      e:add("sc:many")
      local c = e:add("sc:many")
      e:remove("sc:many", 1)
      fails("NotFound", function() e:remove("sc:many", 1) end)
      fails("NotFound", function() c.v = 2 end)
    end)
    it("a one kind is slot 0 only", function()
      local w = keel.world("S")
      local e = w:spawn("e")
      local c = e:add("sc:one")
      assert.are.equal(0, c.slot)
      fails("InvalidOperation", function() e:add("sc:one") end)
      fails("InvalidOperation", function() e:get("sc:one", 1) end)
      fails("InvalidOperation", function() e:remove("sc:one", 2) end)
      fails("InvalidOperation", function() w:spawn("f"):add("sc:one", nil, 1) end)
      assert.are.equal(c, e:get("sc:one", 0))
      e:remove("sc:one")
      assert.is_false(e:has("sc:one"))
    end)
    it("explicit slots are honoured", function()
      local w = keel.world("S")
      local e = w:spawn("e")
      local c = e:add("sc:many", { v = 2 }, 2)
      assert.are.equal(2, c.slot)
      assert.are.equal(3, e:add("sc:many").slot)
      fails("InvalidOperation", function() e:add("sc:many", nil, 2) end)
    end)
  end)

  describe("requires and rejects", function()
    it("a missing requirement is InvalidOperation", function()
      local w = keel.world("R")
      local e = w:spawn("e")
      fails("InvalidOperation", function() e:add("sc:needs") end)
      e:add("sc:one")
      e:add("sc:needs")
      fails("InvalidOperation", function() e:remove("sc:one") end)
      assert.is_true(e:has("sc:one"))
    end)
    it("a rejected pair is InvalidOperation both ways", function()
      local w = keel.world("R")
      local a = w:spawn("a")
      a:add("sc:one")
      fails("InvalidOperation", function() a:add("sc:hates") end)
      local b = w:spawn("b")
      b:add("sc:hates")
      fails("InvalidOperation", function() b:add("sc:one") end)
    end)
  end)

  describe("fields", function()
    it("read, write, validate range, bump version", function()
      local w = keel.world("F")
      local c = w:spawn("e"):add("sc:one")
      assert.are.equal(1, c.n)
      local v, r = c.version, w.revision
      c.n = 7
      assert.are.equal(7, c.n)
      assert.is_true(c.version > v)
      assert.is_true(w.revision > r)
      fails("InvalidArgument", function() c.n = 11 end)
      fails("InvalidArgument", function() c.n = 1.5 end)
      fails("InvalidArgument", function() c.n = "3" end)
      fails("NotFound", function() c.nope = 1 end)
      fails("NotFound", function() return c.nope end)
      assert.are.equal(7, c.n)
    end)
    it("readonly fields are Unsupported from outside", function()
      local w = keel.world("F")
      local c = w:spawn("e"):add("sc:ro")
      assert.are.equal(5, c.locked)
      fails("Unsupported", function() c.locked = 6 end)
      fails("Unsupported", function() c.kind = "x" end)
      c.free = 2
      assert.are.equal(2, c.free)
    end)
    it("c:set{} is all or nothing", function()
      local w = keel.world("F")
      local c = w:spawn("e"):add("sc:all")
      c:set{ i = 4, f = 2.5 }
      assert.are.equal(4, c.i)
      assert.are.equal(2.5, c.f)
      fails("InvalidArgument", function() c:set{ i = 9, f = "bad" } end)
      fails("NotFound", function() c:set{ i = 9, zzz = 1 } end)
      assert.are.equal(4, c.i)
      fails("InvalidArgument", function() c:set(3) end)
    end)
    it("c:reset() goes back to declared defaults", function()
      local w = keel.world("F")
      local c = w:spawn("e"):add("sc:all")
      c:set{ i = 4, s = "changed" }
      c:reset("i")
      assert.are.equal(-3, c.i)
      assert.are.equal("changed", c.s)
      c:reset()
      assert.are.equal("hi", c.s)
    end)
    it("c.enabled is writable and parks the component", function()
      local w = keel.world("F")
      local c = w:spawn("e"):add("sc:one")
      assert.is_true(c.enabled)
      c.enabled = false
      assert.is_false(c.enabled)
      fails("InvalidArgument", function() c.enabled = 1 end)
    end)
    it("tostring shows the state", function()
      local w = keel.world("F")
      local e = w:spawn("Hero")
      local c = e:add("sc:one")
      assert.are.equal('keel.Component sc:one[0] of "Hero"', tostring(c))
      e:remove("sc:one")
      assert.are.equal("keel.Component (removed)", tostring(c))
    end)
  end)

  describe("values of every field type", function()
    it("read as plain values, vectors as fresh arrays", function()
      local w = keel.world("V")
      local c = w:spawn("e"):add("sc:all")
      assert.are.equal(true, c.b)
      assert.are.equal(-3, c.i)
      assert.is_true(math.type(c.i) == "integer")
      assert.are.equal(0.25, c.f)
      assert.are.same({ 1, 2 }, c.v2)
      assert.are.same({ 0, 0, 0 }, c.v3)
      assert.are.same({ 1, 2, 3, 4 }, c.v4)
      assert.are.same({ 0, 0, 0, 1 }, c.q)
      assert.are.same({ 1, 0.5, 0.25, 1 }, c.col)
      assert.are.equal("run", c.mode)
      assert.are.equal("hi", c.s)
      assert.is_nil(c.a)
      assert.is_nil(c.ref)
      assert.are_not.equal(c.v2, c.v2) -- fresh each read
      local t = c.v3
      t[1] = 99
      assert.are.same({ 0, 0, 0 }, c.v3)
    end)
    it("accept writes of each type and refuse wrong ones", function()
      local w = keel.world("V")
      local other = w:spawn("other")
      local c = w:spawn("e"):add("sc:all")
      c.b = false; assert.are.equal(false, c.b)
      c.i = 42; assert.are.equal(42, c.i)
      c.f = -1.5; assert.are.equal(-1.5, c.f)
      c.v2 = { 3, 4 }; assert.are.same({ 3, 4 }, c.v2)
      c.v3 = { 1, 2, 3 }; assert.are.same({ 1, 2, 3 }, c.v3)
      c.q = { 0, 0, 2, 0 }; assert.are.same({ 0, 0, 1, 0 }, c.q) -- normalized
      c.col = { 0, 1, 0, 0.5 }; assert.are.same({ 0, 1, 0, 0.5 }, c.col)
      c.mode = "walk"; assert.are.equal("walk", c.mode)
      c.s = "text: with colon"; assert.are.equal("text: with colon", c.s)
      local asset = "11111111-2222-4333-8444-555555555555"
      c.a = asset; assert.are.equal(asset, c.a)
      c.a = nil; assert.is_nil(c.a)
      c.ref = other; assert.are.equal(other, c.ref)
      c.ref = nil; assert.is_nil(c.ref)
      c.ref = other.uuid; assert.are.equal(other, c.ref)
      fails("InvalidArgument", function() c.b = 1 end)
      fails("InvalidArgument", function() c.f = "1" end)
      fails("InvalidArgument", function() c.f = 0 / 0 end)
      fails("InvalidArgument", function() c.f = math.huge end)
      fails("InvalidArgument", function() c.v3 = { 1, 2 } end)
      fails("InvalidArgument", function() c.v3 = { 1, 2, "x" } end)
      fails("InvalidArgument", function() c.mode = "fly" end)
      fails("InvalidArgument", function() c.s = 5 end)
      fails("InvalidArgument", function() c.a = "not-a-uuid" end)
      fails("InvalidArgument", function() c.ref = 12 end)
      local w2 = keel.world("V2")
      fails("InvalidArgument", function() c.ref = w2:spawn("x") end)
    end)
    it("reach awake through the body of e:add() (the document path)", function()
      local seen
      keel.kind{ key = "sc:awake_all", fields = {
          { "v", "vec3" }, { "m", "enum", choices = { "a", "b" } }, { "s", "string" },
          { "t", "entity" }, { "f", "float" }, { "i", "int" }, { "ok", "bool" } },
        awake = function(self) seen = { v = self.v, m = self.m, s = self.s, t = self.t, f = self.f, i = self.i, ok = self.ok } end }
      local w = keel.world("V")
      local target = w:spawn("t")
      local c = w:spawn("e"):add("sc:awake_all", { v = { 1, 2.5, -3 }, m = "b", s = "x: \"y\" #z", t = target,
        f = 0.1, i = -7, ok = true })
      assert.are.same({ v = { 1, 2.5, -3 }, m = "b", s = 'x: "y" #z', t = target, f = 0.1, i = -7, ok = true }, seen)
      assert.are.equal('x: "y" #z', c.s)
      local ok, err = pcall(function() w:spawn("f"):add("sc:awake_all", { m = "zzz" }) end)
      assert.is_false(ok)
      assert.are.equal("InvalidArgument", err.code)
    end)
    it("c:unpack() returns the numbers of a vector", function()
      local w = keel.world("V")
      local c = w:spawn("e"):add("sc:all", { v3 = { 7, 8, 9 } })
      local x, y, z = c:unpack("v3")
      assert.are.same({ 7, 8, 9 }, { x, y, z })
      assert.are.equal(4, select("#", c:unpack("q")))
      assert.are.equal(-3, c:unpack("i"))
      fails("NotFound", function() c:unpack("zz") end)
    end)
    it("c:body() gives a plain table that round-trips through e:add()", function()
      local w = keel.world("V")
      local e = w:spawn("e")
      local c = e:add("sc:all", { i = 5, mode = "walk", v3 = { 1, 1, 1 } })
      local body = c:body()
      assert.are.equal(5, body.i)
      assert.are.equal("walk", body.mode)
      assert.are.same({ 1, 1, 1 }, body.v3)
      local c2 = w:spawn("f"):add("sc:all", body)
      assert.are.same(body, c2:body())
    end)
    it("every type survives dump and parse", function()
      local w = keel.world("V")
      local other = w:spawn("other")
      local e = w:spawn("e")
      e:add("sc:all", { b = false, i = 9, f = 0.1, v2 = { 0.5, -2 }, mode = "walk", s = "two words",
        a = "11111111-2222-4333-8444-555555555555", ref = other })
      local w2 = assert(keel.parse(w:dump()))
      local c2 = w2:find(e.uuid):get("sc:all")
      local b = c2:body()
      assert.are.equal(false, b.b)
      assert.are.equal(9, b.i)
      assert.are.equal(0.1, b.f)
      assert.are.same({ 0.5, -2 }, b.v2)
      assert.are.equal("walk", b.mode)
      assert.are.equal("two words", b.s)
      assert.are.equal("11111111-2222-4333-8444-555555555555", b.a)
      assert.are.equal(w2:find(other.uuid), b.ref)
    end)
  end)
end)

describe("e:add with a body table", function()
  local wide = { key = "sc:wide", fields = {} }
  for i = 1, 20 do wide.fields[i] = { "f" .. i, "int", default = i } end
  keel.kind(wide)
  keel.kind{ key = "sc:txt", fields = { { "s", "string", default = "d" }, { "n", "int", min = 0, max = 9 },
    { "ref", "entity" }, { "ro", "int", readonly = true } } }
  keel.kind{ key = "sc:adder", fields = {},
    update = function(self, e)
      e:add("sc:txt", { s = "from a hook", n = 3 })
      error("the hook fails after adding")
    end }

  it("writes every named field, counting one write each as keel_set would", function()
    local w = keel.world("body")
    local c = w:spawn("A"):add("sc:all", { i = 7, s = "x", mode = "walk", v3 = { 1, 2, 3 } })
    local d = w:spawn("B"):add("sc:all")
    d.i, d.s, d.mode, d.v3 = 7, "x", "walk", { 1, 2, 3 }
    assert.are.equal(d.version, c.version)
    assert.are.same(d:body(), c:body())
    assert.are.equal(true, c.b) -- untouched fields keep their defaults
  end)

  it("owns its strings and takes readonly fields and entity handles", function()
    local w = keel.world("body")
    local target = w:spawn("T")
    local cs = {}
    for i = 1, 50 do cs[i] = w:spawn("E"):add("sc:txt", { s = ("s"):rep(i) .. i, ref = target, ro = i }) end
    collectgarbage()
    collectgarbage()
    for i = 1, 50 do
      assert.are.equal(("s"):rep(i) .. i, cs[i].s)
      assert.are.equal(target, cs[i].ref)
      assert.are.equal(i, cs[i].ro)
    end
  end)

  it("refuses a bad body whole: nothing is added", function()
    local w = keel.world("body")
    local e = w:spawn("E")
    local err = fails("InvalidArgument", e.add, e, "sc:txt", { n = 12, s = "ok" })
    assert.truthy(err.message:find("n", 1, true))
    fails("NotFound", e.add, e, "sc:txt", { nope = 1 })
    fails("InvalidArgument", e.add, e, "sc:txt", { s = 5 })
    assert.is_false(e:has("sc:txt"))
  end)

  it("writes bodies naming more fields than fit the fast path the same way", function()
    local w = keel.world("body")
    local body = {}
    for i = 1, 20 do body["f" .. i] = 100 + i end
    local c = w:spawn("W"):add("sc:wide", body)
    for i = 1, 20 do assert.are.equal(100 + i, c["f" .. i]) end
    local d = w:spawn("V"):add("sc:wide")
    for i = 1, 20 do d["f" .. i] = 100 + i end
    assert.are.equal(d.version, c.version)
  end)

  it("added by a hook that then fails is taken away with the rest", function()
    local w = keel.world("body")
    local e = w:spawn("E")
    e:add("sc:adder")
    w:step(1 / 60)
    assert.is_false(e:has("sc:txt"))
    assert.are.equal(1, #w:errors())
  end)
end)
