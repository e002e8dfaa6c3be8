-- entity_spec.lua — Entity handles: staleness, identity, hierarchy, components.
local keel = require "keel"

local H = require "helper"
local fails, raises, code_of, assert_error = H.fails, H.raises, H.code_of, H.assert_error
local entities, names, joined_names, stack = H.entities, H.names, H.joined_names, H.stack
local doc, entity_text, comp_text, U1 = H.doc, H.entity_text, H.comp_text, H.U1
local UUID_PATTERN = H.UUID_PATTERN
local key = H.key_maker("entity")

-- The shared cx: kinds; LOG gathers what their tracers note.
local LOG = {}
setup(function() H.declare_cx_kinds(function(s) LOG[#LOG + 1] = s end) end)
before_each(function() LOG = {} end)

keel.kind{ key = "se:tag", fields = { { "n", "int", default = 0 } } }
keel.kind{ key = "se:link", fields = { { "target", "entity" } } }

describe("entity", function()
  describe("handles", function()
    it("are equal for the same entity and show state in tostring", function()
      local w = keel.world("H")
      local e = w:spawn("Player")
      assert.are.equal(e, w:find("Player"))
      assert.are_not.equal(e, w:spawn("Other"))
      assert.are.equal('keel.Entity "Player" ' .. e.uuid, tostring(e))
      e:destroy()
      assert.are.equal("keel.Entity (destroyed)", tostring(e))
    end)
    it("go stale after destroy: every use raises NotFound", function()
      local w = keel.world("H")
      local e = w:spawn("E")
      e:destroy()
      assert.is_false(e:alive())
      fails("NotFound", function() return e.name end)
      fails("NotFound", function() return e.uuid end)
      fails("NotFound", function() e:add("se:tag") end)
      fails("NotFound", function() e:get("se:tag") end)
      fails("NotFound", function() e:destroy() end)
      fails("NotFound", function() e.name = "x" end)
    end)
    it("stay stale after the index is reused and never reach the new entity", function()
      local w = keel.world("H")
      local old = w:spawn("Old")
      local comp = old:add("se:tag", { n = 1 })
      old:destroy()
      local fresh = {}
      for i = 1, 8 do fresh[i] = w:spawn("New" .. i) fresh[i]:add("se:tag", { n = 100 + i }) end
      assert.is_false(old:alive())
      fails("NotFound", function() return old.name end)
      fails("NotFound", function() return comp.n end)
      fails("NotFound", function() comp.n = 5 end)
      for i = 1, 8 do assert.are.equal(100 + i, fresh[i]:get("se:tag").n) end
      for _, e in ipairs(fresh) do assert.are_not.equal(old, e) end
    end)
    it("keep their world alive", function()
      local e = keel.world("Kept"):spawn("E")
      collectgarbage()
      collectgarbage()
      assert.are.equal("Kept", e.world.name)
      assert.is_true(e:alive())
    end)
    it("raise InvalidArgument for a wrong self", function()
      local w = keel.world("H")
      local e = w:spawn("E")
      fails("InvalidArgument", function() e.add({}, "se:tag") end)
      fails("InvalidArgument", function() e:add(42) end)
      fails("InvalidArgument", function() e:get("se:tag", -1) end)
    end)

    it("makes a handle to a destroyed entity fail with NotFound, even after its index is reused", function()
      local w = keel.world()
      local e = w:spawn("Gone")
      e:destroy()
      for i = 1, 50 do w:spawn("New" .. i) end
      assert.is_false(e:alive())
      assert.are.equal("NotFound", code_of(function() return e.name end))
      assert.are.equal("NotFound", code_of(function() e:add("core:transform") end))
      for other in w:entities() do assert.are_not.equal(e, other) end
    end)

    it("compares two handles to the same live entity or component equal with ==", function()
      local w = keel.world()
      local e = w:spawn("E")
      e:add("core:transform")
      assert.are.equal(e, w:find(e.uuid))
      assert.is_true(e == w:find("E"))
      assert.is_true(e:get("core:transform") == e:get("core:transform"))
      assert.is_false(e == w:spawn("E2"))
    end)
  end)

  describe("fields", function()
    it("name, parent and enabled are writable", function()
      local w = keel.world("F")
      local p = w:spawn("P")
      local e = w:spawn("E")
      e.name = "Renamed"
      assert.are.equal("Renamed", e.name)
      e.parent = p
      assert.are.equal(p, e.parent)
      assert.are.same({ e }, p:children())
      e.parent = nil
      assert.is_nil(e.parent)
      e.enabled = false
      assert.is_false(e.enabled)
      fails("InvalidArgument", function() e.enabled = "no" end)
      fails("InvalidArgument", function() e.name = {} end)
      fails("Unsupported", function() e.uuid = "x" end)
      fails("NotFound", function() e.bogus = 1 end)
    end)
    it("refuses a cycle with InvalidOperation", function()
      local w = keel.world("F")
      local a = w:spawn("a")
      local b = w:spawn{ name = "b", parent = a }
      local c = w:spawn{ name = "c", parent = b }
      fails("InvalidOperation", function() a.parent = c end)
      fails("InvalidOperation", function() a.parent = a end)
      assert.is_nil(a.parent)
    end)

    it("has uuid, writable name, parent and enabled, and its world", function()
      local w = keel.world()
      local a, b = w:spawn("A"), w:spawn("B")
      assert.are.equal(w, a.world)
      assert.is_true(a.enabled)
      assert.is_nil(a.parent)
      a.name = "Alpha"
      assert.are.equal("Alpha", a.name)
      b.parent = a
      assert.are.equal(a, b.parent)
      assert.are.same({ b }, a:children())
      b.parent = nil
      assert.is_nil(b.parent)
      a.enabled = false
      assert.is_false(a.enabled)
      assert.are.equal("InvalidArgument", code_of(function() a.name = 5 end))
    end)

    it("refuses writes to the properties the contract does not make writable (Unsupported)", function()
      local w = keel.world()
      local e = w:spawn{ name = "E", components = { "core:transform" } }
      local c = e:get("core:transform")
      for _, f in ipairs{ function() e.uuid = U1 end, function() e.world = w end, function() c.kind = "core:camera" end,
        function() c.slot = 2 end, function() c.loaded = false end, function() c.version = 3 end,
        function() c.entity = e end, function() w.uuid = U1 end, function() w.revision = 1 end, function() w.root = e end } do
        assert.are.equal("Unsupported", code_of(f))
      end
    end)

    it("name, parent and enabled are writable; uuid is not", function()
      local w = keel.world("W")
      local a, b = w:spawn("A"), w:spawn("B")
      a.name = "A2"
      assert.are.equal("A2", a.name)
      b.parent = a
      assert.are.equal(a, b.parent)
      b.parent = nil
      assert.is_nil(b.parent)
      a.enabled = false
      assert.is_false(a.enabled)
      assert.has_error(function() a.uuid = U1 end)
    end)
  end)

  describe(":destroy()", function()
    it("reparents children to the top level", function()
      local w = keel.world("D")
      local p = w:spawn("p")
      local c = w:spawn{ name = "c", parent = p }
      p:destroy()
      assert.is_true(c:alive())
      assert.is_nil(c.parent)
      assert.are.equal(1, w:count())
    end)
    it("makes entity fields pointing at it read nil", function()
      local w = keel.world("D")
      local t = w:spawn("t")
      local l = w:spawn("l"):add("se:link", { target = t })
      assert.are.equal(t, l.target)
      t:destroy()
      assert.is_nil(l.target)
    end)

    it("deletes an entity: on_destroy, records gone, children reparented to the top level", function()
      local k = key("bye")
      local destroyed = 0
      keel.kind{ key = k, on_destroy = function() destroyed = destroyed + 1 end }
      local w = keel.world()
      local p = w:spawn("P")
      p:add(k)
      local c = p:get(k)
      local child = w:spawn{ name = "C", parent = p }
      p:destroy()
      assert.are.equal(1, destroyed)
      assert.is_false(p:alive())
      assert.is_true(child:alive())
      assert.is_nil(child.parent)
      assert.are.equal("NotFound", code_of(function() return c.slot end))
      assert.are.same({ "C" }, names(entities(w)))
    end)

    it("destroy runs on_destroy and reparents children to the top level", function()
      local w = keel.world("D")
      local p = w:spawn{ name = "P", components = { "cx:trace_one" } }
      local c = w:spawn{ name = "C", parent = p }
      local g = w:spawn{ name = "G", parent = c }
      LOG = {}
      p:destroy()
      assert.are.same({ "destroy:b:P" }, LOG)
      assert.is_false(p:alive())
      assert.is_nil(c.parent)
      assert.are.equal(c, g.parent)
      assert.are.equal("C,G", joined_names(w.entities, w))
    end)
  end)

  describe(":duplicate()", function()
    it("copies components and slots under a new UUID", function()
      local w = keel.world("Dup")
      local e = w:spawn{ name = "E", components = { { "se:tag", n = 4 } } }
      local d = e:duplicate()
      assert.are_not.equal(e, d)
      assert.are_not.equal(e.uuid, d.uuid)
      assert.are.equal("E", d.name)
      assert.are.equal(4, d:get("se:tag").n)
      fails("ProtectedEntity", function() w.root:duplicate() end)
    end)
    it("remaps entity fields inside the subtree", function()
      local w = keel.world("Dup")
      local p = w:spawn("p")
      local c = w:spawn{ name = "c", parent = p }
      p:add("se:link", { target = c })
      local p2 = p:duplicate()
      local c2 = p2:children()[1]
      assert.are.equal(c2, p2:get("se:link").target)
      assert.are.equal(c, p:get("se:link").target)
    end)

    it("duplicates an entity with every entry in the same slots, unknown bodies included, under a new UUID", function()
      local k = key("dup")
      local w = assert(keel.parse(doc(entity_text(U1, "E", comp_text("core:transform", 1, 0, "          position: [1, 2, 3]")
        .. comp_text("core:audio_source", 1, 2, "          volume: 0.5") .. comp_text(k, 1, 0, "          x: 1")))))
      local e = w:find(U1)
      local d = e:duplicate()
      assert.are_not.equal(e, d)
      assert.are_not.equal(e.uuid, d.uuid)
      assert.truthy(d.uuid:match(UUID_PATTERN))
      local got = {}
      for i, c in ipairs(d:components()) do got[i] = c.kind .. "/" .. c.slot .. "/" .. tostring(c.loaded) end
      assert.are.same({ "core:transform/0/true", "core:audio_source/2/true", k .. "/0/false" }, got)
      assert.are.same({ 1, 2, 3 }, d:get("core:transform").position)
      assert.are.equal(0.5, d:get("core:audio_source", 2).volume)
      local saved = w:dump()
      local _, count = saved:gsub("x: 1", "")
      assert.are.equal(2, count)
    end)

    it("duplicates a subtree, remapping entity fields that point inside it", function()
      local k = key("ref")
      keel.kind{ key = k, fields = { { "target", "entity" } } }
      local w = keel.world()
      local outside = w:spawn("Outside")
      local p = w:spawn("P")
      local c = w:spawn{ name = "C", parent = p }
      p:add(k, { target = c })
      c:add(k, { target = outside })
      local p2 = p:duplicate()
      local c2 = p2:children()[1]
      assert.truthy(c2)
      assert.are_not.equal(c, c2)
      assert.are.equal(c2, p2:get(k).target)
      assert.are.equal(outside, c2:get(k).target)
    end)

    it("duplicates under a given parent", function()
      local w = keel.world()
      local a, p = w:spawn("A"), w:spawn("P")
      local d = a:duplicate(p)
      assert.are.equal(p, d.parent)
    end)

    it("duplicate copies slots under a new UUID and remaps entity fields inside the subtree", function()
      local w = keel.world("Dup")
      local top = w:spawn("Top")
      local a = w:spawn{ name = "A", parent = top, components = { "cx:vals", "cx:vals" } }
      local b = w:spawn{ name = "B", parent = top, components = { "cx:vals" } }
      local out = w:spawn("Out")
      a:remove("cx:vals", 0)
      a:get("cx:vals", 1).target = b
      b:get("cx:vals", 0).target = out
      local top2 = top:duplicate()
      assert.are_not.equal(top.uuid, top2.uuid)
      local kids = top2:children()
      assert.are.equal(2, #kids)
      assert.are.equal("cx:vals#1", stack(kids[1]))
      assert.are.equal(kids[2], kids[1]:get("cx:vals", 1).target)
      assert.are.equal(out, kids[2]:get("cx:vals", 0).target)
      local under = a:duplicate(out)
      assert.are.equal(out, under.parent)
    end)
  end)

  describe(":components()", function()
    it("lists components in membership order", function()
      local w = keel.world("M")
      local e = w:spawn{ components = { "core:transform", "se:tag" } }
      local list = e:components()
      assert.are.equal(2, #list)
      assert.are.equal("core:transform", list[1].kind)
      assert.are.equal("se:tag", list[2].kind)
      assert.are.equal(e:get("se:tag"), list[2])
    end)

    it("keeps the membership list ordered, by add order", function()
      local k = key("m")
      keel.kind{ key = k, multiplicity = "many" }
      local e = keel.world():spawn("E")
      e:add("core:transform")
      e:add(k)
      e:add("core:camera")
      e:add(k)
      local got = {}
      for i, c in ipairs(e:components()) do got[i] = c.kind .. "/" .. c.slot end
      assert.are.same({ "core:transform/0", k .. "/0", "core:camera/0", k .. "/1" }, got)
    end)
  end)

  describe(":add(), :get(), :has(), :remove()", function()
    it("adds with a body and removes returning the body", function()
      local w = keel.world("A")
      local e = w:spawn("e")
      local c = e:add("se:tag", { n = 3 })
      assert.is_true(e:has("se:tag"))
      assert.are.equal(c, e:get("se:tag"))
      local body = e:remove("se:tag")
      assert.are.same({ n = 3 }, body)
      assert.is_false(e:has("se:tag"))
      assert.is_nil(e:get("se:tag"))
      fails("NotFound", function() return c.n end)
    end)
    it("raises NotFound for an unknown kind or a missing component", function()
      local w = keel.world("A")
      local e = w:spawn("e")
      fails("NotFound", function() e:add("nope:nothing") end)
      fails("NotFound", function() e:remove("se:tag") end)
      fails("NotFound", function() e:add("se:tag", { nofield = 1 }) end)
      fails("InvalidArgument", function() e:add("se:tag", { n = "x" }) end)
      fails("InvalidArgument", function() e:add("se:tag", 5) end)
      assert.is_false(e:has("se:tag"))
    end)
    it("finds the kind of each key when adds of different kinds alternate (the key lookup is memoized)", function()
      local w = keel.world("A")
      for i = 1, 3 do
        local e = w:spawn("e" .. i)
        local t = e:add("se:tag", { n = i })
        local l = e:add("se:link", { target = e })
        assert.are.equal(i, t.n)
        assert.are.equal(e, l.target)
        assert.is_true(e:has("se:tag") and e:has("se:link"))
        local err = fails("NotFound", function() e:add("se:tagx") end)
        assert.are.equal("no kind 'se:tagx'", err.message)
        assert.are.equal(i, e:get("se:tag").n) -- the miss did not disturb the memo
      end
      keel.kind{ key = "se:late", fields = { { "z", "int", default = 7 } } }
      assert.are.equal(7, w:spawn("late"):add("se:late").z)
    end)

    it("e:add refuses what is not a live entity handle of a kind key, naming the argument", function()
      local w = keel.world("A")
      local e = w:spawn("e")
      local c = e:add("se:tag")
      local function msg(f) return fails("InvalidArgument", f).message end
      assert.are.equal("bad argument #1 (keel.Entity expected, got no value)", msg(function() e.add() end))
      assert.are.equal("bad argument #1 (a kind key expected, got no value)", msg(function() e.add(e) end))
      for _, other in ipairs({ w, c, io.stdout, {} }) do -- a World, a Component, a foreign userdata, a table
        assert.is_truthy(msg(function() e.add(other, "se:tag") end):find("keel.Entity expected", 1, true))
      end
      assert.are.equal("bad argument #1 (a kind key expected, got nil)", msg(function() e:add(nil) end))
      assert.are.equal("bad argument #1 (a kind key holds a NUL byte)", msg(function() e:add("se:tag\0x") end))
      assert.are.equal("bad argument #3 (a slot must be a non-negative integer)", msg(function() e:add("se:link", nil, -1) end))
      assert.is_false(e:has("se:link"))
      local w2 = keel.world("B")
      local e2 = w2:spawn("x")
      w2:close()
      assert.are.equal("the entity belongs to a closed world (stale handle)", fails("NotFound", function() e2:add("se:tag") end).message)
      assert.are.equal(5, w:spawn("f"):add("se:tag", { n = 5 }, nil, "ignored").n)
    end)

    it("w:spawn refuses what is not an open World", function()
      local w = keel.world("S")
      local e = w:spawn("e")
      for _, other in ipairs({ e, io.stdout, {} }) do
        assert.is_truthy(fails("InvalidArgument", function() w.spawn(other, "x") end).message:find("keel.World expected", 1, true))
      end
      assert.are.equal("spawn: a name holds a NUL byte", fails("InvalidArgument", function() w:spawn("a\0b") end).message)
      w:close()
      assert.are.equal("the world is closed", fails("NotFound", function() w:spawn("x") end).message)
    end)

    it("e:add(kind, body, slot) returns the component; e:get without a slot gives a many kind's lowest slot", function()
      local e = keel.world():spawn{ name = "E", components = { "core:transform" } }
      local c5 = e:add("core:audio_source", { volume = 0.5 }, 5)
      assert.are.equal(5, c5.slot)
      assert.are.equal(0.5, c5.volume)
      local c2 = e:add("core:audio_source", nil, 2)
      assert.are.equal(c2, e:get("core:audio_source"))
      assert.is_true(e:has("core:audio_source"))
      assert.is_false(e:has("core:camera"))
      assert.is_nil(e:get("core:camera"))
      assert.are.equal(6, e:add("core:audio_source").slot)
      assert.are.equal("InvalidOperation", code_of(function() e:add("core:audio_source", nil, 5) end))
    end)

    it("e:remove returns the removed body as a plain table; the slot may be omitted for a one kind", function()
      local e = keel.world():spawn{ name = "E", components = { { "core:transform", position = { 1, 2, 3 } } } }
      e:add("core:audio_source", { volume = 0.25 }, 3)
      local body = e:remove("core:audio_source", 3)
      assert.are.equal("table", type(body))
      assert.is_nil(getmetatable(body))
      assert.are.equal(0.25, body.volume)
      local t = e:remove("core:transform")
      assert.are.same({ 1, 2, 3 }, t.position)
      assert.is_false(e:has("core:transform"))
    end)

    describe("e:remove(key) of an unknown kind without a slot", function()
      local function crane_world()
        local w = assert(keel.load(H.ROOT .. "/scenes/unknown_kind.yaml"))
        return w, w:find("Crane"), w:find("Dock")
      end
      local function winches(e)
        local n = 0
        for _, c in ipairs(e:components()) do if c.kind == "mod:winch" then n = n + 1 end end
        return n
      end

      it("is InvalidOperation when the entity holds several, and removes nothing", function()
        local w, crane = crane_world()
        local before = w:dump()
        local err = assert_error("InvalidOperation", raises(crane.remove, crane, "mod:winch"))
        assert.truthy(err.message:find("slot", 1, true), err.message)
        assert.are.equal(2, winches(crane))
        assert.are.equal(before, w:dump())
      end)

      it("removes the only one when there is nothing to guess", function()
        local _, crane, dock = crane_world()
        assert.are.equal(12.5, dock:remove("mod:winch").rope_length)
        assert.are.equal(0, winches(dock))
        assert.are.equal(8, crane:remove("mod:winch", 2).rope_length)
        assert.are.equal(30, crane:remove("mod:winch").rope_length)
        assert.are.equal(0, winches(crane))
      end)

      it("behaves the same through history, whose undo still works", function()
        local history = require "keel.history"
        local w, crane = crane_world()
        local h = history.new(w)
        assert_error("InvalidOperation", raises(h.remove, h, crane, "mod:winch"))
        assert.is_false(h:undo())
        h:remove(crane, "mod:winch", 0)
        assert.are.equal(1, winches(crane))
        assert.is_true(h:undo())
        assert.are.equal(2, winches(crane))
      end)

      it("leaves e:get(key) at the lowest slot, as for many kinds", function()
        local _, crane = crane_world()
        assert.are.equal(0, crane:get("mod:winch").slot)
        assert.are.equal(2, crane:get("mod:winch", 2).slot)
      end)
    end)
  end)

  describe("identity", function()
    it("writes scene and entity UUIDs in lowercase 8-4-4-4-12 form, version 4", function()
      local w = keel.world("Arena")
      for _, u in ipairs{ w.uuid, w:spawn("A").uuid, w:spawn("B").uuid } do
        assert.truthy(u:match(UUID_PATTERN), u)
        assert.are.equal(u:lower(), u)
        assert.are.equal("4", u:sub(15, 15))
        assert.truthy(u:sub(20, 20):match("[89ab]"))
      end
    end)

    it("gives every entity a unique UUID", function()
      local w = keel.world()
      local seen = {}
      for i = 1, 200 do
        local u = w:spawn("E" .. i).uuid
        assert.is_nil(seen[u])
        seen[u] = true
      end
    end)

    it("entity UUIDs are canonical lowercase version 4", function()
      local w = keel.world("U")
      for _ = 1, 50 do
        local u = w:spawn("x").uuid
        assert.truthy(u:match("^%x+%-%x+%-4%x%x%x%-[89ab]%x%x%x%-%x+$"), u)
        assert.are.equal(u:lower(), u)
        assert.truthy(u:match(UUID_PATTERN))
      end
    end)
  end)

  describe("hierarchy", function()
    it("keeps children ordered", function()
      local w = keel.world()
      local p = w:spawn("P")
      for _, n in ipairs{ "c1", "c2", "c3" } do w:spawn{ name = n, parent = p } end
      assert.are.same({ "c1", "c2", "c3" }, names(p:children()))
    end)

    it("refuses a parent that would make a cycle with InvalidOperation", function()
      local w = keel.world()
      local a = w:spawn("A")
      local b = w:spawn{ name = "B", parent = a }
      local c = w:spawn{ name = "C", parent = b }
      assert.are.equal("InvalidOperation", code_of(function() a.parent = c end))
      assert.are.equal("InvalidOperation", code_of(function() a.parent = a end))
      assert.is_nil(a.parent)
    end)

    it("setting a parent that makes a cycle is InvalidOperation", function()
      local w = keel.world("Cy")
      local a = w:spawn("A")
      local b = w:spawn{ name = "B", parent = a }
      fails("InvalidOperation", function() a.parent = b end)
      fails("InvalidOperation", function() a.parent = a end)
      assert.is_nil(a.parent)
    end)
  end)

  describe("limits", function()
    it("keeps the hierarchy depth and components per entity limits at run time too (LimitExceeded)", function()
      local w = keel.world()
      local p
      for i = 1, 256 do p = w:spawn{ name = "N" .. i, parent = p } end
      assert.are.equal("LimitExceeded", code_of(function() w:spawn{ name = "Deep", parent = p } end))
      local top = w:spawn("Top")
      assert.are.equal("LimitExceeded", code_of(function() w:find("N1").parent = top end))
      local m = w:spawn{ name = "M", components = { "core:transform" } }
      for _ = 1, 255 do m:add("core:audio_source") end
      assert.are.equal("LimitExceeded", code_of(function() m:add("core:audio_source") end))
      assert.are.equal(256, #m:components())
    end)

    it("runtime operations respect the limits too", function()
      local w = keel.world("Lim")
      local e = w:spawn("E")
      fails("LimitExceeded", function() for _ = 1, 257 do e:add("cx:actor") end end)
      assert.are.equal(256, #e:components())
      fails("LimitExceeded", function() e:get("cx:actor", 0).n = 1; w:spawn{ components = { { "cx:vals", s = string.rep("x", 70000) } } } end)
    end)
  end)
end)
