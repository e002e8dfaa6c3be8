-- contract_ext_spec.lua — an outside reader's checks of DESIGN.md: the Lua face
-- and the `keel` program, written from the contract alone (black box).

local H = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helper.lua")
local ROOT, shell_quote, file_exists, slurp, spit, tmpdir, rmrf =
  H.ROOT, H.shell_quote, H.file_exists, H.slurp, H.spit, H.tmpdir, H.rmrf
local fails = H.fails

local keel = require "keel"
local history = require "keel.history"

local function abs(p)
  if p and p:sub(1, 1) ~= "/" then return ROOT .. "/" .. p end
  return p
end
local KEEL = os.getenv("KEEL")
if not KEEL or KEEL == "" then KEEL = H.find_keel() end
KEEL = abs(KEEL)

local SCENES = ROOT .. "/scenes"
local FIXTURES = ROOT .. "/tests/fixtures"

local function run(args, cwd, input) return H.run_keel(KEEL, args, input, cwd) end

local UUID_RE = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"

local HEAD = "keel: 1\nscene:\n  uuid: 550e8400-e29b-41d4-a716-446655440000\n  name: T\n"
local U1 = "11111111-1111-1111-1111-111111111111"
local U2 = "22222222-2222-2222-2222-222222222222"
local U3 = "33333333-3333-3333-3333-333333333333"

local function comp(kind, body, slot, version)
  return "      - kind: " .. kind .. "\n        version: " .. (version or 1) .. "\n        slot: " .. (slot or 0)
    .. "\n        body: " .. body .. "\n"
end
local function ent(uuid, name, extra, comps)
  return "  - uuid: " .. uuid .. "\n    name: " .. name .. "\n" .. (extra or "") .. "    components:\n"
    .. (comps or "      []\n")
end
local function doc(...)
  return HEAD .. "entities:\n" .. table.concat({ ... })
end

-- Parses text that must fail; returns the error object (checks nil, err).
local function parse_fails(code, text, opts)
  local w, err = keel.parse(text, opts)
  assert.is_nil(w)
  assert.are.equal("table", type(err))
  assert.are.equal(code, err.code, tostring(err))
  return err
end

