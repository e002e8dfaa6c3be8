-- world_spec.lua — keel.world / keel.load / keel.parse and the World methods.
local keel = require "keel"

local H = require "helper"
local fails, raises, code_of = H.fails, H.raises, H.code_of
local entities, names, joined_names = H.entities, H.names, H.joined_names
local U1, UUID_PATTERN = H.U1, H.UUID_PATTERN
local key = H.key_maker("world")

-- The shared cx: kinds; LOG gathers what their tracers note.
local LOG = {}
setup(function() H.declare_cx_kinds(function(s) LOG[#LOG + 1] = s end) end)
before_each(function() LOG = {} end)

keel.kind{ key = "sw:tag", fields = { { "n", "int", default = 0 } } }
keel.kind{ key = "sw:many", multiplicity = "many", fields = { { "v", "float" } } }

local UUID = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"

describe("world", function()
  describe("keel.world()", function()
    it("makes an empty named scene with a UUID", function()
      local w = keel.world("Arena")
      assert.are.equal("Arena", w.name)
      assert.truthy(w.uuid:match(UUID))
      assert.are.equal(0, w:count())
      assert.truthy(tostring(w):match('^keel%.World "Arena"'))
    end)
    it("has a writable name and a revision that moves on change", function()
      local w = keel.world("A")
      w.name = "B"
      assert.are.equal("B", w.name)
      local r = w.revision
      w:spawn("E")
      assert.is_true(w.revision > r)
      fails("InvalidArgument", function() w.name = 3 end)
      fails("Unsupported", function() w.uuid = "x" end)
    end)
    it("sets no globals", function()
      assert.is_nil(rawget(_G, "keel"))
    end)

    it("keel.world(name) makes a new empty scene with uuid, name, root, revision", function()
      local w = keel.world("Arena")
      assert.are.equal("Arena", w.name)
      assert.truthy(w.uuid:match(UUID_PATTERN))
      assert.truthy(w.root)
      assert.are.equal("number", type(w.revision))
      assert.are.equal(0, w:count())
    end)

    it("keel.world gives uuid, name, root, revision", function()
      local w = keel.world("Arena")
      assert.truthy(w.uuid:match(UUID_PATTERN))
      assert.are.equal("4", w.uuid:sub(15, 15)) -- keel generates version 4
      assert.are.equal("Arena", w.name)
      assert.truthy(w.root)
      assert.are.equal("number", type(w.revision))
    end)
  end)

  describe(".root", function()
    it("is an entity handle that is not listed and cannot be destroyed, renamed or moved", function()
      local w = keel.world("R")
      local root = w.root
      assert.truthy(tostring(root):match("root"))
      assert.are.equal(root, w.root)
      local e = w:spawn("E")
      for x in w:entities() do assert.are_not.equal(root, x) end
      fails("ProtectedEntity", function() root:destroy() end)
      fails("ProtectedEntity", function() root.name = "x" end)
      fails("ProtectedEntity", function() root.parent = e end)
      assert.are.equal(1, w:count())
    end)
    it("holds root-only components", function()
      local w = keel.world("R")
      local c = w.root:add("core:world_settings")
      assert.is_true(c.loaded)
      assert.are.equal("core:world_settings", c.kind)
      fails("InvalidOperation", function() w:spawn("E"):add("core:world_settings") end)
    end)

    it("is never listed, counted or queried among entities", function()
      local w = keel.world()
      w.root:add("core:world_settings")
      w:spawn("E"):add("core:transform")
      assert.are.same({ "E" }, names(entities(w)))
      assert.are.equal(1, w:count())
      assert.are.equal(0, w:count("core:world_settings"))
      for e in w:each("core:world_settings") do assert.are_not.equal(w.root, e) end
      for e in w:query("core:world_settings") do assert.are_not.equal(w.root, e) end
      assert.is_nil(w:find(w.root.uuid))
    end)

    it("is never destroyed or duplicated: ProtectedEntity", function()
      local w = keel.world()
      assert.are.equal("ProtectedEntity", code_of(function() w.root.parent = w:spawn("P") end))
      assert.are.equal("ProtectedEntity", code_of(function() w.root.name = "Renamed" end))
      assert.are.equal("ProtectedEntity", code_of(function() w.root.enabled = false end))
      assert.are.equal("ProtectedEntity", code_of(function() w.root:destroy() end))
      assert.are.equal("ProtectedEntity", code_of(function() w.root:duplicate() end))
      assert.is_true(w.root:alive())
    end)

    it("holds core:world_settings, which only the root may hold", function()
      local w = keel.world()
      local s = w.root:add("core:world_settings")
      assert.are.same({ 0.2, 0.2, 0.25, 1 }, s.ambient)
      assert.are.equal("InvalidOperation", code_of(function() w:spawn("E"):add("core:world_settings") end))
    end)

    it("holds game rules and runs them before any entity in every phase", function()
      local k = key("rules")
      local order = {}
      local function rec(phase) return function(self, e) order[#order + 1] = phase .. ":" .. (e == e.world.root and "root" or e.name) end end
      keel.kind{ key = k, start = rec("start"), update = rec("update"), late_update = rec("late"), fixed_update = rec("fixed") }
      local w = keel.world()
      w:spawn("A"):add(k)
      w.root:add(k)
      w:step(1 / 60)
      assert.are.same({ "start:root", "start:A", "fixed:root", "fixed:A", "update:root", "update:A", "late:root", "late:A" }, order)
    end)

    it("is protected, not listed among entities, holds scene-wide kinds only", function()
      local w = keel.world("R")
      local e = w:spawn("E")
      local root = w.root
      fails("ProtectedEntity", root.destroy, root)
      fails("ProtectedEntity", root.duplicate, root)
      assert.is_true(root:alive())
      for x in w:entities() do assert.are_not.equal(root, x) end
      assert.is_nil(w:find(root.uuid))
      assert.are.equal(1, w:count())
      assert.are.equal("core:world_settings", root:add("core:world_settings").kind)
      fails("InvalidOperation", e.add, e, "core:world_settings")
      fails("InvalidOperation", root.add, root, "core:transform")
      root:add("cx:trace_many")
      e:add("cx:trace_many")
      local n = 0
      for x in w:each("cx:trace_many") do n = n + 1; assert.are.equal(e, x) end
      assert.are.equal(1, n)
    end)

    it("root components run before any entity's in every phase", function()
      local w = keel.world("R")
      w:spawn{ name = "E", components = { "cx:trace_many" } }
      w.root:add("cx:trace_many")
      LOG = {}
      w:step(1 / 60)
      assert.are.same({ "start:a:", "start:a:E", "fixed:a:", "fixed:a:E", "update:a:", "update:a:E",
        "late:a:", "late:a:E" }, LOG)
    end)
  end)

  describe(":spawn()", function()
    it("takes a name", function()
      local w = keel.world("S")
      local e = w:spawn("Player")
      assert.are.equal("Player", e.name)
      assert.truthy(e.uuid:match(UUID))
      assert.are.equal(w, e.world)
    end)
    it("takes a spec with parent, enabled and components", function()
      local w = keel.world("S")
      local p = w:spawn("P")
      local e = w:spawn{ name = "C", parent = p, enabled = false,
        components = { { "core:transform", position = { 0, 1.5, 0 } }, "sw:tag" } }
      assert.are.equal(p, e.parent)
      assert.is_false(e.enabled)
      assert.are.same({ 0, 1.5, 0 }, e:get("core:transform").position)
      assert.is_true(e:has("sw:tag"))
    end)
    it("is all or nothing", function()
      local w = keel.world("S")
      fails("NotFound", function() w:spawn{ name = "X", components = { "sw:tag", "nope:kind" } } end)
      fails("InvalidArgument", function() w:spawn{ name = "X", components = { { "sw:tag", n = "three" } } } end)
      fails("NotFound", function() w:spawn{ name = "X", components = { { "sw:tag", bogus = 1 } } } end)
      assert.are.equal(0, w:count())
    end)
    it("refuses wrong argument types", function()
      local w = keel.world("S")
      fails("InvalidArgument", function() w:spawn(42) end)
      fails("InvalidArgument", function() w:spawn{ name = 1 } end)
      fails("InvalidArgument", function() w:spawn{ parent = "nope" } end)
      -- a number is not a kind key, alone or as an entry's [1]
      fails("InvalidArgument", function() w:spawn{ components = { 5 } } end)
      fails("InvalidArgument", function() w:spawn{ components = { { 5 } } } end)
      assert.are.equal(0, w:count())
    end)

    it("makes every operation fully happen or change nothing", function()
      local w = keel.world()
      local e = w:spawn{ name = "E", components = { "core:transform" } }
      local r = w.revision
      assert.are.equal("InvalidOperation", code_of(function()
        w:spawn{ name = "Bad", components = { "core:transform", "core:transform" } }
      end))
      assert.are.equal(1, w:count())
      assert.are.equal(r, w.revision)
      assert.are.equal("InvalidArgument", code_of(function() e:get("core:transform"):set{ position = { 1, 1, 1 }, scale = "big" } end))
      assert.are.same({ 0, 0, 0 }, e:get("core:transform").position)
    end)

    it("runs no hook and bumps no revision for a spawn spec the rules refuse", function()
      local k = key("spawnhooks")
      local log = {}
      keel.kind{ key = k, requires = { "core:transform" }, awake = function() log[#log + 1] = "awake" end,
        on_destroy = function() log[#log + 1] = "destroy" end }
      local w = keel.world()
      local r = w.revision
      for _, comps in ipairs{ { "core:transform", k, k }, { "core:transform", k, "core:camera", "no:such" },
        { k, "core:transform" }, { "core:transform", k, { "core:camera", fov = 500 } },
        { "core:transform", k, "core:point_light", "core:spot_light" }, { "core:transform", k, "core:world_settings" } } do
        raises(function() w:spawn{ name = "Bad", components = comps } end)
      end
      local long = { "core:transform", k }
      for _ = 1, 20 do long[#long + 1] = "core:audio_source" end
      long[#long + 1] = k
      raises(function() w:spawn{ name = "Long", components = long } end)
      assert.are.same({}, log)
      assert.are.equal(r, w.revision)
      assert.are.equal(0, w:count())
      long[#long] = nil
      assert.are.equal(22, #w:spawn{ name = "Long", components = long }:components())
    end)

    it("w:spawn takes a name or a spec with parent and components", function()
      local w = keel.world()
      local other = w:spawn("Other")
      local e = w:spawn{ name = "Player", parent = other,
        components = { { "core:transform", position = { 0, 1.5, 0 } }, "core:camera" } }
      assert.are.equal("Player", e.name)
      assert.are.equal(other, e.parent)
      assert.are.same({ 0, 1.5, 0 }, e:get("core:transform").position)
      assert.is_true(e:has("core:camera"))
    end)

    it("w:spawn refuses a spec with unknown keys or a non-boolean enabled (InvalidArgument)", function()
      local w = keel.world()
      local p = w:spawn("P")
      assert.are.equal("InvalidArgument", code_of(function() w:spawn{ name = "C", parnet = p } end))
      assert.are.equal("InvalidArgument", code_of(function() w:spawn{ name = "C", enabled = "no" } end))
      assert.are.equal("InvalidArgument", code_of(function() w:spawn{ name = "C", parent = "P" } end))
      assert.are.equal("NotFound", code_of(function() w:spawn{ name = "C", components = { { "core:transform", postion = { 1, 2, 3 } } } } end))
      assert.are.equal(1, w:count())
      assert.is_false(w:spawn{ name = "D", enabled = false }.enabled)
    end)

    it("reads each component body once, yet an awake run by an earlier add sees to what the later bodies hold", function()
      local kt, kl, ka = key("sp_target"), key("sp_label"), key("sp_awake")
      keel.kind{ key = kt, fields = { { "target", "entity" }, { "x", "float", default = 0 } } }
      keel.kind{ key = kl, fields = { { "label", "string", default = "" } } }
      local w = keel.world()
      local victim = w:spawn("victim")
      local spec
      keel.kind{ key = ka, fields = {}, awake = function()
        victim:destroy()
        spec.components[3].label = "changed by awake" .. ("!"):rep(40)
        collectgarbage()
      end }
      -- the awake destroys the entity a later body points to: that add refuses, nothing is left
      spec = { name = "E", components = { { ka }, { kt, target = victim }, { kl, label = "first" } } }
      local r = w.revision
      local err = fails("NotFound", function() w:spawn(spec) end)
      assert.are.equal("stale handle: field 'target': the entity was destroyed", err.message)
      assert.are.equal(0, w:count())
      assert.is_true(w.revision > r)
      -- a body changed by an earlier add's awake is read as it is at its own add
      local target = w:spawn("target")
      victim = w:spawn("other victim")
      spec = { name = "F", components = { { ka }, { kt, target = target, x = 2 }, { kl, label = "first" } } }
      local e = w:spawn(spec)
      assert.are.equal(target, e:get(kt).target)
      assert.are.equal(2, e:get(kt).x)
      assert.are.equal("changed by awake" .. ("!"):rep(40), e:get(kl).label)
      -- without awake, every body is taken as checked; a spec read through a metatable still works
      local g = w:spawn(setmetatable({}, { __index = { name = "G", components = { { kt, target = target, x = 3 }, { kl, label = "l" } } } }))
      assert.are.equal("G", g.name)
      assert.are.equal(3, g:get(kt).x)
      assert.are.equal("l", g:get(kl).label)
      fails("InvalidArgument", function() w:spawn(setmetatable({ nmae = "x" }, {})) end)
    end)

    it("gives the same handle object an awake got for the entity it spawns", function()
      local k = key("sp_find")
      local seen
      local w = keel.world()
      keel.kind{ key = k, fields = {}, awake = function() seen = w:find("Found") end }
      local e = w:spawn{ name = "Found", components = { k } }
      assert.is_true(rawequal(seen, e))
      assert.is_true(rawequal(w:spawn("plain"), w:find("plain")))
    end)

    it("spawn by name and by spec; e fields", function()
      local w = keel.world("S")
      local p = w:spawn("Player")
      assert.truthy(p.uuid:match(UUID_PATTERN))
      assert.are.equal("Player", p.name)
      assert.is_nil(p.parent)
      assert.is_true(p.enabled)
      assert.are.equal(w, p.world)
      assert.is_true(p:alive())
      local r = w:spawn{ name = "Runner", parent = p,
        components = { { "core:transform", position = { 0, 1.5, 0 } }, "cx:stamina" } }
      assert.are.equal(p, r.parent)
      assert.are.same({ 0, 1.5, 0 }, r:get("core:transform").position)
      assert.are.equal(100, r:get("cx:stamina").value)
      assert.are.equal(1, #p:children())
      assert.are.equal(r, p:children()[1])
      assert.is_false(w:spawn{ name = "D", enabled = false }.enabled)
    end)
  end)

  describe(":close()", function()
    it("frees the world now: handles go stale, closing twice is harmless", function()
      local w = keel.world("C")
      local e = w:spawn("e")
      w:close()
      w:close()
      assert.are.equal("keel.World (closed)", tostring(w))
      assert.is_false(e:alive())
      local ok, err = pcall(function() return w:count() end)
      assert.is_false(ok)
      assert.are.equal("NotFound", err.code)
    end)
    it("is refused during the world's own step", function()
      local w = keel.world("C")
      keel.kind{ key = "sw:closer", fields = {}, update = function(self, e) e.world:close() end }
      w:spawn("e"):add("sw:closer")
      w:step(1 / 60)
      assert.truthy(w:errors()[1].message:match("cannot be closed"))
      do
        local scoped <close> = keel.world("scoped")
        scoped:spawn("x")
      end
    end)
  end)

  describe(":find()", function()
    it("finds by UUID first, then by name", function()
      local w = keel.world("F")
      local a = w:spawn("A")
      local b = w:spawn("B")
      assert.are.equal(a, w:find(a.uuid))
      assert.are.equal(b, w:find("B"))
      assert.is_nil(w:find("nobody"))
      assert.is_nil(w:find("00000000-0000-4000-8000-000000000000"))
      fails("InvalidArgument", function() w:find(1) end)
    end)

    it("finds an entity by its new name after a rename, not by the old one", function()
      local w = keel.world()
      local e = w:spawn("Old")
      e.name = "New"
      assert.is_nil(w:find("Old"))
      assert.are.equal(e, w:find("New"))
      local twin = w:spawn("New")
      e:destroy()
      assert.are.equal(twin, w:find("New"))
    end)

    it("w:find looks for a UUID string first, then the first entity with that name", function()
      local w = keel.world()
      local a = w:spawn("Twin")
      w:spawn("Twin")
      local named = w:spawn(a.uuid)
      assert.are.equal(a, w:find("Twin"))
      assert.are.equal(a, w:find(a.uuid))
      assert.are.equal(named, w:find(named.uuid))
      assert.is_nil(w:find("nobody"))
    end)

    -- "the first entity with that name": first in run order (hierarchy pre-order), the order
    -- that survives save and load (README, "The Lua face").
    it("w:find by name gives the first match in run order, the same after a reload", function()
      local w = keel.world()
      local t1 = w:spawn("T1")
      w:spawn("X")
      local x2 = w:spawn{ name = "X", parent = t1 }
      assert.are.equal(x2, w:find("X"))
      assert.are.equal(x2.uuid, assert(keel.parse(w:dump())):find("X").uuid)
    end)

    it("find: a UUID first, else the first entity with that name; nil when none", function()
      local w = keel.world("F")
      local a = w:spawn("A")
      local b = w:spawn(a.uuid) -- an entity named like another's UUID
      local a2 = w:spawn("A")
      assert.are.equal(a, w:find(a.uuid))
      assert.are.equal(a, w:find("A"))
      assert.is_nil(w:find("nobody"))
      assert.is_nil(w:find(U1))
      assert.are_not.equal(a2, w:find("A"))
      assert.truthy(b)
    end)
  end)

  describe(":entities()", function()
    it("iterates in run order: hierarchy pre-order", function()
      local w = keel.world("O")
      local a = w:spawn("a")
      local b = w:spawn("b")
      local a1 = w:spawn{ name = "a1", parent = a }
      local a2 = w:spawn{ name = "a2", parent = a }
      local b1 = w:spawn{ name = "b1", parent = b }
      local a11 = w:spawn{ name = "a11", parent = a1 }
      local names = {}
      for e in w:entities() do names[#names + 1] = e.name end
      assert.are.same({ "a", "a1", "a11", "a2", "b", "b1" }, names)
      assert.are.same({ a1, a2 }, a:children())
      assert.is_nil(a.parent)
      assert.are.equal(a1, a11.parent)
      local _ = b1
    end)
    it("is to-be-closed: break frees it", function()
      local w = keel.world("O")
      for i = 1, 5 do w:spawn("e" .. i) end
      local f, s, c, closer = w:entities()
      assert.truthy(tostring(closer):match("keel%.Query"))
      local n = 0
      for e in f, s, c, closer do
        n = n + 1
        if n == 2 then break end
      end
      assert.are.equal(2, n)
      assert.are.equal("keel.Query (closed)", tostring(closer))
    end)
    it("skips entities destroyed during the loop", function()
      local w = keel.world("O")
      local list = {}
      for i = 1, 4 do list[i] = w:spawn("e" .. i) end
      local seen = 0
      for e in w:entities() do
        seen = seen + 1
        if e == list[1] then list[3]:destroy() end
      end
      assert.are.equal(3, seen)
    end)

    it("entities() walks run order: pre-order, join order, children in sibling order", function()
      local w = keel.world("O")
      local p = w:spawn("P")
      local q = w:spawn("Q")
      local c = w:spawn{ name = "C", parent = p }
      w:spawn{ name = "G", parent = c }
      w:spawn{ name = "C2", parent = p }
      assert.are.equal("P,C,G,C2,Q", joined_names(w.entities, w))
      assert.truthy(q)
    end)
  end)

  describe(":each()", function()
    it("gives (entity, component) once per slot", function()
      local w = keel.world("E")
      local e = w:spawn("e")
      e:add("sw:many", { v = 1 })
      e:add("sw:many", { v = 2 })
      w:spawn("f"):add("sw:many", { v = 3 })
      local sum, n = 0, 0
      for ent, c in w:each("sw:many") do
        assert.are.equal(ent, c.entity)
        sum = sum + c.v
        n = n + 1
      end
      assert.are.equal(3, n)
      assert.are.equal(6, sum)
      fails("NotFound", function() w:each("nope:kind") end)
      fails("InvalidArgument", function() w:each(3) end)
    end)
    it("closes on break", function()
      local w = keel.world("E")
      for i = 1, 3 do w:spawn("e"):add("sw:tag", { n = i }) end
      local f, s, c, closer = w:each("sw:tag")
      for _ in f, s, c, closer do break end
      assert.are.equal("keel.Query (closed)", tostring(closer))
    end)

    it("w:each gives one (entity, component) per slot; w:query gives entities holding all", function()
      local w = keel.world()
      local a = w:spawn{ name = "A", components = { "core:transform", "core:audio_source", "core:audio_source" } }
      local b = w:spawn{ name = "B", components = { "core:transform", "core:camera" } }
      local n, slots = 0, {}
      for e, c in w:each("core:audio_source") do n = n + 1; slots[#slots + 1] = c.slot; assert.are.equal(a, e) end
      assert.are.equal(2, n)
      assert.are.same({ 0, 1 }, slots)
      local hits = {}
      for e, t, cam in w:query("core:transform", "core:camera") do
        hits[#hits + 1] = e
        assert.are.equal("core:transform", t.kind)
        assert.are.equal("core:camera", cam.kind)
      end
      assert.are.same({ b }, hits)
    end)
  end)

  describe(":query()", function()
    it("gives entities holding all kinds, with their components", function()
      local w = keel.world("Q")
      local a = w:spawn{ name = "a", components = { "core:transform", "sw:tag" } }
      w:spawn{ name = "b", components = { "core:transform" } }
      w:spawn{ name = "c", components = { "sw:tag" } }
      local rows = {}
      for e, t, g in w:query("core:transform", "sw:tag") do
        rows[#rows + 1] = e
        assert.are.equal("core:transform", t.kind)
        assert.are.equal("sw:tag", g.kind)
      end
      assert.are.same({ a }, rows)
      fails("InvalidArgument", function() w:query() end)
    end)
    it("closes on break", function()
      local w = keel.world("Q")
      for _ = 1, 3 do w:spawn{ components = { "sw:tag" } } end
      local f, s, c, closer = w:query("sw:tag")
      for _ in f, s, c, closer do break end
      assert.are.equal("keel.Query (closed)", tostring(closer))
    end)

    it("count, each (one per slot) and query", function()
      local w = keel.world("C")
      w:spawn{ name = "A", components = { "core:transform", "core:audio_source", "core:audio_source" } }
      w:spawn{ name = "B", components = { "core:transform" } }
      assert.are.equal(2, w:count())
      assert.are.equal(2, w:count("core:transform"))
      assert.are.equal(2, w:count("core:audio_source"))
      local rows = {}
      for e, c in w:each("core:audio_source") do rows[#rows + 1] = e.name .. c.slot end
      assert.are.same({ "A0", "A1" }, rows)
      local q = {}
      for e, t, s in w:query("core:transform", "core:audio_source") do
        q[#q + 1] = e.name
        assert.are.equal("core:transform", t.kind)
        assert.are.equal("core:audio_source", s.kind)
      end
      assert.are.same({ "A" }, { q[1] })
    end)
  end)

  describe(":count()", function()
    it("counts entities, or components of a kind", function()
      local w = keel.world("C")
      local e = w:spawn("e")
      w:spawn("f")
      e:add("sw:many")
      e:add("sw:many")
      assert.are.equal(2, w:count())
      assert.are.equal(2, w:count("sw:many"))
      assert.are.equal(0, w:count("sw:tag"))
    end)

    it("w:count([kind])", function()
      local w = keel.world()
      w:spawn{ name = "A", components = { "core:transform", "core:audio_source", "core:audio_source" } }
      w:spawn("B")
      assert.are.equal(2, w:count())
      assert.are.equal(1, w:count("core:transform"))
      assert.are.equal(0, w:count("core:camera"))
    end)
  end)

  describe(":dump() and keel.parse()", function()
    it("round-trips a world", function()
      local w = keel.world("Dump")
      local e = w:spawn{ name = "Player", components = { { "core:transform", position = { 1, 2, 3 } }, { "sw:tag", n = 7 } } }
      local text = w:dump()
      assert.truthy(text:match("name: Player"))
      local w2 = assert(keel.parse(text))
      assert.are.equal(w.uuid, w2.uuid)
      local e2 = w2:find(e.uuid)
      assert.are.equal(7, e2:get("sw:tag").n)
      assert.are.same({ 1, 2, 3 }, e2:get("core:transform").position)
      assert.are.equal(text, w2:dump())
    end)
    it("round-trips a scene-root component that names an entity", function()
      keel.kind{ key = "sw:rule", fields = { { "hero", "entity" } } }
      local w = keel.world("Rule")
      local hero = w:spawn("Hero")
      w.root:add("sw:rule", { hero = hero })
      local w2 = assert(keel.parse(w:dump()))
      assert.are.equal(hero.uuid, w2.root:get("sw:rule").hero.uuid)
    end)
    it("names the earliest stage's problem first: values, then references, then the hierarchy", function()
      local w = keel.world("Order")
      local a, b, c = w:spawn("A"), w:spawn("B"), w:spawn("C")
      a:add("core:transform")
      b.parent, c.parent = a, b
      local text = w:dump()
      text = text:gsub("position: %[0, 0, 0%]", "position: yes", 1)           -- a value (entity A)
      local at = text:find("parent: " .. a.uuid, 1, true)                     -- a reference (B)
      text = text:sub(1, at + 7) .. ("0"):rep(8) .. text:sub(at + 16)
      local _, err = keel.parse(text)
      assert.are.same({ "InvalidArgument", "NotFound" },
        { err.diagnostics[1].code, err.diagnostics[2].code })
      assert.are.equal("InvalidArgument", err.code)
      assert.are.equal("entities[0].components[0].body.position", err.diagnostics[1].path)
    end)
    it("warns about what a file holds but a save drops: a nosave kind, a transient field", function()
      keel.kind{ key = "sw:runtime", nosave = true, fields = { { "a", "int" } } }
      keel.kind{ key = "sw:cached", fields = { { "a", "int" }, { "cache", "int", transient = true } } }
      local w = keel.world("Drop")
      local e = w:spawn("E")
      local text = w:dump():gsub("components: %[%]", "components:\n"
        .. "  - {kind: sw:runtime, version: 1, body: {a: 1}}\n"
        .. "  - {kind: sw:cached, version: 1, body: {a: 2, cache: 5}}")
      local w2 = assert(keel.parse(text))
      local warnings = w2:warnings()
      assert.are.equal(2, #warnings)
      assert.are.equal("sw:runtime is nosave (runtime only): loaded, but never saved", warnings[1].message)
      assert.are.equal("entities[0].components[1].body.cache", warnings[2].path)
      assert.are.equal(5, w2:find(e.uuid):get("sw:cached").cache) -- read all the same
      assert.falsy(w2:dump():find("cache:", 1, true))
    end)
    it("lists schema problems first even when a value problem comes earlier in the file", function()
      local w = keel.world("Order2")
      w.root:add("core:world_settings")
      w:spawn("A")
      local text = w:dump():gsub("exposure: 1", "exposure: yes", 1):gsub("(%- uuid: )%x+", "%1not-a-uuid", 1)
      local _, err = keel.parse(text)
      assert.are.equal("ParseError", err.code)
      assert.are.same({ "ParseError", "InvalidArgument" }, { err.diagnostics[1].code, err.diagnostics[2].code })
      assert.are.equal("root[0].body.exposure", err.diagnostics[2].path)
    end)
    it("does not call a root component's entity reference unknown when the entities list is refused", function()
      keel.kind{ key = "sw:rule2", fields = { { "hero", "entity" } } }
      local w = keel.world("Rule2")
      w.root:add("sw:rule2", { hero = w:spawn("Hero") })
      w:spawn("Other")
      local _, err = keel.parse(w:dump(), { limits = { entities = 1 } })
      assert.are.equal(1, #err.diagnostics) -- the hero is in the file: no NotFound beside the limit
      assert.are.equal("LimitExceeded", err.code)
    end)
    it("returns nil, err for a bad document", function()
      local w, err = keel.parse("keel: 1\nscene: [")
      assert.is_nil(w)
      assert.are.equal("ParseError", err.code)
      assert.truthy(tostring(err):match("^ParseError: "))
      assert.truthy(#err.diagnostics >= 1)
      assert.are.equal("error", err.diagnostics[1].severity)
    end)
    it("applies limits from opts", function()
      local w = keel.world("L")
      for i = 1, 3 do w:spawn("e" .. i) end
      local w2, err = keel.parse(w:dump(), { limits = { entities = 2 } })
      assert.is_nil(w2)
      assert.are.equal("LimitExceeded", err.code)
    end)
    it("keeps unknown kinds and reports them in w:warnings()", function()
      local w = keel.world("U")
      local text = w:dump():gsub("entities: %[%]", [[
entities:
  - uuid: 11111111-1111-4111-8111-111111111111
    name: Winch
    components:
      - kind: mod:winch_sw
        version: 1
        slot: 0
        body:
          length: 3]])
      local w2 = assert(keel.parse(text))
      local warns = w2:warnings()
      assert.are.equal(1, #warns)
      assert.are.equal("warning", warns[1].severity)
      assert.truthy(warns[1].message:match("mod:winch_sw"))
      local e = w2:find("Winch")
      local c = e:components()[1]
      assert.is_false(c.loaded)
      assert.are.equal("mod:winch_sw", c.kind)
      assert.are.same({ length = 3 }, c:body())
      local again = w2:dump()
      assert.truthy(again:match("mod:winch_sw"))
      assert.are.equal(again, assert(keel.parse(again)):dump())
    end)

    it("w:dump gives the canonical YAML text", function()
      local w = keel.world("Dumped")
      local text = w:dump()
      assert.truthy(text:find("^keel: 1\n"))
      assert.truthy(text:find("name: Dumped", 1, true))
      local again = assert(keel.parse(text))
      assert.are.equal(text, again:dump())
    end)
  end)

  describe("keel.load() and :save()", function()
    it("returns nil, err for a missing file", function()
      local w, err = keel.load("/nonexistent/scene.yaml")
      assert.is_nil(w)
      assert.are.equal("IOError", err.code)
    end)
    it("saves atomically and loads back", function()
      local w = keel.world("Saved")
      w:spawn{ name = "A", components = { { "sw:tag", n = 2 } } }
      local path = os.tmpname()
      assert.is_true(w:save(path))
      local w2 = assert(keel.load(path))
      assert.are.equal(2, w2:find("A"):get("sw:tag").n)
      os.remove(path)
      local ok, err = w:save("/nonexistent/dir/x.yaml")
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
    end)
    it("checks asset fields against the assets.yaml beside the scene, as the keel program does", function()
      local dir = H.tmpdir()
      local w = keel.world("Assets")
      w:spawn{ name = "M", components = { "core:transform",
        { "core:mesh_renderer", mesh = "0a55e700-0000-4000-8000-0000000000ee" } } }
      assert.is_true(w:save(dir .. "/s.yaml"))
      H.spit(dir .. "/assets.yaml",
        "assets:\n  - {uuid: 0a55e700-0000-4000-8000-000000000001, path: a.mesh, type: mesh}\n")
      local w2 = assert(keel.load(dir .. "/s.yaml"))
      assert.truthy(w2:warnings()[1].message:find("not in the manifest; using a placeholder", 1, true))
      local none, err = keel.load(dir .. "/s.yaml", { strict = true })
      assert.is_nil(none)
      assert.are.equal("NotFound", err.code)
      assert.truthy(keel.load(dir .. "/s.yaml", { strict = true, assets = false }), "false: no manifest")
      assert.is_nil(keel.load(dir .. "/s.yaml", { strict = true, assets = dir .. "/assets.yaml" }))
      fails("InvalidArgument", keel.load, dir .. "/s.yaml", { assets = true })
      H.rmrf(dir)
    end)
  end)
end)

-- w:close() inside a callback of its world: each case crashed under ASan or misbehaved before its fix.
do

  describe("w:close() inside a callback of its world", function()
    it("refuses inside awake: InvalidOperation, and the world stays usable", function()
      local w = keel.world("C")
      local seen
      local k = key("awake")
      keel.kind{ key = k, fields = { { "x", "float" } },
        awake = function(self) self.x = 5; seen = H.refused(function() w:close() end) end }
      local c = w:spawn("e"):add(k)
      assert.is_true(seen)
      assert.are.equal(5, c.x)
      assert.are.equal(1, w:count())
    end)

    it("refuses inside awake when the hook does not catch it: the failure is recorded, nothing is freed", function()
      local w = keel.world("C")
      local k = key("awake")
      keel.kind{ key = k, fields = { { "x", "float" } }, awake = function(self) self.x = 2; w:close() end }
      local e = w:spawn("e")
      e:add(k)
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.are.equal("awake", errs[1].phase)
      assert.truthy(errs[1].message:match("cannot be closed"), errs[1].message)
      assert.is_true(e:alive())
      assert.are.equal(1, w:count())
      w:close()
      assert.are.equal("keel.World (closed)", tostring(w))
    end)

    it("refuses inside on_destroy", function()
      local w = keel.world("C")
      local seen
      local k = key("destroy")
      keel.kind{ key = k, fields = { { "x", "float" } },
        on_destroy = function(self) self.x = 3; seen = H.refused(function() w:close() end) end }
      local e = w:spawn("e")
      e:add(k)
      e:destroy()
      assert.is_true(seen)
      assert.are.equal(0, w:count())
    end)

    it("refuses inside validate", function()
      local w = keel.world("C")
      local seen
      local k = key("validate")
      keel.kind{ key = k, fields = { { "x", "float" } },
        validate = function() seen = H.refused(function() w:close() end); return true end }
      local c = w:spawn("e"):add(k)
      c.x = 4
      assert.is_true(seen)
      assert.are.equal(4, c.x)
    end)

    it("refuses inside a migrate step run by keel.persist.load", function()
      local d = H.tmpdir()
      local k = key("migrate")
      keel.kind{ key = k, fields = { { "kmh", "float" } } }
      local w = keel.world("M")
      w:spawn{ name = "E", components = { { k, kmh = 1 } } }
      local text = w:dump()
      local base = keel.persist.baseline(w)
      w:find("E"):get(k).kmh = 36
      assert(keel.persist.save(w, base, d .. "/g.sav"))
      local fresh = assert(keel.parse(text))
      local seen
      keel.kind{ key = k, version = 2, fields = { { "ms", "float" } },
        migrate = { [2] = function(body)
          seen = H.refused(function() fresh:close() end)
          body.ms = body.kmh / 3.6; body.kmh = nil
          return body
        end } }
      assert.is_true(keel.persist.load(fresh, d .. "/g.sav"))
      assert.is_true(seen)
      assert.are.equal(10, fresh:find("E"):get(k).ms)
      H.rmrf(d)
    end)

    it("refuses inside step phases as before, with the same code", function()
      local w = keel.world("C")
      local seen
      local k = key("update")
      keel.kind{ key = k, fields = {}, update = function() seen = H.refused(function() w:close() end) end }
      w:spawn("e"):add(k)
      w:step(1 / 60)
      assert.is_true(seen)
    end)

    it("still closes another world from inside a callback", function()
      local w, other = keel.world("C"), keel.world("O")
      local k = key("other")
      keel.kind{ key = k, fields = {}, awake = function() other:close() end }
      w:spawn("e"):add(k)
      assert.are.equal("keel.World (closed)", tostring(other))
    end)
  end)
end

-- Committed state only (design/worlds.md): inside a callback transaction of its world, w:save,
-- w:dump and w:close refuse with InvalidOperation, so a file never sees state that may roll back.
describe("world inside a callback transaction", function()
  local n = 0
  local function key(what)
    n = n + 1
    return ("cs:%s%d"):format(what, n)
  end
  -- The error a call raised inside a hook, kept for the test to look at.
  local function caught(f)
    local ok, err = pcall(f)
    return not ok and err or "no error"
  end

  it("w:save refuses, and the file is not written even when the hook then fails", function()
    local d = H.tmpdir()
    local w = keel.world("S")
    local err
    local k = key("save")
    keel.kind{ key = k, fields = { { "x", "float" } }, update = function(self, e)
      self.x = 99
      w:spawn("Rolled back")
      err = caught(function() w:save(d .. "/s.yaml") end)
      error("then it fails")
    end }
    local c = w:spawn("e"):add(k)
    w:step(1 / 60)
    assert.are.equal("table", type(err))
    assert.are.equal("InvalidOperation", err.code)
    assert.are.equal("w:save refuses while a callback transaction is open", err.message)
    assert.is_false(H.file_exists(d .. "/s.yaml"))
    assert.are.equal(0, c.x)
    assert.is_nil(w:find("Rolled back"))
    assert.is_true(w:save(d .. "/s.yaml")) -- outside the callback it saves
    H.rmrf(d)
  end)

  it("w:dump refuses inside awake, in or out of a step, and works again after", function()
    local w = keel.world("D")
    local errs = {}
    local k = key("dump")
    keel.kind{ key = k, fields = {}, awake = function() errs[#errs + 1] = caught(function() return w:dump() end) end,
      update = function(self, e) errs[#errs + 1] = caught(function() return w:dump() end) end }
    w:spawn("e"):add(k)
    w:step(1 / 60)
    assert.are.equal(2, #errs)
    for _, err in ipairs(errs) do
      assert.are.equal("InvalidOperation", err.code)
      assert.are.equal("w:dump refuses while a callback transaction is open", err.message)
    end
    assert.truthy(w:dump():match("name: e"))
  end)

  it("w:close refuses with the same words, in awake and in a step", function()
    local w = keel.world("C")
    local errs = {}
    local k = key("close")
    keel.kind{ key = k, fields = {}, awake = function() errs[#errs + 1] = caught(function() w:close() end) end,
      update = function() errs[#errs + 1] = caught(function() w:close() end) end }
    w:spawn("e"):add(k)
    w:step(1 / 60)
    assert.are.equal(2, #errs)
    for _, err in ipairs(errs) do
      assert.are.equal("InvalidOperation", err.code)
      assert.truthy(err.message:find("w:close refuses while a callback transaction is open", 1, true), err.message)
    end
    assert.are.equal(1, w:count())
  end)

  it("does not stop another world's save or dump: only the world whose transaction is open refuses", function()
    local d = H.tmpdir()
    local w, other = keel.world("W"), keel.world("O")
    other:spawn("x")
    local text, saved
    local k = key("other")
    keel.kind{ key = k, fields = {}, awake = function()
      text = other:dump()
      saved = other:save(d .. "/o.yaml")
    end }
    w:spawn("e"):add(k)
    assert.truthy(text:match("name: x"))
    assert.is_true(saved)
    H.rmrf(d)
  end)
end)

-- gameplay.md "Smaller expectations": disabled entities and components are skipped unless asked.
do
  local keel = require "keel"
  describe("w:each, w:query and w:count(kind) with disabled ones", function()
    it("skip disabled entities (and their subtrees) and disabled components unless { all = true }", function()
      keel.kind{ key = "sw:filt", fields = { { "n", "int" } } }
      local w = keel.world("F")
      local a = w:spawn("A")
      a:add("sw:filt")
      local b = w:spawn("B")
      b:add("sw:filt")
      local c = w:spawn{ name = "C", parent = b }
      c:add("sw:filt")
      local d = w:spawn("D")
      d:add("sw:filt").enabled = false
      b.enabled = false
      local function names(iter)
        local t = {}
        for e in iter do t[#t + 1] = e.name end
        table.sort(t)
        return table.concat(t, ",")
      end
      assert.are.equal(1, w:count("sw:filt"))
      assert.are.equal(4, w:count("sw:filt", { all = true }))
      assert.are.equal("A", names(w:each("sw:filt")))
      assert.are.equal("A,B,C,D", names(w:each("sw:filt", { all = true })))
      assert.are.equal("A", names(w:query("sw:filt")))
      assert.are.equal("A,B,C,D", names(w:query("sw:filt", { all = true })))
    end)
  end)
end
