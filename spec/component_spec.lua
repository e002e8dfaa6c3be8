-- component_spec.lua — Component handles: slots, kind rules, field access and every value type.
local keel = require "keel"

local H = require "helper"
local fails, code_of, stack = H.fails, H.code_of, H.stack
local doc, entity_text, comp_text, U1 = H.doc, H.entity_text, H.comp_text, H.U1
local key = H.key_maker("component")

-- The shared cx: kinds.
setup(function() H.declare_cx_kinds() end)

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

    it("defaults multiplicity to one... and a one kind is always slot 0", function()
      local k = key("one")
      keel.kind{ key = k, multiplicity = "one" }
      local e = keel.world():spawn("E")
      local c = e:add(k)
      assert.are.equal(0, c.slot)
      assert.are.equal(c, e:get(k))
      assert.are.equal(c, e:get(k, 0))
      assert.are.equal("InvalidOperation", code_of(function() e:get(k, 1) end))
      assert.are.equal("InvalidOperation", code_of(function() e:remove(k, 1) end))
      assert.are.equal("InvalidOperation", code_of(function() e:add(k) end))
      local e2 = e.world:spawn("E2")
      assert.are.equal("InvalidOperation", code_of(function() e2:add(k, {}, 2) end))
    end)

    it("numbers a many kind's new slots max(existing) + 1 and never renumbers", function()
      local k = key("many")
      keel.kind{ key = k, multiplicity = "many", fields = { { "n", "int" } } }
      local e = keel.world():spawn("E")
      local c0, c1, c2 = e:add(k, { n = 0 }), e:add(k, { n = 1 }), e:add(k, { n = 2 })
      assert.are.same({ 0, 1, 2 }, { c0.slot, c1.slot, c2.slot })
      e:remove(k, 1)
      assert.are.equal(2, c2.slot)
      assert.are.equal(2, e:get(k, 2).n)
      assert.is_nil(e:get(k, 1))
      assert.are.equal("NotFound", code_of(function() return c1.n end))
      assert.are.equal("NotFound", code_of(function() e:remove(k, 1) end))
      assert.are.equal(3, e:add(k).slot)
      e:remove(k, 3)
      e:remove(k, 2)
      -- max + 1 over every slot used in this session, not only the ones held now
      assert.are.equal(4, e:add(k).slot)
    end)

    it("keeps slots above 0 (up to the highest) and their handles while other components come and go", function()
      local k = key("kept")
      keel.kind{ key = k, multiplicity = "many", fields = { { "n", "int" } } }
      local w = keel.world("K")
      local e = w:spawn("E")
      local c5 = e:add(k, { n = 5 }, 5)
      local high = e:add(k, { n = 9 }, 4294967294)
      assert.are.equal(4294967294, high.slot)
      for i = 1, 50 do
        local o = w:spawn("O")
        o:add(k, { n = i }, i)
        o:add(k, nil, i + 100)
        if i % 2 == 0 then o:destroy() end
      end
      assert.are.equal(c5, e:get(k, 5))
      assert.are.equal(high, e:get(k, 4294967294))
      assert.are.same({ 5, 9 }, { c5.n, high.n })
      assert.are.equal(c5, e:get(k)) -- the lowest
      local d = e:duplicate()
      assert.are.same({ 5, 9 }, { d:get(k, 5).n, d:get(k, 4294967294).n })
      assert.are_not.equal(c5, d:get(k, 5))
      e:remove(k, 5)
      assert.are.equal("NotFound", code_of(function() return c5.n end))
      assert.are.equal(5, d:get(k, 5).n)
      assert.are.equal(high, e:get(k)) -- the lowest now
      assert.are.equal(5, e:add(k, { n = 55 }, 5).slot)
      -- a new component in the same slot: the old handle stays stale
      assert.are.equal("NotFound", code_of(function() return c5.n end))
      assert.are.equal(55, e:get(k, 5).n)
    end)

    -- seed 000: a new slot is max + 1 over the slots used in this session; a removed slot's
    -- address is NotFound; only undo of the remove takes that slot again
    describe("after the highest slot is removed", function()
      local history = require "keel.history"
      local channel = require "keel.channel"
      local k, w, e, h
      before_each(function()
        k = key("high")
        keel.kind{ key = k, multiplicity = "many", fields = { { "n", "int" } } }
        w = keel.world("High")
        e = w:spawn("E")
        h = history.new(w)
        for n = 0, 2 do e:add(k, { n = n }) end
      end)

      it("gives the next add the number after it", function()
        h:remove(e, k, 2)
        assert.are.equal(3, e:add(k).slot)
        e:remove(k, 3)
        e:remove(k, 1)
        e:remove(k, 0)
        assert.are.equal(4, e:add(k).slot) -- the mark outlives every component of the kind
      end)

      it("gives the old number back on undo of the remove, and only then", function()
        h:remove(e, k, 2)
        assert.is_true(h:undo())
        assert.are.equal(2, e:get(k, 2).n)
        assert.are.equal(3, e:add(k).slot)
      end)

      it("lets undo of the remove re-take its slot after a later add", function()
        h:remove(e, k, 2)
        local later = h:add(e, k, { n = 30 })
        assert.are.equal(3, later.slot)
        assert.is_true(h:undo()) -- the add
        assert.is_true(h:undo()) -- the remove: slot 2 is free, so it comes back there
        assert.are.equal(2, e:get(k, 2).n)
        assert.is_nil(e:get(k, 3))
        assert.is_true(h:redo()) -- the remove again
        assert.is_nil(e:get(k, 2))
        assert.is_true(h:redo()) -- the add, in its own slot
        assert.are.equal(30, e:get(k, 3).n)
        assert.are.equal(4, e:add(k).slot)
      end)

      it("answers NotFound for the removed slot's address over the channel", function()
        local ch = channel.new(w)
        local addr = { object = e.uuid, kind = k, slot = 2 }
        assert.are.equal(2, ch:call("component.get", addr).body.n)
        ch:call("component.remove", addr)
        assert.are.equal(3, ch:call("component.add", { object = e.uuid, kind = k }).slot)
        assert.are.equal("NotFound", code_of(function() ch:call("component.get", addr) end))
        assert.are.equal("NotFound", code_of(function() ch:call("component.set", {
          object = e.uuid, kind = k, slot = 2, fields = { n = 1 } }) end))
      end)

      it("keeps no mark for a destroyed entity, nor in a saved scene", function()
        e:remove(k, 2)
        local dir = H.tmpdir()
        assert(w:save(dir .. "/high.yaml"))
        local loaded = assert(keel.load(dir .. "/high.yaml"))
        H.rmrf(dir)
        assert.are.equal(2, loaded:find("E"):add(k).slot) -- session-only: the file holds slots 0 and 1
        e:destroy()
        local e2 = w:spawn("E2")
        assert.are.equal(0, e2:add(k).slot)
      end)
    end)

    it("starts a many kind at slot 0 and refuses more than max", function()
      local k = key("max")
      keel.kind{ key = k, multiplicity = "many", max = 2 }
      local e = keel.world():spawn("E")
      assert.are.equal(0, e:add(k).slot)
      e:add(k)
      assert.are.equal("InvalidOperation", code_of(function() e:add(k) end))
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

    it("refuses a missing requirement, a rejected pair both ways, removing a requirement", function()
      local needy, hater = key("needy"), key("hater")
      keel.kind{ key = needy, requires = { "core:transform" } }
      keel.kind{ key = hater, rejects = { "core:camera" } }
      local w = keel.world()
      local e = w:spawn("E")
      assert.are.equal("InvalidOperation", code_of(function() e:add(needy) end))
      e:add("core:transform")
      e:add(needy)
      assert.are.equal("InvalidOperation", code_of(function() e:remove("core:transform") end))
      assert.truthy(e:get("core:transform"))
      e:add("core:camera")
      assert.are.equal("InvalidOperation", code_of(function() e:add(hater) end))
      local f = w:spawn("F")
      f:add("core:transform")
      f:add(hater)
      assert.are.equal("InvalidOperation", code_of(function() f:add("core:camera") end))
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

    it("takes defaults from the declaration for a new component, a reset and a file that omits a field", function()
      local k = key("defaults")
      keel.kind{ key = k, fields = { { "value", "float", default = 100 }, { "mode", "enum", choices = { "walk", "run" }, default = "run" },
        { "flag", "bool" }, { "n", "int" }, { "s", "string" }, { "v", "vec3" }, { "q", "quat" }, { "a", "asset" }, { "t", "entity" } } }
      local w = keel.world()
      local e = w:spawn("E")
      local c = e:add(k)
      assert.are.equal(100, c.value)
      assert.are.equal("run", c.mode)
      assert.are.equal(false, c.flag)
      assert.are.equal(0, c.n)
      assert.are.equal("", c.s)
      assert.are.same({ 0, 0, 0 }, c.v)
      assert.are.same({ 0, 0, 0, 1 }, c.q)
      assert.is_nil(c.a)
      assert.is_nil(c.t)
      c.value, c.mode = 5, "walk"
      c:reset("value")
      assert.are.equal(100, c.value)
      assert.are.equal("walk", c.mode)
      c:reset()
      assert.are.equal("run", c.mode)
      local loaded = assert(keel.parse(doc(entity_text(U1, "F", comp_text(k, 1, 0)))))
      assert.are.equal(100, loaded:find(U1):get(k).value)
      assert.are.equal("run", loaded:find(U1):get(k).mode)
    end)

    it("refuses values out of range, not finite or of the wrong type with InvalidArgument", function()
      local k = key("ranges")
      keel.kind{ key = k, fields = { { "value", "float", default = 1, min = 0, max = 100 }, { "n", "int" },
        { "mode", "enum", choices = { "a", "b" } }, { "v", "vec3" }, { "a", "asset" }, { "t", "entity" } } }
      local c = keel.world():spawn("E"):add(k)
      assert.are.equal("InvalidArgument", code_of(function() c.value = 101 end))
      assert.are.equal("InvalidArgument", code_of(function() c.value = -1 end))
      assert.are.equal("InvalidArgument", code_of(function() c.value = 0 / 0 end))
      assert.are.equal("InvalidArgument", code_of(function() c.value = math.huge end))
      assert.are.equal("InvalidArgument", code_of(function() c.value = "ten" end))
      assert.are.equal("InvalidArgument", code_of(function() c.n = 1.5 end))
      assert.are.equal("InvalidArgument", code_of(function() c.mode = "c" end))
      assert.are.equal("InvalidArgument", code_of(function() c.v = { 1, 2 } end))
      assert.are.equal("InvalidArgument", code_of(function() c.a = "not-a-uuid" end))
      assert.are.equal("InvalidArgument", code_of(function() c.t = "not-a-uuid" end))
      assert.are.equal(1, c.value)
    end)

    it("bumps the component's version and the world's revision on every write", function()
      local k = key("versions")
      keel.kind{ key = k, fields = { { "x", "int" } } }
      local w = keel.world()
      local c = w:spawn("E"):add(k)
      local v, r = c.version, w.revision
      c.x = 1
      assert.truthy(c.version > v)
      assert.truthy(w.revision > r)
      v, r = c.version, w.revision
      c:set{ x = 2 }
      assert.truthy(c.version > v)
      assert.truthy(w.revision > r)
    end)

    it("bumps version and revision for writes made by hooks through self", function()
      local k = key("hookwrite")
      keel.kind{ key = k, fields = { { "x", "int" } }, update = function(self) self.x = self.x + 1 end }
      local w = keel.world()
      local c = w:spawn("E"):add(k)
      local v, r = c.version, w.revision
      w:step(1 / 60)
      assert.are.equal(1, c.x)
      assert.truthy(c.version > v)
      assert.truthy(w.revision > r)
    end)

    it("c:set, c:body, c:unpack", function()
      local e = keel.world():spawn{ name = "E", components = { "core:transform" } }
      local c = e:get("core:transform")
      c:set{ position = { 1, 2, 3 }, scale = { 2, 2, 2 } }
      local body = c:body()
      assert.is_nil(getmetatable(body))
      assert.are.same({ 1, 2, 3 }, body.position)
      assert.are.same({ 0, 0, 0, 1 }, body.rotation)
      assert.are.same({ 2, 2, 2 }, body.scale)
      local x, y, z, w = c:unpack("position")
      assert.are.same({ 1, 2, 3 }, { x, y, z })
      assert.is_nil(w)
      assert.are.equal("number", type(x))
      assert.are.equal(4, select("#", c:unpack("rotation")))
    end)

    it("c:unpack allocates nothing", function()
      local c = keel.world():spawn{ name = "E", components = { "core:transform" } }:get("core:transform")
      c:unpack("position")
      collectgarbage()
      collectgarbage("stop")
      local before = collectgarbage("count")
      for _ = 1, 1000 do c:unpack("position") end
      local grown = collectgarbage("count") - before
      collectgarbage("restart")
      assert.are.equal(0, grown)
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
      fails("NotFound", function() c.ref = w2:spawn("x") end) -- another world's handle is stale (worlds.md)
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

    it("stores quaternions normalized x,y,z,w", function()
      local c = keel.world():spawn("E"):add("core:transform")
      c.rotation = { 0, 0, 2, 0 }
      assert.are.same({ 0, 0, 1, 0 }, c.rotation)
    end)

    it("reads vectors as fresh arrays and accepts any such array", function()
      local c = keel.world():spawn{ name = "E", components = { "core:transform" } }:get("core:transform")
      local p = c.position
      p[1] = 99
      assert.are.same({ 0, 0, 0 }, c.position)
      assert.are_not.equal(c.position, c.position)
      c.position = { 4, 5, 6 }
      assert.are.same({ 4, 5, 6 }, c.position)
    end)

    it("reads plain values: bool, int, float, string, enum name, asset UUID or nil", function()
      local k = key("plain")
      keel.kind{ key = k, fields = { { "b", "bool" }, { "i", "int" }, { "f", "float" }, { "s", "string" },
        { "m", "enum", choices = { "x", "y" } }, { "a", "asset" } } }
      local c = keel.world():spawn("E"):add(k, { b = true, i = 3, f = 1.5, s = "hi", m = "y", a = U1 })
      assert.are.equal(true, c.b)
      assert.are.equal("integer", math.type(c.i))
      assert.are.equal(1.5, c.f)
      assert.are.equal("hi", c.s)
      assert.are.equal("y", c.m)
      assert.are.equal(U1, c.a)
      c.a = nil
      assert.is_nil(c.a)
    end)

    it("reads entity fields as handles (nil when empty or gone) and accepts handles or UUID strings", function()
      local k = key("target")
      keel.kind{ key = k, fields = { { "target", "entity" } } }
      local w = keel.world()
      local t = w:spawn("T")
      local c = w:spawn("E"):add(k)
      assert.is_nil(c.target)
      c.target = t
      assert.are.equal(t, c.target)
      c.target = nil
      c.target = t.uuid
      assert.are.equal(t, c.target)
      t:destroy()
      assert.is_nil(c.target)
    end)
  end)

  describe("properties", function()
    it("c.kind, c.slot, c.entity, c.loaded, c.version, c.enabled (writable)", function()
      local e = keel.world():spawn{ name = "E", components = { "core:transform" } }
      local c = e:get("core:transform")
      assert.are.equal("core:transform", c.kind)
      assert.are.equal(0, c.slot)
      assert.are.equal(e, c.entity)
      assert.is_true(c.loaded)
      assert.are.equal("number", type(c.version))
      assert.is_true(c.enabled)
      c.enabled = false
      assert.is_false(c.enabled)
    end)
  end)

  describe("on an entity holding core:transform", function()
    local w, e
    before_each(function()
      w = keel.world("Slots")
      e = w:spawn{ name = "E", components = { "core:transform" } }
    end)

    it("a one kind is slot 0; another slot is InvalidOperation; a second one is InvalidOperation", function()
      local t = e:get("core:transform")
      assert.are.equal(0, t.slot)
      assert.are.equal(t, e:get("core:transform", 0))
      fails("InvalidOperation", e.get, e, "core:transform", 1)
      fails("InvalidOperation", e.add, e, "core:transform")
      fails("InvalidOperation", e.add, e, "core:camera", nil, 2)
      assert.are.equal(0, e:add("core:camera", nil, 0).slot)
    end)

    it("a many kind's new slot is max+1; removal does not renumber; removed slot is NotFound", function()
      local s0 = e:add("core:audio_source")
      local s1 = e:add("core:audio_source")
      local s2 = e:add("core:audio_source")
      assert.are.same({ 0, 1, 2 }, { s0.slot, s1.slot, s2.slot })
      local body = e:remove("core:audio_source", 1)
      assert.are.equal("table", type(body))
      assert.are.equal(1, body.volume)
      assert.are.equal(2, s2.slot)
      assert.is_nil(e:get("core:audio_source", 1))
      fails("NotFound", e.remove, e, "core:audio_source", 1)
      fails("NotFound", function() return s1.volume end)
      fails("NotFound", function() s1.volume = 0.5 end)
      assert.are.equal(3, e:add("core:audio_source").slot)
      assert.are.equal(0, e:get("core:audio_source").slot) -- no slot: the lowest
      assert.are.equal("core:transform#0,core:audio_source#0,core:audio_source#2,core:audio_source#3", stack(e))
    end)

    it("an explicit free slot is honoured, an occupied one is InvalidOperation", function()
      assert.are.equal(7, e:add("core:audio_source", nil, 7).slot)
      fails("InvalidOperation", e.add, e, "core:audio_source", nil, 7)
      assert.are.equal(8, e:add("core:audio_source").slot)
    end)

    it("exceeding max is InvalidOperation", function()
      e:add("cx:capped"); e:add("cx:capped")
      fails("InvalidOperation", e.add, e, "cx:capped")
    end)

    it("remove of a one kind may omit the slot", function()
      e:add("core:camera")
      assert.are.equal("table", type(e:remove("core:camera")))
      assert.is_false(e:has("core:camera"))
    end)

    it("requires and rejects are enforced both ways", function()
      local x = w:spawn("X")
      fails("InvalidOperation", x.add, x, "core:audio_source")
      fails("InvalidOperation", x.add, x, "cx:needs_b")
      x:add("cx:b")
      fails("InvalidOperation", x.add, x, "cx:a") -- the new one rejects an existing one
      local y = w:spawn("Y")
      y:add("cx:a")
      fails("InvalidOperation", y.add, y, "cx:b") -- an existing one rejects the new one
      x:add("cx:needs_b")
      fails("InvalidOperation", x.remove, x, "cx:b")
      e:add("core:point_light")
      fails("InvalidOperation", e.add, e, "core:spot_light")
      fails("InvalidOperation", e.add, e, "core:directional_light")
      fails("InvalidOperation", e.remove, e, "core:transform")
    end)

    it("unknown kind keys are NotFound for add", function()
      fails("NotFound", e.add, e, "zz:zz")
      assert.is_false(e:has("zz:zz"))
      assert.is_nil(e:get("core:camera"))
      fails("NotFound", e.remove, e, "core:camera")
    end)

    it("every write bumps the component version and the world revision; a refused one does not", function()
      local c = e:add("core:audio_source")
      local v, r = c.version, w.revision
      c.volume = 0.5
      assert.is_true(c.version > v)
      assert.is_true(w.revision > r)
      v, r = c.version, w.revision
      fails("InvalidArgument", function() c.volume = 5 end)
      assert.are.equal(v, c.version)
      assert.are.equal(r, w.revision)
      assert.are.equal(0.5, c.volume)
    end)

    it("a hook's write goes through the registry: version bumps only when a field changes", function()
      local c = e:add("cx:flags")
      local v, r = c.version, w.revision
      w:step(1 / 60)
      assert.are.equal(v + 1, c.version)
      assert.are.equal(r + 1, w.revision)
      local t = e:get("core:transform")
      local tv = t.version
      w:step(1 / 60)
      assert.are.equal(tv, t.version)
    end)

    it("values: scalars, enums, assets, strings", function()
      local c = e:add("cx:vals")
      assert.are.equal(3, c.i)
      assert.are.equal("hi", c.s)
      assert.are.equal("x", c.e)
      assert.is_nil(c.a)
      c.i = 4; c.f = 2.5; c.s = "yes"; c.e = "y"
      assert.are.same({ 4, 2.5, "yes", "y" }, { c.i, c.f, c.s, c.e })
      c.a = "0c0c0c0c-0000-4000-8000-000000000000"
      assert.are.equal("0c0c0c0c-0000-4000-8000-000000000000", c.a)
      c.a = nil
      assert.is_nil(c.a)
      fails("InvalidArgument", function() c.i = 2.5 end)
      fails("InvalidArgument", function() c.i = 11 end)
      fails("InvalidArgument", function() c.i = "3" end)
      fails("InvalidArgument", function() c.f = 0 / 0 end)
      fails("InvalidArgument", function() c.f = math.huge end)
      fails("InvalidArgument", function() c.e = "z" end)
      fails("InvalidArgument", function() c.a = "not-a-uuid" end)
      fails("InvalidArgument", function() c.s = 5 end)
      fails("NotFound", function() return c.nope end)
      fails("NotFound", function() c.nope = 1 end)
    end)

    it("vectors read as fresh arrays, accept arrays, and unpack returns numbers", function()
      local c = e:add("cx:vals")
      assert.are.same({ 1, 2, 3 }, c.v3)
      local p = c.v3
      p[1] = 99
      assert.are.same({ 1, 2, 3 }, c.v3)
      assert.are_not.equal(c.v3, c.v3)
      c.v2 = { 5, 6 }
      assert.are.same({ 5, 6 }, c.v2)
      c.v4 = { 1, 2, 3, 4 }
      assert.are.same({ 1, 2, 3, 4 }, { c:unpack("v4") })
      assert.are.same({ 1, 1, 1, 1 }, { c:unpack("c") })
      assert.are.same({ 0, 0, 0, 1 }, c.q)
      c.q = { 0, 0, 0, 2 } -- stored normalized
      assert.are.same({ 0, 0, 0, 1 }, c.q)
      fails("InvalidArgument", function() c.v3 = { 1, 2 } end)
      fails("InvalidArgument", function() c.v3 = { 1, 2, 3, 4 } end)
      fails("InvalidArgument", function() c.v3 = { 0 / 0, 2, 3 } end)
      fails("InvalidArgument", function() c.v3 = "abc" end)
      fails("InvalidArgument", function() c.q = { 0, 0, 0, 0 } end)
      fails("NotFound", c.unpack, c, "nope")
    end)

    it("unpack does not allocate", function()
      local t = e:get("core:transform")
      collectgarbage(); collectgarbage("stop")
      local before = collectgarbage("count")
      for _ = 1, 2000 do local _, _, _ = t:unpack("position") end
      local grew = collectgarbage("count") - before
      collectgarbage("restart")
      assert.is_true(grew < 1, "unpack allocated " .. grew .. " KB")
    end)

    it("entity fields read as handles, accept handles or UUID strings, nil when gone", function()
      local c = e:add("cx:vals")
      local o = w:spawn("O")
      assert.is_nil(c.target)
      c.target = o
      assert.are.equal(o, c.target)
      c.target = e.uuid
      assert.are.equal(e, c.target)
      c.target = o
      o:destroy()
      assert.is_nil(c.target)
      fails("InvalidArgument", function() c.target = "zzz" end)
    end)

    it("set is all-or-nothing; body, reset", function()
      local c = e:add("core:audio_source")
      c:set{ volume = 0.25, loop = true }
      assert.are.same({ 0.25, true }, { c.volume, c.loop })
      fails("InvalidArgument", c.set, c, { volume = 0.75, pitch = -1 })
      assert.are.same({ 0.25, true }, { c.volume, c.loop })
      local b = c:body()
      assert.are.equal(0.25, b.volume)
      assert.are.equal("effects", b.bus)
      c:reset("volume")
      assert.are.same({ 1, true }, { c.volume, c.loop })
      c:reset()
      assert.is_false(c.loop)
      fails("NotFound", c.reset, c, "nope")
    end)

    it("add with a body applies it; a bad body adds nothing", function()
      local c = e:add("core:audio_source", { volume = 0.5 })
      assert.are.equal(0.5, c.volume)
      fails("InvalidArgument", e.add, e, "core:audio_source", { volume = 9 })
      assert.are.equal(1, w:count("core:audio_source"))
    end)

    it("readonly fields are Unsupported from outside, writable by the kind's hooks", function()
      local c = e:add("cx:flags")
      fails("Unsupported", function() c.ro = 9 end)
      fails("Unsupported", c.set, c, { ro = 9 })
      w:step(1 / 60)
      assert.are.equal(3, c.ro)
    end)

    it("transient fields are not saved; nosave kinds are never written", function()
      local c = e:add("cx:flags")
      c.tr = 42
      e:add("cx:nosave")
      local y = w:dump()
      assert.falsy(y:find("tr:", 1, true))
      assert.falsy(y:find("cx:nosave", 1, true))
      assert.truthy(y:find("kind: cx:flags", 1, true))
    end)

    it("validate may reject a write; the value stays", function()
      local c = e:add("cx:valid")
      c.lo = 2
      assert.are.equal(2, c.lo)
      local err = fails("InvalidArgument", function() c.lo = 5 end)
      assert.truthy(err.message:find("lo must not exceed hi", 1, true))
      assert.are.equal(2, c.lo)
      fails("InvalidArgument", e.add, w:spawn("V"), "cx:valid", { lo = 9 })
    end)

    it("handles compare equal; a stale entity handle is NotFound even after index reuse", function()
      local a = w:spawn("A")
      assert.are.equal(a, w:find(a.uuid))
      assert.are.equal(e:get("core:transform"), w:find(e.uuid):get("core:transform"))
      a:destroy()
      local fresh = {}
      for i = 1, 8 do fresh[i] = w:spawn("N" .. i) end
      fails("NotFound", function() return a.name end)
      assert.is_false(a:alive())
      for i = 1, 8 do assert.are_not.equal(a, fresh[i]) end
    end)

    it("spawn checks the whole spec first: a refused spec changes nothing", function()
      local n = w:count()
      fails("InvalidArgument", w.spawn, w, { name = "Bad", components = { "core:transform", { "core:audio_source", volume = 9 } } })
      fails("InvalidOperation", w.spawn, w, { name = "Bad", components = { "core:audio_source" } })
      fails("InvalidOperation", w.spawn, w, { name = "Bad", components = { "cx:b", "cx:a" } })
      fails("NotFound", w.spawn, w, { name = "Bad", components = { "no:kind" } })
      assert.are.equal(n, w:count())
      assert.is_nil(w:find("Bad"))
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

-- c:set{} with a validate hook that changes the argument table: each case crashed under ASan or misbehaved before its fix.
do

  describe("c:set{} with a validate hook that changes the argument table", function()
    local k = key("set")
    local edit -- what validate does to the table being set, once
    keel.kind{ key = k, fields = { { "a", "int" }, { "b", "int" }, { "s", "string" } },
      validate = function(self, field)
        local f = edit
        edit = nil
        if f then f() end
        if field == "b" and self.b < 0 then return false, "b must not be negative" end
        return true
      end }

    it("writes the values it checked, not the ones validate put in their place", function()
      local c = keel.world("V"):spawn("e"):add(k)
      local t = { a = 1, b = 2, s = "checked" }
      edit = function() t.a, t.b, t.s = "not an int", 99, {} end
      c:set(t)
      assert.are.equal(1, c.a)
      assert.are.equal(2, c.b)
      assert.are.equal("checked", c.s)
    end)

    it("ignores keys validate adds (no write past what was checked)", function()
      local c = keel.world("V"):spawn("e"):add(k)
      local t = { a = 3, s = "x" }
      edit = function() for i = 1, 64 do t["extra" .. i] = i end; t.b = 7 end
      c:set(t)
      assert.are.equal(3, c.a)
      assert.are.equal(0, c.b)
      assert.are.equal("x", c.s)
    end)

    it("ignores a field validate adds (the undo array was sized by the first walk)", function()
      local c = keel.world("V"):spawn("e"):add(k)
      local t = { a = 4 }
      edit = function() t.b, t.s = 8, "added" end
      c:set(t)
      assert.are.equal(4, c.a)
      assert.are.equal(0, c.b)
      assert.are.equal("", c.s)
    end)

    it("keeps its strings alive when validate drops them from the table", function()
      local c = keel.world("V"):spawn("e"):add(k)
      local t = { a = 1, b = 1, s = ("long string "):rep(40) .. tostring(os.time()) }
      local want = t.s
      edit = function() t.s = nil; collectgarbage(); collectgarbage() end
      c:set(t)
      assert.are.equal(want, c.s)
    end)

    it("is still all or nothing: a refusal by validate undoes the earlier writes", function()
      local c = keel.world("V"):spawn("e"):add(k, { a = 5, b = 6, s = "old" })
      H.fails("InvalidArgument", function() c:set{ a = 1, b = -1, s = "new" } end)
      assert.are.equal(5, c.a)
      assert.are.equal(6, c.b)
      assert.are.equal("old", c.s)
    end)
  end)
end

-- gameplay.md "Smaller expectations": vector values by name, and c.faulted.
do

  describe("vector values", function()
    it("read as arrays that also answer .x .y .z .w and .r .g .b .a, through one shared metatable", function()
      local w = keel.world("V")
      local e = w:spawn{ name = "E", components = { "core:transform" } }
      local tr = e:get("core:transform")
      tr.position = { 1, 2, 3 }
      local p, r = tr.position, tr.rotation
      assert.are.same({ 1, 2, 3 }, { p[1], p[2], p[3] })
      assert.are.equal(3, #p)
      assert.are.equal(1, p.x)
      assert.are.equal(2, p.y)
      assert.are.equal(3, p.z)
      assert.are.equal(1, r.w)
      assert.are.equal(getmetatable(p), getmetatable(r))
      p.y = 7 -- by name, into item 2
      assert.are.equal(7, p[2])
      tr.position = p
      assert.are.equal(7, tr.position.y)
    end)

    it("accept either form when written: { x =, y =, z = } and { r =, g =, b = [, a =] }", function()
      local K = "cs:tint"
      keel.kind{ key = K, fields = { { "c", "color" }, { "v", "vec3" } },
        update = function(self) self.c = { r = 0.5, g = 0.25, b = 0 }; self.v = { x = 1, y = 2, z = 3 } end }
      local w = keel.world("V")
      local c = w:spawn("E"):add(K)
      c.c = { r = 1, g = 1, b = 1, a = 0.5 }
      assert.are.equal(0.5, c.c.a)
      w:step(1 / 60)
      assert.are.same({ 0.5, 0.25, 0, 1 }, { c.c[1], c.c[2], c.c[3], c.c[4] }) -- alpha defaults to 1
      assert.are.same({ 1, 2, 3 }, { c.v.x, c.v.y, c.v.z })
      H.fails("InvalidArgument", function() c.v = { x = 1, y = "two", z = 3 } end)
    end)
  end)

  describe("c.faulted", function()
    it("reads whether a hook failed; = false runs it again; hot reload clears it", function()
      local K = "cs:flaky"
      local fail, runs = true, 0
      local spec = { key = K, fields = { { "n", "int" } }, update = function(self)
        runs = runs + 1
        if fail then error("flaky") end
      end }
      keel.kind(spec)
      local w = keel.world("F")
      local c = w:spawn("E"):add(K)
      assert.is_false(c.faulted)
      w:step(1 / 60)
      assert.is_true(c.faulted)
      w:step(1 / 60)
      assert.are.equal(1, runs) -- skipped while faulted
      fail = false
      c.faulted = false
      w:step(1 / 60)
      assert.are.equal(2, runs)
      fail = true
      w:step(1 / 60)
      assert.is_true(c.faulted)
      fail = false
      keel.kind(spec) -- redeclared: it runs again
      assert.is_false(c.faulted)
      w:step(1 / 60)
      assert.are.equal(4, runs)
      H.fails("InvalidArgument", function() c.faulted = true end)
    end)
  end)
end