local function names(iter, ...)
  local t = {}
  for e in iter(...) do t[#t + 1] = e.name end
  return table.concat(t, ",")
end

local function stack(e)
  local t = {}
  for i, c in ipairs(e:components()) do t[i] = c.kind .. "#" .. c.slot end
  return table.concat(t, ",")
end

-- Kinds used below (namespace cx:). Declared once: the registry is process-wide.
local LOG = {}
local CTX = {}
local function L(s) LOG[#LOG + 1] = s end
local function tracer(tag)
  return {
    awake = function(self, e) L("awake:" .. tag .. ":" .. e.name) end,
    start = function(self, e) L("start:" .. tag .. ":" .. e.name) end,
    fixed_update = function(self, e, dt) L("fixed:" .. tag .. ":" .. e.name) end,
    update = function(self, e, dt) L("update:" .. tag .. ":" .. e.name) end,
    late_update = function(self, e, dt) L("late:" .. tag .. ":" .. e.name) end,
    on_destroy = function(self, e) L("destroy:" .. tag .. ":" .. e.name) end,
  }
end

setup(function()
  local a = tracer("a"); a.key = "cx:trace_many"; a.multiplicity = "many"; a.fields = { { "x", "float", default = 0 } }
  keel.kind(a)
  local b = tracer("b"); b.key = "cx:trace_one"; b.fields = { { "x", "float", default = 0 } }
  keel.kind(b)
  keel.kind{ key = "cx:stamina", display = "Stamina", category = "Gameplay",
    version = 1, multiplicity = "one",
    requires = { "core:transform" }, rejects = {},
    fields = {
      { "value", "float", default = 100, min = 0, max = 100 },
      { "max", "float", default = 100, min = 1, max = 500 },
      { "sprinting", "bool" },
      { "mode", "enum", choices = { "walk", "run" }, default = "walk" },
    },
    update = function(self, entity, dt)
      if self.sprinting then self.value = self.value - 20 * dt end
    end,
  }
  keel.kind{ key = "cx:vals", multiplicity = "many", fields = {
    { "i", "int", default = 3, min = 0, max = 10 },
    { "f", "float", default = 0 },
    { "s", "string", default = "hi" },
    { "v2", "vec2" }, { "v3", "vec3", default = { 1, 2, 3 } }, { "v4", "vec4" },
    { "q", "quat" }, { "c", "color", default = { 1, 1, 1, 1 } },
    { "a", "asset" }, { "target", "entity" },
    { "e", "enum", choices = { "x", "y" }, default = "x" },
  } }
  keel.kind{ key = "cx:flags", fields = {
    { "tr", "int", default = 1, transient = true },
    { "ro", "int", default = 2, readonly = true },
    { "hid", "int", default = 3, hidden = true },
  }, update = function(self) self.ro = self.ro + 1 end }
  keel.kind{ key = "cx:nosave", nosave = true, fields = { { "x", "int", default = 0 } } }
  keel.kind{ key = "cx:capped", multiplicity = "many", max = 2, fields = {} }
  keel.kind{ key = "cx:b", fields = {} }
  keel.kind{ key = "cx:a", fields = {}, rejects = { "cx:b" } }
  keel.kind{ key = "cx:needs_b", fields = {}, requires = { "cx:b" } }
  keel.kind{ key = "cx:valid", fields = { { "lo", "int", default = 1 }, { "hi", "int", default = 2 } },
    validate = function(self, field) if self.lo > self.hi then return false, "lo must not exceed hi" end end }
  keel.kind{ key = "cx:actor", multiplicity = "many", fields = { { "n", "int", default = 0 } },
    update = function(self, e, dt)
      L("u:" .. e.name)
      local f = CTX[e.name]
      if f then CTX[e.name] = nil; f(self, e) end
    end }
  keel.kind{ key = "cx:mig", version = 3, fields = { { "speed", "float", default = 1 }, { "trail", "string", default = "" } },
    migrate = {
      [2] = function(body) body.speed = body.velocity / 3.6; body.velocity = nil; body.trail = "2"; return body end,
      [3] = function(body) body.trail = body.trail .. "3"; return body end,
    } }
end)

describe("DESIGN contract (outside reader)", function()
  before_each(function() LOG = {} ; CTX = {} end)

  describe("the kind registry", function()
    it("keel.kind returns and registers; kind_info has the documented shape", function()
      local info = keel.kind_info("cx:stamina")
      assert.are.equal("cx:stamina", info.key)
      assert.are.equal("Stamina", info.display)
      assert.are.equal("Gameplay", info.category)
      assert.are.equal(1, info.version)
      assert.are.equal("one", info.multiplicity)
      assert.are.same({ "core:transform" }, info.requires)
      assert.are.same({}, info.rejects)
      assert.is_false(info.builtin)
      assert.are.equal(4, #info.fields)
      local f = info.fields
      assert.are.same({ "value", "max", "sprinting", "mode" }, { f[1].key, f[2].key, f[3].key, f[4].key })
      assert.are.same({ "float", "float", "bool", "enum" }, { f[1].type, f[2].type, f[3].type, f[4].type })
      assert.are.equal(100, f[1].default)
      assert.are.equal(0, f[1].min)
      assert.are.equal(100, f[1].max)
      assert.are.same({ "walk", "run" }, f[4].choices)
      assert.are.equal("walk", f[4].default)
      for _, fl in ipairs(f) do
        assert.is_false(fl.transient)
        assert.is_false(fl.readonly)
        assert.is_false(fl.hidden)
      end
    end)

    it("kind_info of an unknown key is nil", function()
      assert.is_nil(keel.kind_info("nope:nope"))
    end)

    it("kind_info carries max for a capped many kind and field flags", function()
      local info = keel.kind_info("cx:capped")
      assert.are.equal("many", info.multiplicity)
      assert.are.equal(2, info.max)
      local fl = keel.kind_info("cx:flags").fields
      assert.is_true(fl[1].transient)
      assert.is_true(fl[2].readonly)
      assert.is_true(fl[3].hidden)
    end)

    it("keel.kinds() is an array sorted by key, including built-ins", function()
      local ks = keel.kinds()
      assert.is_true(#ks >= 9)
      for i = 2, #ks do assert.is_true(ks[i - 1].key < ks[i].key) end
      local seen = {}
      for _, k in ipairs(ks) do seen[k.key] = k end
      for _, key in ipairs { "core:transform", "core:mesh_renderer", "core:point_light", "core:spot_light",
        "core:directional_light", "core:reflection_probe", "core:camera", "core:audio_source",
        "core:world_settings" } do
        assert.truthy(seen[key], key)
        assert.is_true(seen[key].builtin)
      end
      assert.are.equal("many", seen["core:audio_source"].multiplicity)
      assert.are.equal("one", seen["core:transform"].multiplicity)
    end)

    it("built-in transform has position vec3, rotation quat, scale vec3", function()
      local f = keel.kind_info("core:transform").fields
      assert.are.same({ "position", "vec3" }, { f[1].key, f[1].type })
      assert.are.same({ "rotation", "quat" }, { f[2].key, f[2].type })
      assert.are.same({ "scale", "vec3" }, { f[3].key, f[3].type })
      assert.are.same({ 0, 0, 0, 1 }, f[2].default)
      assert.are.same({ 1, 1, 1 }, f[3].default)
    end)

    it("audio_source bus choices are music, effects, ambience, voice", function()
      for _, f in ipairs(keel.kind_info("core:audio_source").fields) do
        if f.key == "bus" then
          assert.are.equal("enum", f.type)
          assert.are.same({ "music", "effects", "ambience", "voice" }, f.choices)
        end
      end
    end)

    it("bad declarations raise InvalidArgument", function()
      fails("InvalidArgument", keel.kind, { key = "Bad Key", fields = {} })
      fails("InvalidArgument", keel.kind, { key = "cx:bt", fields = { { "x", "flaot" } } })
      fails("InvalidArgument", keel.kind, { key = "cx:bm", multiplicity = "two", fields = {} })
    end)

    it("redeclaring a key carries live instances over by field name", function()
      keel.kind{ key = "cx:hot", fields = { { "a", "int", default = 1 }, { "b", "int", default = 2 } } }
      local w = keel.world("Hot")
      local e = w:spawn{ name = "H", components = { { "cx:hot", a = 10, b = 20 } } }
      keel.kind{ key = "cx:hot", fields = { { "b", "int", default = 0 }, { "c", "int", default = 3 } } }
      assert.are.same({ b = 20, c = 3 }, e:get("cx:hot"):body())
    end)
  end)

  describe("worlds and entities", function()
    it("keel.world gives uuid, name, root, revision", function()
      local w = keel.world("Arena")
      assert.truthy(w.uuid:match(UUID_RE))
      assert.are.equal("4", w.uuid:sub(15, 15)) -- keel generates version 4
      assert.are.equal("Arena", w.name)
      assert.truthy(w.root)
      assert.are.equal("number", type(w.revision))
    end)

    it("spawn by name and by spec; e fields", function()
      local w = keel.world("S")
      local p = w:spawn("Player")
      assert.truthy(p.uuid:match(UUID_RE))
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

    it("entity UUIDs are canonical lowercase version 4", function()
      local w = keel.world("U")
      for _ = 1, 50 do
        local u = w:spawn("x").uuid
        assert.truthy(u:match("^%x+%-%x+%-4%x%x%x%-[89ab]%x%x%x%-%x+$"), u)
        assert.are.equal(u:lower(), u)
        assert.truthy(u:match(UUID_RE))
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

    it("entities() walks run order: pre-order, join order, children in sibling order", function()
      local w = keel.world("O")
      local p = w:spawn("P")
      local q = w:spawn("Q")
      local c = w:spawn{ name = "C", parent = p }
      w:spawn{ name = "G", parent = c }
      w:spawn{ name = "C2", parent = p }
      assert.are.equal("P,C,G,C2,Q", names(w.entities, w))
      assert.truthy(q)
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

    it("setting a parent that makes a cycle is InvalidOperation", function()
      local w = keel.world("Cy")
      local a = w:spawn("A")
      local b = w:spawn{ name = "B", parent = a }
      fails("InvalidOperation", function() a.parent = b end)
      fails("InvalidOperation", function() a.parent = a end)
      assert.is_nil(a.parent)
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
      assert.are.equal("C,G", names(w.entities, w))
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

  describe("components and slots", function()
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

  describe("the scene root", function()
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

  describe("lifecycle", function()
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

    it("step and run validate their arguments", function()
      local w = keel.world("Args")
      fails("InvalidArgument", w.step, w, -1)
      fails("InvalidArgument", w.step, w, 0 / 0)
      fails("InvalidArgument", w.run, w, -1)
      w:step()
      w:run(2)
    end)
  end)

  describe("unknown kinds", function()
    local SRC = SCENES .. "/unknown_kind.yaml"

    it("load, list as loaded == false, refuse edits, keep byte for byte", function()
      local w, err = keel.load(SRC)
      assert.truthy(w, tostring(err))
      local warns = w:warnings()
      local n = 0
      for _, d in ipairs(warns) do
        if d.message:find("mod:winch", 1, true) then
          n = n + 1
          assert.truthy(d.message:find("3 components kept", 1, true))
        end
      end
      assert.are.equal(1, n)
      local crane = w:find("Crane")
      assert.are.equal("core:transform#0,mod:winch#0,mod:winch#2", stack(crane))
      local u = crane:get("mod:winch", 2)
      assert.is_false(u.loaded)
      assert.are.equal("mod:winch", u.kind)
      assert.are.equal(2, u.slot)
      assert.is_true(crane:has("mod:winch"))
      fails("Unsupported", function() return u.rope_length end)
      fails("Unsupported", function() u.rope_length = 3 end)
      fails("Unsupported", u.set, u, { rope_length = 3 })
      fails("Unsupported", u.reset, u)
      local dir = tmpdir()
      assert.is_true(w:save(dir .. "/out.yaml"))
      assert.are.equal(slurp(SRC), slurp(dir .. "/out.yaml"))
      rmrf(dir)
    end)

    it("unknown components can be duplicated and removed", function()
      local w = assert(keel.load(SRC))
      local crane = w:find("Crane")
      local d = crane:duplicate()
      assert.are.equal(stack(crane), stack(d))
      assert.are.equal("table", type(d:remove("mod:winch", 2)))
      assert.are.equal("core:transform#0,mod:winch#0", stack(d))
      assert.are.equal(4, select(2, w:dump():gsub("kind: mod:winch", "")))
    end)

    it("declaring the key later adopts them in the same slots and runs awake", function()
      -- a private key: the registry is process-wide, other specs rely on mod:winch staying unknown
      local w = assert(keel.parse(doc(ent(U1, "Crane", nil, comp("core:transform", "{}") ..
        comp("cxu:late", "{rope_length: 30}", 0, 3) .. comp("cxu:late", "{rope_length: 8, label: \"aux: backup\"}", 2, 3)))))
      local crane = w:find("Crane")
      assert.is_false(crane:get("cxu:late", 2).loaded)
      local awoke = 0
      keel.kind{ key = "cxu:late", version = 3, multiplicity = "many",
        fields = { { "rope_length", "float", default = 1 }, { "label", "string" } },
        awake = function() awoke = awoke + 1 end }
      local u = crane:get("cxu:late", 2)
      assert.is_true(u.loaded)
      assert.are.equal(8, u.rope_length)
      assert.are.equal("aux: backup", u.label)
      assert.are.equal(30, crane:get("cxu:late", 0).rope_length)
      assert.are.equal(2, awoke)
    end)

    it("a newer version than the kind knows is kept as unknown", function()
      local w = assert(keel.parse(doc(ent(U1, "A", nil, comp("core:transform", "{}") ..
        comp("core:audio_source", "{volume: 7}", 0, 9)))))
      local c = w:find("A"):get("core:audio_source", 0)
      assert.is_false(c.loaded)
      assert.truthy(w:dump():find("version: 9", 1, true))
    end)
  end)

  describe("loading", function()
    it("a minimal document loads; scene uuid and name", function()
      local w = assert(keel.parse(HEAD))
      assert.are.equal("550e8400-e29b-41d4-a716-446655440000", w.uuid)
      assert.are.equal("T", w.name)
      assert.are.equal(0, w:count())
    end)

    it("the DESIGN example loads with its slots", function()
      local w = assert(keel.load(FIXTURES .. "/good_design_example.yaml"))
      local p = w:find("Player")
      assert.are.equal("core:transform#0,core:audio_source#0,core:audio_source#2", stack(p))
      assert.are.equal(0.5, p:get("core:audio_source", 2).volume)
      assert.are.equal(3, p:add("core:audio_source").slot)
      assert.are.same({ 0.2, 0.2, 0.25, 1 }, w.root:get("core:world_settings").ambient)
    end)

    it("keel.load of a missing file is nil, IOError", function()
      local w, err = keel.load("/nonexistent/dir/x.yaml")
      assert.is_nil(w)
      assert.are.equal("IOError", err.code)
      assert.are.equal("IOError: ", tostring(err):sub(1, 9))
    end)

    it("ParseError: not YAML, not the schema, aliases, tags, malformed/nil/duplicate UUIDs", function()
      parse_fails("ParseError", "keel: [1\n")
      parse_fails("ParseError", "scene:\n  uuid: 550e8400-e29b-41d4-a716-446655440000\n")
      parse_fails("ParseError", HEAD .. "bogus: 1\n")
      parse_fails("ParseError", doc(ent("1234", "A")))
      parse_fails("ParseError", doc(ent("00000000-0000-0000-0000-000000000000", "A")))
      parse_fails("ParseError", doc(ent(U1, "A"), ent(U1, "B")))
      parse_fails("ParseError", doc("  - &a\n    uuid: " .. U1 .. "\n    name: A\n    components: []\n  - *a\n"))
      parse_fails("ParseError", doc("  - uuid: !foo " .. U1 .. "\n    name: A\n    components: []\n"))
      assert.truthy(keel.parse(doc("  - uuid: !!str " .. U1 .. "\n    name: A\n    components: []\n")))
      parse_fails("ParseError", doc(ent(U1, "A", nil, comp("Core:Transform", "{}"))))
    end)

    it("any UUID version is accepted when reading", function()
      assert.truthy(keel.parse(doc(ent("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "A"))))
    end)

    it("InvalidArgument: wrong type, not finite, out of range", function()
      local e1 = parse_fails("InvalidArgument", doc(ent(U1, "A", nil, comp("core:transform", "{position: yes}"))))
      assert.are.equal("entities[0].components[0].body.position", e1.diagnostics[1].path)
      assert.are.equal(12, e1.diagnostics[1].line)
      assert.is_true(e1.diagnostics[1].col > 0)
      parse_fails("InvalidArgument", doc(ent(U1, "A", nil, comp("core:transform", "{position: [.nan, 0, 0]}"))))
      parse_fails("InvalidArgument", doc(ent(U1, "A", nil, comp("core:transform", "{}") ..
        comp("core:audio_source", "{volume: 3}"))))
    end)

    it("NotFound: unknown parent or entity reference", function()
      parse_fails("NotFound", doc(ent(U1, "A", "    parent: " .. U2 .. "\n")))
      parse_fails("NotFound", doc(ent(U1, "A", nil, comp("cx:vals", "{target: " .. U2 .. "}"))))
      local w = assert(keel.parse(doc(ent(U1, "A", nil, comp("cx:vals", "{target: " .. U3 .. "}")), ent(U3, "C"))))
      assert.are.equal(w:find("C"), w:find("A"):get("cx:vals").target)
    end)

    it("InvalidOperation: cycle, second singleton, missing requirement, rejected pair", function()
      parse_fails("InvalidOperation", doc(ent(U1, "A", "    parent: " .. U2 .. "\n"), ent(U2, "B", "    parent: " .. U1 .. "\n")))
      parse_fails("InvalidOperation", doc(ent(U1, "A", nil, comp("core:transform", "{}") .. comp("core:transform", "{}"))))
      parse_fails("InvalidOperation", doc(ent(U1, "A", nil, comp("core:audio_source", "{}"))))
      parse_fails("InvalidOperation", doc(ent(U1, "A", nil, comp("core:transform", "{}") ..
        comp("core:point_light", "{}") .. comp("core:spot_light", "{}"))))
      parse_fails("InvalidOperation", doc(ent(U1, "A", nil, comp("core:transform", "{}", 3))))
    end)

    it("every problem is listed in diagnostics, not only the first", function()
      local err = parse_fails("InvalidArgument", doc(ent(U1, "A", nil, comp("core:transform", "{position: yes}") ..
        comp("core:audio_source", "{volume: 3}") .. comp("core:camera", "{fov: 500}"))))
      assert.are.equal(3, #err.diagnostics)
      for _, d in ipairs(err.diagnostics) do
        assert.are.equal("InvalidArgument", d.code)
        assert.are.equal("string", type(d.message))
        assert.are.equal("string", type(d.path))
      end
    end)

    it("LimitExceeded for each configurable limit, with no world", function()
      local two = doc(ent(U1, "A"), ent(U2, "B"))
      parse_fails("LimitExceeded", two, { limits = { entities = 1 } })
      parse_fails("LimitExceeded", HEAD, { limits = { document_size = 10 } })
      parse_fails("LimitExceeded", doc(ent(U1, "A", nil, comp("core:transform", "{}"))), { limits = { string_length = 2 } })
      parse_fails("LimitExceeded", doc(ent(U1, "A", nil, comp("core:transform", "{}"))), { limits = { nesting_depth = 3 } })
      parse_fails("LimitExceeded", doc(ent(U1, "A", nil, comp("core:transform", "{}") .. comp("core:audio_source", "{}"))),
        { limits = { components_per_entity = 1 } })
      parse_fails("LimitExceeded", doc(ent(U1, "A", nil, comp("core:transform", "{position: [1, 2, 3]}"))),
        { limits = { body_size = 4 } })
      parse_fails("LimitExceeded", doc(ent(U1, "A"), ent(U2, "B", "    parent: " .. U1 .. "\n")), { limits = { hierarchy_depth = 1 } })
      parse_fails("LimitExceeded", doc(ent(U1, "A")), { limits = { collection_length = 2 } })
      assert.truthy(keel.parse(two, { limits = { entities = 2 } }))
    end)

    it("runtime operations respect the limits too", function()
      local w = keel.world("Lim")
      local e = w:spawn("E")
      fails("LimitExceeded", function() for _ = 1, 257 do e:add("cx:actor") end end)
      assert.are.equal(256, #e:components())
      fails("LimitExceeded", function() e:get("cx:actor", 0).n = 1; w:spawn{ components = { { "cx:vals", s = string.rep("x", 70000) } } } end)
    end)

    it("reading a body: missing fields keep defaults, removed fields warn, stale enums warn or fail in strict", function()
      local text = doc(ent(U1, "A", nil, comp("core:transform", "{bogus: 1}") .. comp("core:audio_source", "{bus: rock}")))
      local w = assert(keel.parse(text))
      assert.are.same({ 1, 1, 1 }, w:find("A"):get("core:transform").scale)
      assert.are.equal("effects", w:find("A"):get("core:audio_source").bus)
      assert.is_true(#w:warnings() >= 2)
      parse_fails("InvalidArgument", text, { strict = true })
    end)

    it("older versions are migrated in order before decoding; migrate sees plain values", function()
      local w = assert(keel.parse(doc(ent(U1, "A", nil, comp("cx:mig", "{velocity: 36}", 0, 1)))))
      local c = w:find("A"):get("cx:mig")
      assert.are.equal(10, c.speed)
      assert.are.equal("23", c.trail)
      assert.truthy(w:dump():find("kind: cx:mig\n%s*version: 3"))
      local seen
      keel.kind{ key = "cx:mig2", version = 2, fields = { { "v", "int", default = 0 } },
        migrate = { [2] = function(b) seen = b; return b end } }
      assert.truthy(keel.parse(doc(ent(U1, "A", nil, comp("cx:mig2",
        "{v: 1, f: 2.5, b: true, s: hello, n: null, l: [1, x], m: {k: 1}}", 0, 1)))))
      assert.are.equal("integer", math.type(seen.v))
      assert.are.equal("float", math.type(seen.f))
      assert.is_true(seen.b)
      assert.are.equal("hello", seen.s)
      assert.is_nil(seen.n)
      assert.are.same({ 1, "x" }, seen.l)
      assert.are.same({ k = 1 }, seen.m)
    end)

    it("a child listed before its parent loads; save writes pre-order", function()
      local w = assert(keel.parse(doc(ent(U2, "Child", "    parent: " .. U1 .. "\n"), ent(U1, "Parent"))))
      assert.are.equal("Parent,Child", names(w.entities, w))
      local y = w:dump()
      assert.is_true(y:find("name: Parent", 1, true) < y:find("name: Child", 1, true))
    end)
  end)

  describe("saving", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() rmrf(dir) end)

    it("save returns true; failure is nil, IOError error object", function()
      local w = keel.world("S")
      w:spawn{ name = "A", components = { "core:transform" } }
      assert.is_true(w:save(dir .. "/a.yaml"))
      local ok, err = w:save("/nonexistent/dir/x.yaml")
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
      assert.are.equal("string", type(err.message))
      assert.are.equal("table", type(err.diagnostics))
      assert.are.equal("IOError: ", tostring(err):sub(1, 9))
    end)

    it("a failed save leaves what was there intact and no temporary file behind", function()
      local w = keel.world("S")
      w:spawn("A")
      local target = dir .. "/taken"
      os.execute("mkdir " .. shell_quote(target))
      spit(target .. "/inside", "old")
      local ok, err = w:save(target)
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
      assert.are.equal("old", slurp(target .. "/inside"))
      local p = io.popen("ls -A " .. shell_quote(dir))
      local listing = p:read("a")
      p:close()
      assert.are.equal("taken\n", listing)
    end)

    it("load -> save -> load -> save is byte-identical and dump equals the saved file", function()
      local w = assert(keel.load(SCENES .. "/demo.yaml"))
      assert.is_true(w:save(dir .. "/1.yaml"))
      local w2 = assert(keel.load(dir .. "/1.yaml"))
      assert.is_true(w2:save(dir .. "/2.yaml"))
      assert.are.equal(slurp(dir .. "/1.yaml"), slurp(dir .. "/2.yaml"))
      assert.are.equal(slurp(dir .. "/1.yaml"), w2:dump())
    end)

    it("strings that would read back as something else are quoted and round-trip", function()
      local w = keel.world("Canon: test")
      local e = w:spawn("E")
      local vals = { "yes", "no", "123", "", "null", "~", "a: b", "#x", " lead", "trail ", "line\nbreak",
        "héllo", "true", "1e3", "[x]", "'q'", '"dq"', ".inf", "plain text", "ON", "-", "x:", "\\" }
      for _, s in ipairs(vals) do e:add("cx:vals", { s = s }) end
      local y = w:dump()
      assert.truthy(y:find('s: "yes"', 1, true))
      assert.truthy(y:find("s: plain text", 1, true))
      local w2 = assert(keel.parse(y))
      assert.are.equal(y, w2:dump())
      assert.are.equal("Canon: test", w2.name)
      local i = 0
      for _, c in ipairs(w2:find("E"):components()) do
        i = i + 1
        assert.are.equal(vals[i], c.s)
      end
    end)

    it("numbers are written in a short form that reads back exactly", function()
      local w = keel.world("Num")
      local e = w:spawn("E")
      local fl = { 0.1, 1 / 3, 1e300, -1.5, 100, 1e-7, 2 ^ 53 }
      for _, x in ipairs(fl) do e:add("cx:vals", { f = x }) end
      local y = w:dump()
      assert.truthy(y:find("f: 0.1\n", 1, true))
      assert.truthy(y:find("f: 100\n", 1, true))
      assert.truthy(y:find("f: 0.3333333333333333\n", 1, true))
      local w2 = assert(keel.parse(y))
      local i = 0
      for _, c in ipairs(w2:find("E"):components()) do
        i = i + 1
        if fl[i] then assert.are.equal(fl[i], c.f) end
      end
    end)

    it("flow style for numeric vectors, block style otherwise; entity refs as UUIDs", function()
      local w = keel.world("Sty")
      local a = w:spawn{ name = "A", components = { { "core:transform", position = { 1, 2.5, 3 } } } }
      local b = w:spawn{ name = "B", components = { "cx:vals" } }
      b:get("cx:vals").target = a
      local y = w:dump()
      assert.truthy(y:find("\n      position: [1, 2.5, 3]\n", 1, true))
      assert.truthy(y:find("target: " .. a.uuid, 1, true))
      assert.falsy(y:find("parent:", 1, true))
    end)
  end)

  describe("history", function()
    it("records inverses; undo/redo walk them; false when empty", function()
      local w = keel.world("H")
      local h = history.new(w)
      assert.is_false(h:undo())
      assert.is_false(h:redo())
      local e = h:spawn{ name = "A", components = { "core:transform" } }
      assert.are.equal("A", e.name)
      assert.are.equal(0, h:add(e, "core:audio_source", { volume = 0.5 }).slot)
      h:add(e, "core:audio_source")
      h:set(e:get("core:audio_source", 0), "volume", 0.25)
      h:rename(e, "B")
      local p = w:spawn("P")
      h:reparent(e, p)
      h:remove(e, "core:audio_source", 0)
      assert.are.equal("core:transform#0,core:audio_source#1", stack(e))
      assert.is_true(h:undo()) -- remove: re-added in the same slot
      assert.are.equal(0.25, e:get("core:audio_source", 0).volume)
      assert.are.equal(0, e:get("core:audio_source", 0).slot)
      assert.is_true(h:undo()); assert.is_nil(e.parent)
      assert.is_true(h:undo()); assert.are.equal("A", e.name)
      assert.is_true(h:undo()); assert.are.equal(0.5, e:get("core:audio_source", 0).volume)
      assert.is_true(h:undo()); assert.is_nil(e:get("core:audio_source", 1))
      assert.is_true(h:undo()); assert.is_nil(e:get("core:audio_source", 0))
      assert.is_true(h:undo()); assert.is_false(e:alive()); assert.are.equal(1, w:count())
      assert.is_false(h:undo())
      assert.is_true(h:redo())
      local a = w:find("A")
      assert.truthy(a)
      for _ = 1, 6 do assert.is_true(h:redo()) end
      assert.is_false(h:redo())
      assert.are.equal("B", a.name)
      assert.are.equal(p, a.parent)
      assert.are.equal("core:transform#0,core:audio_source#1", stack(a))
    end)

    it("undo of destroy restores UUID, components and children", function()
      local w = keel.world("H")
      local h = history.new(w)
      local p = w:spawn{ name = "P", components = { "core:transform", { "core:audio_source", volume = 0.2 } } }
      local c = w:spawn{ name = "C", parent = p }
      local uuid = p.uuid
      h:destroy(p)
      assert.is_nil(c.parent)
      assert.is_true(h:undo())
      local np = w:find(uuid)
      assert.truthy(np)
      assert.are.equal(np, c.parent)
      assert.are.equal(0.2, np:get("core:audio_source", 0).volume)
      assert.are.equal("P,C", names(w.entities, w))
    end)

    it("a refused command raises and records nothing", function()
      local w = keel.world("H")
      local h = history.new(w)
      local e = w:spawn{ name = "E", components = { "core:transform" } }
      fails("InvalidOperation", h.add, h, e, "core:transform")
      fails("InvalidArgument", h.set, h, e:get("core:transform"), "scale", { 1 })
      assert.is_false(h:undo())
    end)
  end)

  describe("save games", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() rmrf(dir) end)

    it("save, info and load over a fresh baseline restore the state", function()
      local src = SCENES .. "/unknown_kind.yaml"
      local w = assert(keel.load(src))
      local base = keel.persist.baseline(w)
      local dock, crane = w:find("Dock"), w:find("Crane")
      w:find("Boat"):destroy()
      w:spawn{ name = "New", parent = dock, components = { { "core:transform", position = { 1, 2, 3 } }, "core:audio_source" } }
      crane:remove("mod:winch", 2)
      dock:add("core:audio_source", { volume = 0.3 })
      dock:get("core:transform").position = { 7, 8, 9 }
      crane.name = "Crane2"
      crane.enabled = false
      w.root:get("core:world_settings").exposure = 2
      local path = dir .. "/slot.save"
      assert.is_true(keel.persist.save(w, base, path, { title = "Chapter 2", play_seconds = 310, chapter = 2 }))
      local info = keel.persist.info(path)
      assert.are.equal("Chapter 2", info.title)
      assert.are.equal(310, info.play_seconds)
      assert.are.equal(2, info.chapter)
      local w2 = assert(keel.load(src))
      assert.is_true(keel.persist.load(w2, path))
      assert.are.equal(w:dump(), w2:dump())
    end)

    it("the baseline is a value usable with any world loaded from that scene", function()
      local src = SCENES .. "/demo.yaml"
      local base = keel.persist.baseline(assert(keel.load(src)))
      local w = assert(keel.load(src))
      w:run(30, 1 / 60)
      assert.is_true(keel.persist.save(w, base, dir .. "/s", {}))
      local w2 = assert(keel.load(src))
      assert.is_true(keel.persist.load(w2, dir .. "/s"))
      assert.are.equal(w:dump(), w2:dump())
    end)

    it("missing, damaged and truncated files are nil, err and change nothing", function()
      local src = SCENES .. "/demo.yaml"
      local w = assert(keel.load(src))
      local base = keel.persist.baseline(w)
      w:run(30, 1 / 60)
      local path = dir .. "/s"
      assert.is_true(keel.persist.save(w, base, path, { title = "x" }))
      local ok, err = keel.persist.load(w, dir .. "/none")
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
      ok, err = keel.persist.info(dir .. "/none")
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
      ok, err = keel.persist.save(w, base, "/nonexistent/dir/s", {})
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
      local s = slurp(path)
      local k = #s - 10
      spit(dir .. "/dmg", s:sub(1, k - 1) .. string.char((s:byte(k) + 1) % 256) .. s:sub(k + 1))
      spit(dir .. "/trunc", s:sub(1, #s // 2))
      for _, bad in ipairs { "dmg", "trunc" } do
        local fresh = assert(keel.load(src))
        local before = fresh:dump()
        ok, err = keel.persist.load(fresh, dir .. "/" .. bad)
        assert.is_nil(ok)
        assert.are.equal("table", type(err))
        assert.are.equal("string", type(err.code))
        assert.are.equal(before, fresh:dump())
      end
      assert.are.equal("KEELSAVE", s:sub(1, 8))
      -- the slot details stay readable without the (damaged) state
      assert.are.equal("x", keel.persist.info(dir .. "/dmg").title)
    end)
  end)

  describe("error objects", function()
    it("carry code, message, diagnostics and a 'Code: message' __tostring", function()
      local w = keel.world("Err")
      local e = w:spawn("E")
      local err = fails("InvalidOperation", e.add, e, "core:audio_source")
      assert.are.equal("string", type(err.message))
      assert.are.equal("InvalidOperation: " .. err.message, tostring(err))
      assert.is_true(#err.diagnostics >= 1)
      assert.are.equal("InvalidOperation", err.diagnostics[1].code)
      local cases = {
        NotFound = function() e:add("zz:zz") end,
        Unsupported = function() e:add("cx:flags").ro = 1 end,
        ProtectedEntity = function() w.root:destroy() end,
        InvalidArgument = function() w:spawn{ bogus = 1 } end,
        LimitExceeded = function() w:spawn{ components = { { "cx:vals", s = string.rep("x", 70000) } } } end,
      }
      for code, f in pairs(cases) do
        local x = fails(code, f)
        assert.are.equal(code .. ": ", tostring(x):sub(1, #code + 2))
        assert.are.equal(code, x.diagnostics[1].code)
      end
      local _, pe = keel.parse("keel: [")
      assert.are.equal("ParseError", pe.code)
      assert.are.equal("ParseError: ", tostring(pe):sub(1, 12))
    end)
  end)

  describe("the keel program", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() rmrf(dir) end)

    it("runs a script like lua, with arg and require 'keel'", function()
      spit(dir .. "/s.lua", 'local keel = require "keel"\nprint(arg[0], arg[1], arg[2], select("#", ...), type(keel.world))\n')
      local code, out = run("s.lua x y", dir)
      assert.are.equal(0, code)
      assert.are.equal("s.lua\tx\ty\t2\tfunction\n", out)
    end)

    it("a script that raises a keel error exits 1 with FILE:LINE: Code: message", function()
      spit(dir .. "/e.lua", 'local keel = require "keel"\nlocal w = keel.world("x")\nlocal e = w:spawn("a")\ne:add("core:transform").scale = {1, 2}\n')
      local code, _, err = run("e.lua", dir)
      assert.are.equal(1, code)
      assert.truthy(err:find("e.lua:4: InvalidArgument:", 1, true), err)
    end)

    it("the REPL binds an empty world to `world`", function()
      local code, out = run("", dir, "print(world:count(), world.root ~= nil)\n")
      assert.are.equal(0, code)
      assert.truthy(out:find("0\ttrue", 1, true), out)
    end)

    it("repl SCENE loads the scene as world", function()
      local code, out = run("repl " .. shell_quote(SCENES .. "/unknown_kind.yaml"), dir, "print(world.name)\n")
      assert.are.equal(0, code)
      assert.truthy(out:find("Harbour With A Mod", 1, true))
    end)

    it("check: 0 for a good file, 1 with FILE:LINE:COL: error: CODE: message for a bad one", function()
      assert.are.equal(0, (run("check " .. shell_quote(SCENES .. "/demo.yaml"))))
      local src = slurp(SCENES .. "/demo.yaml")
      local bad = src:gsub("fog_density: [%d.]+", "fog_density: yes", 1)
      spit(dir .. "/bad.yaml", bad)
      local code, out, err = run("check bad.yaml", dir)
      assert.are.equal(1, code)
      local text = out .. err
      local line = text:match("bad%.yaml:%d+:%d+: error: InvalidArgument: [^\n]+")
      assert.truthy(line, text)
      local ln = tonumber(line:match("^bad%.yaml:(%d+):"))
      local n = 0
      for l in (bad .. "\n"):gmatch("([^\n]*)\n") do
        n = n + 1
        if n == ln then assert.truthy(l:find("fog_density", 1, true), l) end
      end
    end)

    it("check reports every code with the documented prefix", function()
      local want = {
        ["bad_alias.yaml"] = "ParseError", ["bad_duplicate_uuid.yaml"] = "ParseError",
        ["bad_wrong_type.yaml"] = "InvalidArgument", ["bad_unknown_parent.yaml"] = "NotFound",
        ["bad_cycle.yaml"] = "InvalidOperation", ["bad_second_singleton.yaml"] = "InvalidOperation",
        ["bad_nan_float.yaml"] = "InvalidArgument", ["bad_rejected_pair.yaml"] = "InvalidOperation",
      }
      for f, code in pairs(want) do
        local rc, out, err = run("check " .. shell_quote(FIXTURES .. "/" .. f))
        assert.are.equal(1, rc, f)
        assert.truthy((out .. err):find(f .. ":%d+:%d+: error: " .. code .. ": "), f .. ": " .. out .. err)
      end
    end)

    it("check --strict turns a stale enum into an error", function()
      local f = shell_quote(FIXTURES .. "/bad_enum.yaml")
      assert.are.equal(0, (run("check " .. f)))
      local rc, out, err = run("check --strict " .. f)
      assert.are.equal(1, rc)
      assert.truthy((out .. err):find(": error: InvalidArgument: ", 1, true))
    end)

    it("check of a missing file is an environment error (2); usage errors are 2", function()
      assert.are.equal(2, (run("check " .. shell_quote(dir .. "/none.yaml"))))
      assert.are.equal(2, (run("check")))
      assert.are.equal(2, (run("frobnicate")))
      assert.are.equal(2, (run("check --bogus " .. shell_quote(SCENES .. "/demo.yaml"))))
    end)

    it("a scene where a script goes exits 2", function()
      assert.are.equal(2, (run(shell_quote(SCENES .. "/demo.yaml"))))
    end)

    it("fmt --check of a canonical file is clean; fmt makes a file canonical and is idempotent", function()
      for _, f in ipairs { "demo.yaml", "lighting_lab.yaml", "unknown_kind.yaml" } do
        assert.are.equal(0, (run("fmt --check " .. shell_quote(SCENES .. "/" .. f))), f)
      end
      local text = HEAD:gsub("scene:\n  uuid: (%S+)\n  name: T\n", "scene: {uuid: %1, name: T}\n") ..
        "entities:\n  - uuid: " .. U1 .. "\n    name: A\n    components:\n" ..
        "      - {kind: core:transform, version: 1, slot: 0, body: {position: [1.50, 0, 0]}}\n"
      spit(dir .. "/nc.yaml", text)
      assert.are.equal(1, (run("fmt --check nc.yaml", dir)))
      assert.are.equal(text, slurp(dir .. "/nc.yaml"))
      assert.are.equal(0, (run("fmt nc.yaml", dir)))
      local once = slurp(dir .. "/nc.yaml")
      assert.truthy(once:find("position: [1.5, 0, 0]", 1, true))
      assert.are.equal(0, (run("fmt --check nc.yaml", dir)))
      assert.are.equal(0, (run("fmt nc.yaml", dir)))
      assert.are.equal(once, slurp(dir .. "/nc.yaml"))
    end)

    it("fmt of a broken file exits 1 and leaves it alone", function()
      spit(dir .. "/b.yaml", "keel: [1\n")
      assert.are.equal(1, (run("fmt b.yaml", dir)))
      assert.are.equal("keel: [1\n", slurp(dir .. "/b.yaml"))
    end)

    it("cook then dump gives the canonical YAML; the cooked file starts with KEELCOOK", function()
      local scene = shell_quote(SCENES .. "/demo.yaml")
      local code, out, err = run("cook " .. scene .. " -o demo.keelc", dir)
      assert.are.equal(0, code, out .. err)
      local bin = slurp(dir .. "/demo.keelc")
      assert.are.equal("KEELCOOK", bin:sub(1, 8))
      local dcode, yaml = run("dump demo.keelc", dir)
      assert.are.equal(0, dcode)
      assert.are.equal(slurp(SCENES .. "/demo.yaml"), yaml)
      local w = assert(keel.load(dir .. "/demo.keelc"))
      assert.are.equal(yaml, w:dump())
    end)

    it("dump refuses truncated or altered cooked files with exit 1", function()
      assert.are.equal(0, (run("cook " .. shell_quote(SCENES .. "/demo.yaml") .. " -o d.keelc", dir)))
      local bin = slurp(dir .. "/d.keelc")
      spit(dir .. "/t.keelc", bin:sub(1, 100))
      local k = #bin // 2
      spit(dir .. "/f.keelc", bin:sub(1, k - 1) .. string.char(bin:byte(k) ~ 1) .. bin:sub(k + 1))
      spit(dir .. "/h.keelc", bin:sub(1, 8))
      for _, f in ipairs { "t.keelc", "f.keelc", "h.keelc" } do
        local code, out = run("dump " .. f, dir)
        assert.are.equal(1, code, f)
        assert.are.equal("", out)
        local w, err = keel.load(dir .. "/" .. f)
        assert.is_nil(w)
        assert.are.equal("ParseError", err.code)
      end
    end)

    it("cook refuses unknown kinds and missing assets (exit 1, no output file)", function()
      local code = run("cook " .. shell_quote(SCENES .. "/unknown_kind.yaml") .. " -o u.keelc", dir)
      assert.are.equal(1, code)
      assert.is_false(file_exists(dir .. "/u.keelc"))
      local src = slurp(SCENES .. "/demo.yaml")
      local asset = src:match("clip: (%x+%-[%x-]+)")
      assert.truthy(asset)
      local at = src:find(asset, 1, true)
      spit(dir .. "/ma.yaml", src:sub(1, at - 1) .. "0a55e700-0000-4000-8000-0000000000ff" .. src:sub(at + #asset))
      os.execute("cp " .. shell_quote(SCENES .. "/assets.yaml") .. " " .. shell_quote(dir .. "/assets.yaml"))
      assert.are.equal(1, (run("cook ma.yaml -o ma.keelc", dir)))
      assert.is_false(file_exists(dir .. "/ma.keelc"))
      assert.are.equal(0, (run("check ma.yaml", dir)))
      assert.are.equal(1, (run("check --strict ma.yaml", dir)))
    end)

    it("cook drops editor_only kinds; --kinds loads kind files", function()
      os.execute("mkdir -p " .. shell_quote(dir .. "/kinds_x"))
      spit(dir .. "/kinds_x/k.lua", 'local keel = require "keel"\n' ..
        'keel.kind{ key = "ed:gizmo", editor_only = true, fields = { { "size", "float", default = 2 } } }\n')
      spit(dir .. "/ed.yaml", doc(ent(U1, "A", nil, comp("ed:gizmo", "{size: 3}") .. comp("core:transform", "{}"))))
      assert.are.equal(0, (run("check ed.yaml --kinds kinds_x", dir)))
      assert.are.equal(0, (run("cook ed.yaml -o ed.keelc --kinds kinds_x", dir)))
      local _, y = run("dump ed.keelc --kinds kinds_x", dir)
      assert.falsy(y:find("ed:gizmo", 1, true))
      assert.truthy(y:find("core:transform", 1, true))
      local _, kinds = run("kinds --kinds kinds_x", dir)
      assert.truthy(kinds:find("ed:gizmo", 1, true))
    end)

    it("--kinds DIR replaces the default kinds directories and is repeatable", function()
      for _, d in ipairs { "k1", "k2" } do
        os.execute("mkdir -p " .. shell_quote(dir .. "/" .. d))
        spit(dir .. "/" .. d .. "/k.lua", 'local keel = require "keel"\nkeel.kind{ key = "cx' .. d .. ':thing", fields = {} }\n')
      end
      local code, out = run("kinds --kinds k1 --kinds k2", dir)
      assert.are.equal(0, code)
      assert.truthy(out:find("cxk1:thing", 1, true))
      assert.truthy(out:find("cxk2:thing", 1, true))
      assert.truthy(out:find("core:transform", 1, true))
      os.execute("mkdir -p " .. shell_quote(dir .. "/kinds"))
      spit(dir .. "/kinds/k.lua", 'local keel = require "keel"\nkeel.kind{ key = "cxlocal:thing", fields = {} }\n')
      local _, out2 = run("kinds", dir)
      assert.truthy(out2:find("cxlocal:thing", 1, true)) -- ./kinds when present
    end)

    it("kinds --json lists every kind with the documented keys", function()
      local code, out = run("kinds --json")
      assert.are.equal(0, code)
      assert.are.equal("[", out:match("^%s*(.)"))
      for _, key in ipairs { '"key"', '"display"', '"category"', '"version"', '"multiplicity"', '"max"',
        '"requires"', '"rejects"', '"builtin"', '"fields"', '"type"', '"default"', '"min"', '"choices"',
        '"transient"', '"readonly"', '"hidden"' } do
        assert.truthy(out:find(key, 1, true), key)
      end
      assert.truthy(out:find('"core:audio_source"', 1, true))
      local code2, text = run("kinds")
      assert.are.equal(0, code2)
      assert.truthy(text:find("core:transform", 1, true))
    end)

    it("run plays a scene headless, saves with --save, exits 1 when a callback failed", function()
      local code, out, err = run("run " .. shell_quote(SCENES .. "/demo.yaml") .. " --frames 5 --dt 0.02 --save out.yaml", dir)
      assert.are.equal(0, code, out .. err)
      assert.truthy(assert(keel.load(dir .. "/out.yaml")))
      assert.are.equal(0, (run("run --frames 2", dir)))
      os.execute("mkdir -p " .. shell_quote(dir .. "/kf"))
      spit(dir .. "/kf/f.lua", 'local keel = require "keel"\nkeel.kind{ key = "cxf:fail", fields = {}, update = function() error("no") end }\n')
      spit(dir .. "/f.yaml", doc(ent(U1, "A", nil, comp("cxf:fail", "{}"))))
      local c2 = run("run f.yaml --frames 3 --kinds kf --save f_out.yaml", dir)
      assert.are.equal(1, c2)
      assert.is_true(file_exists(dir .. "/f_out.yaml"))
      assert.are.equal(2, (run("run f.yaml --frames x --kinds kf", dir)))
      assert.are.equal(2, (run("run none.yaml --frames 1", dir)))
    end)

    it("a broken kind file makes verbs exit 2", function()
      os.execute("mkdir -p " .. shell_quote(dir .. "/kb"))
      spit(dir .. "/kb/b.lua", 'local keel = require "keel"\nkeel.kind{ key = "cxb:bad", fields = { { "x", "flaot" } } }\n')
      local code, _, err = run("kinds --kinds kb", dir)
      assert.are.equal(2, code)
      assert.truthy(err:find("flaot", 1, true))
    end)

    it("unknown kinds survive `keel run --save` byte for byte", function()
      local code = run("run " .. shell_quote(SCENES .. "/unknown_kind.yaml") .. " --frames 3 --save again.yaml", dir)
      assert.are.equal(0, code)
      assert.are.equal(slurp(SCENES .. "/unknown_kind.yaml"), slurp(dir .. "/again.yaml"))
    end)
  end)
end)
