-- contract_spec.lua — black-box checks of /work/shared/DESIGN.md, sentence by sentence:
-- only the names the contract states (Lua face, scene format, error codes, CLI).
local keel = require "keel"
local history = require "keel.history"

local H = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helper.lua")
local ROOT, slurp, spit, shell_quote, tmpdir, rmrf = H.ROOT, H.slurp, H.spit, H.shell_quote, H.tmpdir, H.rmrf

local UUID_PATTERN = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"

-- Each test declares its own kinds: the registry is process-wide.
local serial = 0
local function key(name)
  serial = serial + 1
  return ("contract:%s_%d"):format(name or "k", serial)
end

-- Runs fn and returns the error object it raised (fails when it did not raise).
local function raises(fn, ...)
  local ok, err = pcall(fn, ...)
  assert(not ok, "expected an error")
  return err
end

local function code_of(fn, ...)
  local err = raises(fn, ...)
  assert.are.equal("table", type(err), "error is not an object: " .. tostring(err))
  return err.code
end

local function collect(iter, ...)
  local out = {}
  for e in iter, ... do out[#out + 1] = e end
  return out
end

local function entities(w)
  local out = {}
  for e in w:entities() do out[#out + 1] = e end
  return out
end

local function names(list)
  local out = {}
  for i, e in ipairs(list) do out[i] = e.name end
  return out
end

-- A minimal scene document with the given entities text (already indented by two).
local SCENE_UUID = "550e8400-e29b-41d4-a716-446655440000"
local function doc(entities_text, root_text)
  return "keel: 1\nscene:\n  uuid: " .. SCENE_UUID .. "\n  name: Doc\n"
    .. (root_text and ("root:\n" .. root_text) or "")
    .. "entities:\n" .. (entities_text or "")
end

local function entity_text(uuid, name, components, extra)
  return "  - uuid: " .. uuid .. "\n    name: " .. name .. "\n" .. (extra or "")
    .. "    components:\n" .. (components or "")
end

local function comp_text(kind, version, slot, body)
  return "      - kind: " .. kind .. "\n        version: " .. version .. "\n        slot: " .. slot
    .. "\n        body:" .. (body and ("\n" .. body) or " {}") .. "\n"
end

local U1 = "11111111-1111-4111-8111-111111111111"
local U2 = "22222222-2222-4222-8222-222222222222"
local U3 = "33333333-3333-4333-8333-333333333333"

-- ---------------------------------------------------------------------------
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

  it("accepts any UUID version when reading", function()
    local v1 = "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
    local w = assert(keel.parse(doc(entity_text(v1, "Old", ""))))
    assert.are.equal(v1, w:find(v1).uuid)
  end)

  it("refuses a nil entity UUID and a malformed or duplicate one with ParseError", function()
    local nil_uuid = "00000000-0000-0000-0000-000000000000"
    for _, text in ipairs{
      doc(entity_text(nil_uuid, "N", "")),
      doc(entity_text("not-a-uuid", "N", "")),
      doc(entity_text(U1, "A", "") .. entity_text(U1, "B", "")),
    } do
      local w, err = keel.parse(text)
      assert.is_nil(w)
      assert.are.equal("ParseError", err.code)
    end
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

  it("shares the kind registry between worlds", function()
    local k = key("shared")
    keel.kind{ key = k, fields = { { "x", "int" } } }
    local a, b = keel.world("A"), keel.world("B")
    assert.truthy(a:spawn("E"):add(k))
    assert.truthy(b:spawn("E"):add(k))
  end)

  it("never writes runtime kind ids or handles to a file", function()
    local w = keel.world()
    local e = w:spawn("E")
    e:add("core:transform")
    local text = w:dump()
    assert.falsy(text:find("\n%s*id:"))
    assert.falsy(text:find("handle", 1, true))
  end)
end)

-- ---------------------------------------------------------------------------
describe("kinds", function()
  local INFO_KEYS = { key = true, display = true, category = true, version = true, multiplicity = true,
    max = true, requires = true, rejects = true, builtin = true, fields = true,
    nosave = true, editor_only = true, root_only = true, not_on_root = true }
  local FIELD_KEYS = { key = true, type = true, default = true, min = true, max = true, choices = true,
    transient = true, readonly = true, hidden = true }

  it("keel.kind_info gives the documented keys, fields in declared order", function()
    local k = key("info")
    keel.kind{ key = k, display = "Info", category = "Tests", version = 3, multiplicity = "many", max = 4,
      requires = { "core:transform" }, rejects = { "core:camera" },
      fields = {
        { "value", "float", default = 100, min = 0, max = 100 },
        { "sprinting", "bool" },
        { "mode", "enum", choices = { "walk", "run" }, default = "walk" },
        { "cache", "int", transient = true },
        { "stamp", "int", readonly = true },
        { "secret", "string", hidden = true },
      } }
    local info = keel.kind_info(k)
    for name in pairs(info) do assert.truthy(INFO_KEYS[name], "undocumented key " .. name) end
    assert.are.equal(k, info.key)
    assert.are.equal("Info", info.display)
    assert.are.equal("Tests", info.category)
    assert.are.equal(3, info.version)
    assert.are.equal("many", info.multiplicity)
    assert.are.equal(4, info.max)
    assert.are.same({ "core:transform" }, info.requires)
    assert.are.same({ "core:camera" }, info.rejects)
    assert.is_false(info.builtin)
    local keys = {}
    for i, f in ipairs(info.fields) do
      keys[i] = f.key
      for name in pairs(f) do assert.truthy(FIELD_KEYS[name], "undocumented field key " .. name) end
      assert.are.equal("boolean", type(f.transient))
      assert.are.equal("boolean", type(f.readonly))
      assert.are.equal("boolean", type(f.hidden))
    end
    assert.are.same({ "value", "sprinting", "mode", "cache", "stamp", "secret" }, keys)
    local value, mode = info.fields[1], info.fields[3]
    assert.are.equal("float", value.type)
    assert.are.equal(100, value.default)
    assert.are.equal(0, value.min)
    assert.are.equal(100, value.max)
    assert.are.equal("enum", mode.type)
    assert.are.same({ "walk", "run" }, mode.choices)
    assert.are.equal("walk", mode.default)
    assert.is_true(info.fields[4].transient)
    assert.is_true(info.fields[5].readonly)
    assert.is_true(info.fields[6].hidden)
    assert.is_false(info.fields[1].hidden)
  end)

  it("keel.kind_info of an undeclared key is nil", function()
    assert.is_nil(keel.kind_info("nobody:here"))
  end)

  it("keel.kinds() lists every kind sorted by key, built-ins marked", function()
    local k = key("listed")
    keel.kind{ key = k }
    local list = keel.kinds()
    local found
    for i = 2, #list do assert.truthy(list[i - 1].key < list[i].key) end
    for _, info in ipairs(list) do
      if info.key == k then found = info end
      if info.key == "core:transform" then assert.is_true(info.builtin) end
    end
    assert.truthy(found)
    assert.is_false(found.builtin)
  end)

  it("refuses bad declarations with InvalidArgument", function()
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = "NoNamespace" }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = "Up:Per" }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("ty"), fields = { { "x", "complex" } } }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("m"), multiplicity = "some" }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("onemax"), multiplicity = "one", max = 3 }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("dflt"), fields = { { "x", "float", default = 5, min = 0, max = 1 } } }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("edflt"), fields = { { "m", "enum", choices = { "a" }, default = "z" } } }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("twice"), fields = { { "x", "int" }, { "x", "int" } } }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("nochoice"), fields = { { "m", "enum" } } }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("vfrac"), version = 1.5 }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("hook"), update = 5 }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("vec"), fields = { { "x", "vec3", default = { 1, 2 } } } }))
  end)

  -- DESIGN.md: "schema version (integer >= 1)".
  it("refuses a schema version below 1 with InvalidArgument", function()
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("v0"), version = 0 }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("vneg"), version = -3 }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("vstr"), version = "2" }))
    local err = raises(keel.kind, { key = key("v0m"), version = 0 })
    assert.truthy(err.message:find("version must be an integer >= 1", 1, true), err.message)
    assert.is_nil(keel.kind_info(key("v0")))
  end)

  -- A typo (`multiplicty = "many"`, a field's `defualt`) must not declare a different kind
  -- silently: load options and spawn specs refuse unknown keys too.
  it("refuses unknown declaration keys with InvalidArgument", function()
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("typo"), multiplicty = "many" }))
    assert.are.equal("InvalidArgument", code_of(keel.kind, { key = key("ftypo"), fields = { { "x", "int", defualt = 1 } } }))
  end)

  it("names the unknown key, the field and the bad type or hook in the message", function()
    local k = key("named")
    local err = raises(keel.kind, { key = k, multiplicty = "many" })
    assert.are.equal("InvalidArgument", err.code)
    assert.truthy(err.message:find("unknown key 'multiplicty'", 1, true), err.message)
    assert.is_nil(keel.kind_info(k))
    err = raises(keel.kind, { key = key("fnamed"), fields = { { "x", "int" }, { "speed", "float", defualt = 1 } } })
    assert.are.equal("InvalidArgument", err.code)
    assert.truthy(err.message:find("field 'speed': unknown key 'defualt'", 1, true), err.message)
    err = raises(keel.kind, { key = key("fpos"), fields = { { "x", "int", 3 } } })
    assert.are.equal("InvalidArgument", err.code)
    assert.truthy(err.message:find("field 'x': unknown key '3'", 1, true), err.message)
    err = raises(keel.kind, { key = key("pos"), "stray" })
    assert.are.equal("InvalidArgument", err.code)
    assert.truthy(err.message:find("unknown key '1'", 1, true), err.message)
    err = raises(keel.kind, { key = key("ftype"), fields = { { "speed", "flaot" } } })
    assert.are.equal("InvalidArgument", err.code)
    assert.truthy(err.message:find("field 'speed': unknown type 'flaot'", 1, true), err.message)
    for _, hk in ipairs { "awake", "start", "fixed_update", "update", "late_update", "on_destroy", "validate" } do
      err = raises(keel.kind, { key = key("h"), [hk] = "not a function" })
      assert.are.equal("InvalidArgument", err.code)
      assert.truthy(err.message:find(hk .. " must be a function, got string", 1, true), err.message)
    end
    -- every documented key is still accepted
    local full = key("full")
    keel.kind{ key = full, display = "Full", category = "Test", version = 2, multiplicity = "many", max = 3,
      requires = {}, rejects = {}, nosave = false, editor_only = false,
      fields = { { "m", "enum", choices = { "a", "b" }, default = "a", transient = false, readonly = false, hidden = false },
                 { "n", "float", default = 1, min = 0, max = 2 } },
      awake = function() end, start = function() end, fixed_update = function() end, update = function() end,
      late_update = function() end, on_destroy = function() end, validate = function() return true end,
      migrate = {} }
    assert.are.equal(2, keel.kind_info(full).version)
  end)

  it("honours root_only: the kind goes on the scene root and nowhere else", function()
    local k = key("rootonly")
    keel.kind{ key = k, root_only = true }
    local w = keel.world()
    assert.are.equal("InvalidOperation", code_of(function() w:spawn("E"):add(k) end))
    assert.are.equal(k, w.root:add(k).kind)
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
    assert.are.equal(1, e:add(k).slot)
  end)

  it("starts a many kind at slot 0 and refuses more than max", function()
    local k = key("max")
    keel.kind{ key = k, multiplicity = "many", max = 2 }
    local e = keel.world():spawn("E")
    assert.are.equal(0, e:add(k).slot)
    e:add(k)
    assert.are.equal("InvalidOperation", code_of(function() e:add(k) end))
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

  it("leaves nosave components out of every file", function()
    local k = key("nosave")
    keel.kind{ key = k, nosave = true, fields = { { "x", "int" } } }
    local w = keel.world()
    local e = w:spawn("E")
    e:add(k, { x = 7 })
    assert.falsy(w:dump():find(k, 1, true))
    local again = assert(keel.parse(w:dump()))
    assert.is_false(again:find("E"):has(k))
  end)

  it("keeps editor_only components in the YAML source", function()
    local k = key("editor")
    keel.kind{ key = k, editor_only = true }
    local w = keel.world()
    w:spawn("E"):add(k)
    assert.truthy(w:dump():find(k, 1, true))
  end)

  it("shows transient fields but does not save them", function()
    local k = key("transient")
    keel.kind{ key = k, fields = { { "kept", "int", default = 1 }, { "cache", "int", transient = true } } }
    local w = keel.world()
    local c = w:spawn("E"):add(k)
    c.cache = 42
    c.kept = 5
    assert.are.equal(42, c.cache)
    assert.are.equal(42, c:body().cache)
    local text = w:dump()
    assert.falsy(text:find("cache", 1, true))
    assert.truthy(text:find("kept: 5", 1, true))
  end)

  it("shows readonly fields but refuses writes from outside with Unsupported", function()
    local k = key("readonly")
    keel.kind{ key = k, fields = { { "stamp", "int", readonly = true, default = 3 } },
      update = function(self) self.stamp = self.stamp + 1 end }
    local w = keel.world()
    local c = w:spawn("E"):add(k)
    assert.are.equal(3, c.stamp)
    assert.are.equal("Unsupported", code_of(function() c.stamp = 9 end))
    assert.are.equal("Unsupported", code_of(function() c:set{ stamp = 9 } end))
    w:step(1 / 60)
    assert.are.equal(4, c.stamp)
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

  it("runs validate after every write and keeps the old value when it rejects", function()
    local k = key("validate")
    local seen = {}
    keel.kind{ key = k, fields = { { "value", "float", default = 1 }, { "max", "float", default = 10 } },
      validate = function(self, field)
        seen[#seen + 1] = field
        if self.value > self.max then return false, "value must not exceed max" end
        return true
      end }
    local c = keel.world():spawn("E"):add(k)
    c.value = 5
    assert.are.equal("value", seen[#seen])
    local err = raises(function() c.value = 50 end)
    assert.are.equal(5, c.value)
    assert.truthy(tostring(err):find("value must not exceed max", 1, true))
    raises(function() c:set{ max = 1 } end)
    assert.are.equal(10, c.max)
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

  it("stores quaternions normalized x,y,z,w", function()
    local c = keel.world():spawn("E"):add("core:transform")
    c.rotation = { 0, 0, 2, 0 }
    assert.are.same({ 0, 0, 1, 0 }, c.rotation)
  end)

  it("saves enums by choice name", function()
    local k = key("enumname")
    keel.kind{ key = k, fields = { { "mode", "enum", choices = { "walk", "run" } } } }
    local w = keel.world()
    w:spawn("E"):add(k, { mode = "run" })
    local text = w:dump()
    assert.truthy(text:find("mode: run", 1, true))
    -- reordering the choices changes no saved meaning
    keel.kind{ key = k, fields = { { "mode", "enum", choices = { "run", "walk" } } } }
    local again = assert(keel.parse(text))
    assert.are.equal("run", again:find("E"):get(k).mode)
  end)

  it("keeps a live enum's choice name when a hot reload reorders the choices", function()
    local k = key("enumreload")
    keel.kind{ key = k, fields = { { "mode", "enum", choices = { "walk", "run" } } } }
    local c = keel.world():spawn("E"):add(k, { mode = "run" })
    keel.kind{ key = k, fields = { { "mode", "enum", choices = { "run", "walk" } } } }
    assert.are.equal("run", c.mode)
  end)

  it("hot reloads: redeclaring a key replaces behaviour and carries instances over by field name", function()
    local k = key("reload")
    local calls = {}
    keel.kind{ key = k, fields = { { "a", "int" }, { "b", "int" } }, update = function() calls[#calls + 1] = "v1" end }
    local w = keel.world()
    local e = w:spawn("E")
    local c = e:add(k, { a = 1, b = 2 })
    w:step(1 / 60)
    keel.kind{ key = k, fields = { { "b", "int" }, { "c", "int", default = 9 } }, update = function() calls[#calls + 1] = "v2" end }
    w:step(1 / 60)
    assert.are.same({ "v1", "v2" }, calls)
    local got = e:get(k)
    assert.are.equal(2, got.b)
    assert.are.equal(9, got.c)
    assert.are.equal("NotFound", code_of(function() return got.a end))
  end)

  it("does not adopt components written by a newer version than the declared kind", function()
    local k = key("newer")
    local w = assert(keel.parse(doc(entity_text(U1, "E", comp_text(k, 3, 0, "          x: 1")))))
    local before = w:dump()
    keel.kind{ key = k, version = 2, fields = { { "x", "int" } } }
    assert.is_false(w:find(U1):get(k).loaded)
    assert.are.equal(before, w:dump())
    keel.kind{ key = k, version = 3, fields = { { "x", "int" } } }
    assert.is_true(w:find(U1):get(k).loaded)
    assert.are.equal(1, w:find(U1):get(k).x)
  end)

  it("adopts unknown components when their kind is declared: decoded, migrated, alive in the same slots", function()
    local k = key("adopt")
    local text = doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text(k, 1, 0, "          speed_kmh: 36")
      .. comp_text(k, 1, 4, "          speed_kmh: 72")))
    local w = assert(keel.parse(text))
    local e = w:find(U1)
    local comps = e:components()
    assert.are.equal(3, #comps)
    assert.is_false(comps[2].loaded)
    local awakened = 0
    keel.kind{ key = k, version = 2, multiplicity = "many", fields = { { "speed", "float" } },
      migrate = { [2] = function(body) body.speed = body.speed_kmh / 3.6; body.speed_kmh = nil; return body end },
      awake = function() awakened = awakened + 1 end }
    assert.are.equal(2, awakened)
    comps = e:components()
    assert.is_true(comps[2].loaded)
    assert.are.equal(0, comps[2].slot)
    assert.are.equal(4, comps[3].slot)
    assert.are.equal(10, e:get(k, 0).speed)
    assert.are.equal(20, e:get(k, 4).speed)
  end)
end)

-- ---------------------------------------------------------------------------
describe("entities, membership and slots", function()
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

  it("keeps children ordered", function()
    local w = keel.world()
    local p = w:spawn("P")
    for _, n in ipairs{ "c1", "c2", "c3" } do w:spawn{ name = n, parent = p } end
    assert.are.same({ "c1", "c2", "c3" }, names(p:children()))
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

  it("refuses a parent that would make a cycle with InvalidOperation", function()
    local w = keel.world()
    local a = w:spawn("A")
    local b = w:spawn{ name = "B", parent = a }
    local c = w:spawn{ name = "C", parent = b }
    assert.are.equal("InvalidOperation", code_of(function() a.parent = c end))
    assert.are.equal("InvalidOperation", code_of(function() a.parent = a end))
    assert.is_nil(a.parent)
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

  describe("the scene root", function()
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
  end)
end)

-- ---------------------------------------------------------------------------
describe("errors", function()
  it("raise an object with code, message, diagnostics and a __tostring 'Code: message'", function()
    local e = keel.world():spawn("E")
    e:add("core:transform")
    local err = raises(function() e:add("core:transform") end)
    assert.are.equal("table", type(err))
    assert.are.equal("InvalidOperation", err.code)
    assert.are.equal("string", type(err.message))
    assert.are.equal("table", type(err.diagnostics))
    assert.truthy(#err.diagnostics >= 1)
    assert.are.equal(err.code, err.diagnostics[1].code)
    assert.are.equal("InvalidOperation: " .. err.message, tostring(err))
  end)

  it("NotFound: no such kind, slot or field", function()
    local k = key("nf")
    keel.kind{ key = k, multiplicity = "many", fields = { { "x", "int" } } }
    local e = keel.world():spawn("E")
    assert.are.equal("NotFound", code_of(function() e:add("no:such") end))
    local c = e:add(k)
    assert.are.equal("NotFound", code_of(function() return c.nope end))
    assert.are.equal("NotFound", code_of(function() c.nope = 1 end))
    assert.are.equal("NotFound", code_of(function() c:reset("nope") end))
    assert.are.equal("NotFound", code_of(function() e:remove(k, 7) end))
    assert.are.equal("NotFound", code_of(function() e:remove("core:camera") end))
  end)

  -- DESIGN.md lists "file" under NotFound but "a file that cannot be read -> IOError" for loads:
  -- keel reads a missing scene file as one that cannot be read (README, "Errors").
  it("IOError: a scene file that is missing or cannot be read", function()
    local w, err = keel.load("/nonexistent/nowhere.yaml")
    assert.is_nil(w)
    assert.are.equal("IOError", err.code)
  end)

  it("IOError: the file system said no", function()
    local w = keel.world()
    local ok, err = w:save("/nonexistent/dir/out.yaml")
    assert.is_nil(ok)
    assert.are.equal("IOError", err.code)
    local d = tmpdir()
    local none, err2 = keel.load(d)
    assert.is_nil(none)
    assert.are.equal("IOError", err2.code)
    rmrf(d)
  end)

  it("NotFound for an undeclared kind in w:count, w:each and w:query; e:has false and e:get nil", function()
    local w = keel.world()
    local e = w:spawn("E")
    assert.is_false(e:has("no:such"))
    assert.is_nil(e:get("no:such"))
    assert.are.equal("NotFound", code_of(function() w:count("no:such") end))
    assert.are.equal("NotFound", code_of(function() for _ in w:each("no:such") do end end))
    assert.are.equal("NotFound", code_of(function() for _ in w:query("core:transform", "no:such") do end end))
    assert.are.equal("InvalidArgument", code_of(function() e:get("core:transform", -1) end))
    assert.are.equal("InvalidArgument", code_of(function() e:get("core:transform", 1.5) end))
  end)

  it("Unsupported: editing an unloaded component", function()
    local k = key("unloaded")
    local w = assert(keel.parse(doc(entity_text(U1, "E", comp_text(k, 1, 0, "          x: 1")))))
    local c = w:find(U1):get(k)
    assert.truthy(c)
    assert.is_false(c.loaded)
    assert.are.equal("Unsupported", code_of(function() c.x = 2 end))
    assert.are.equal("Unsupported", code_of(function() c:set{ x = 2 } end))
  end)

  it("ParseError: not YAML, not the schema, an alias", function()
    for _, text in ipairs{ "{ [", "keel: 1\nscene: 5\n", doc("  - &a\n    uuid: " .. U1 .. "\n    name: A\n  - *a\n"),
      "keel: 1\nscene:\n  uuid: " .. SCENE_UUID .. "\n  name: X\nentities: []\nmystery: 1\n" } do
      local w, err = keel.parse(text)
      assert.is_nil(w)
      assert.are.equal("ParseError", err.code)
    end
  end)

  it("LimitExceeded with a path", function()
    local text = doc(entity_text(U1, "A", "") .. entity_text(U2, "B", ""))
    local w, err = keel.parse(text, { limits = { entities = 1 } })
    assert.is_nil(w)
    assert.are.equal("LimitExceeded", err.code)
    assert.truthy(err.diagnostics[1].path:find("entities", 1, true))
  end)
end)

-- ---------------------------------------------------------------------------
describe("lifecycle and order", function()
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
end)

-- ---------------------------------------------------------------------------
describe("persistence", function()
  it("loads the DESIGN.md example document", function()
    local w = assert(keel.load(ROOT .. "/tests/fixtures/good_design_example.yaml"))
    assert.are.equal(SCENE_UUID, w.uuid)
    assert.are.equal("MainLevel", w.name)
    local p = w:find("Player")
    assert.are.same({ 0, 1.5, 0 }, p:get("core:transform").position)
    assert.are.equal(0.5, p:get("core:audio_source", 2).volume)
    assert.are.equal(0, p:get("core:audio_source").slot)
    assert.are.same({ 0.2, 0.2, 0.25, 1 }, w.root:get("core:world_settings").ambient)
  end)

  it("is canonical: load -> save -> load -> save is byte-identical", function()
    for _, f in ipairs{ "/tests/fixtures/good_design_example.yaml", "/scenes/unknown_kind.yaml", "/scenes/lighting_lab.yaml" } do
      local d = tmpdir()
      local w = assert(keel.load(ROOT .. f))
      assert(w:save(d .. "/a.yaml"))
      local w2 = assert(keel.load(d .. "/a.yaml"))
      assert(w2:save(d .. "/b.yaml"))
      assert.are.equal(slurp(d .. "/a.yaml"), slurp(d .. "/b.yaml"))
      assert.are.equal(slurp(d .. "/a.yaml"), w2:dump())
      rmrf(d)
    end
  end)

  it("writes block style, flow numeric vectors, entities in pre-order, short numbers, quoted ambiguous strings", function()
    local w = keel.world("Style")
    local p = w:spawn("Parent")
    local c = w:spawn{ name = "Child", parent = p }
    w:spawn("yes")
    p:add("core:transform", { position = { 0.1, 2, -3 } })
    c.parent = nil
    c.parent = p
    local text = w:dump()
    assert.truthy(text:find("position: [0.1, 2, -3]", 1, true))
    assert.truthy(text:find("name: Parent", 1, true))
    assert.truthy(text:find('name: "yes"', 1, true))
    local pi, ci, yi = text:find("name: Parent", 1, true), text:find("name: Child", 1, true), text:find('name: "yes"', 1, true)
    assert.truthy(pi < ci and ci < yi)
    assert.truthy(text:find("parent: " .. p.uuid, 1, true))
    assert.truthy(text:find("keel: 1\n", 1, true) == 1)
  end)

  it("writes numbers in the shortest form that reads back to the same value", function()
    local w = keel.world()
    local c = w:spawn("E"):add("core:transform", { position = { 0.1, 1 / 3, 1e-7 }, scale = { 2, 1e21, 0.5 } })
    local text = w:dump()
    assert.truthy(text:find("position: [0.1, 0.3333333333333333, 1e-07]", 1, true)
      or text:find("position: [0.1, 0.3333333333333333, 1e-7]", 1, true), text)
    assert.truthy(text:find("scale: [2, 1e+21, 0.5]", 1, true) or text:find("scale: [2, 1e21, 0.5]", 1, true), text)
    local back = assert(keel.parse(text)):find("E"):get("core:transform")
    assert.are.same(c.position, back.position)
    assert.are.same(c.scale, back.scale)
  end)

  it("round-trips awkward strings, extreme integers and floats exactly, at a fixed point", function()
    local k = key("roundtrip")
    keel.kind{ key = k, multiplicity = "many", fields = { { "s", "string" }, { "i", "int" }, { "f", "float" } } }
    local strs = { "", "true", "null", "~", "123", "1.5", "0x10", "a: b", "#x", "x #y", " lead", "trail ",
      "multi\nline", "tab\there", 'quote"s', "back\\slash", "ünïcödé", "-", "- a", "[1]", "{a}", "*star",
      "&amp", "!bang", "%pct", "@at", "`tick", "yes", "No", "on", "OFF", ".inf", ".nan", "1e5", "'single'",
      "a,b", "?", ":", "\1ctl", "\r", "a\u{2028}b", "2001-01-01" }
    local ints = { 0, -1, math.maxinteger, math.mininteger, 123456789012345 }
    local floats = { 0.0, -0.0, 0.1, 1 / 3, 1e300, 5e-324, -2.5e-10, 123456789.125, 1e16, 2 ^ 53 }
    local w = keel.world("RT")
    local e = w:spawn("E")
    for i, str in ipairs(strs) do
      e:add(k, { s = str, i = ints[i % #ints + 1], f = floats[i % #floats + 1] })
      w:spawn(str)
    end
    local text = w:dump()
    local again = assert(keel.parse(text))
    assert.are.equal(text, again:dump())
    local e2 = again:find(e.uuid)
    for _, c in ipairs(e:components()) do
      local c2 = e2:get(k, c.slot)
      assert.are.equal(c.s, c2.s)
      assert.are.equal(c.i, c2.i)
      assert.are.equal(math.type(c.i), math.type(c2.i))
      assert.are.equal(c.f, c2.f)
      assert.are.equal(1 / c.f, 1 / c2.f)
    end
    local before, after = names(entities(w)), names(entities(again))
    assert.are.same(before, after)
  end)

  it("writes components in membership order and fields in declared order", function()
    local w = keel.world()
    local e = w:spawn("E")
    e:add("core:transform")
    e:add("core:audio_source")
    e:add("core:camera")
    local text = w:dump()
    local t, a, cam = text:find("kind: core:transform", 1, true), text:find("kind: core:audio_source", 1, true), text:find("kind: core:camera", 1, true)
    assert.truthy(t < a and a < cam)
    local pos, rot, sc = text:find("position:", 1, true), text:find("rotation:", 1, true), text:find("scale:", 1, true)
    assert.truthy(pos < rot and rot < sc)
  end)

  it("keeps unknown kinds: key, version, slot, body unread, written back unchanged, warned once with a count", function()
    local w = assert(keel.load(ROOT .. "/scenes/unknown_kind.yaml"))
    local dock = w:find("Dock")
    local winch
    for _, c in ipairs(dock:components()) do if c.kind == "mod:winch" then winch = c end end
    assert.truthy(winch)
    assert.is_false(winch.loaded)
    assert.are.equal(0, winch.slot)
    assert.are.equal(winch, dock:get("mod:winch", 0))
    assert.are.equal("Unsupported", code_of(function() winch.rope_length = 1 end))
    local text = w:dump()
    assert.truthy(text:find("motor: {torque: 300, reversible: true}", 1, true) or text:find("torque: 300", 1, true))
    local warned = 0
    for _, d in ipairs(w:warnings()) do
      if d.message:find("mod:winch is not declared: 3 components kept", 1, true) then warned = warned + 1 end
    end
    assert.are.equal(1, warned)
    local d = dock:duplicate()
    assert.is_false(d:get("mod:winch").loaded)
    local body = dock:remove("mod:winch")
    assert.are.equal("table", type(body))
    assert.are.equal(12.5, body.rope_length)
    assert.are.equal(300, body.motor.torque)
    assert.are.equal(true, body.motor.reversible)
    assert.are.same({ "port", "starboard" }, body.hooks)
    assert.is_false(dock:has("mod:winch"))
  end)

  it("runs migrations in order over a plain table; a newer version is kept unknown", function()
    local k = key("migr")
    local steps = {}
    keel.kind{ key = k, version = 3, fields = { { "speed", "float" }, { "tags", "int" } },
      migrate = {
        [2] = function(body)
          steps[#steps + 1] = 2
          assert.are.equal("table", type(body))
          assert.are.equal(36, body.velocity)
          assert.are.equal("integer", math.type(body.count))
          assert.are.equal(true, body.on)
          assert.is_nil(body.gone)
          body.speed = body.velocity / 3.6; body.velocity = nil
          return body
        end,
        [3] = function(body) steps[#steps + 1] = 3; body.tags = body.count; body.count = nil; body.on = nil; body.gone = nil; return body end,
      } }
    local w = assert(keel.parse(doc(entity_text(U1, "Old", comp_text(k, 1, 0, "          velocity: 36\n          count: 2\n          on: true\n          gone: null"))
      .. entity_text(U2, "Future", comp_text(k, 4, 0, "          speed: 1")))))
    assert.are.same({ 2, 3 }, steps)
    local c = w:find(U1):get(k)
    assert.are.equal(10, c.speed)
    assert.are.equal(2, c.tags)
    local f = w:find(U2):get(k)
    assert.is_false(f.loaded)
    assert.truthy(w:dump():find("version: 4", 1, true))
  end)

  it("skips a field the kind no longer has with a warning; an old enum value warns and keeps the default, errors when strict", function()
    local k = key("evolve")
    keel.kind{ key = k, fields = { { "mode", "enum", choices = { "walk", "run" }, default = "walk" } } }
    local text = doc(entity_text(U1, "E", comp_text(k, 1, 0, "          mode: fly\n          gone: 1")))
    local w = assert(keel.parse(text))
    assert.are.equal("walk", w:find(U1):get(k).mode)
    assert.truthy(#w:warnings() >= 2)
    local none, err = keel.parse(text, { strict = true })
    assert.is_nil(none)
    assert.are.equal("InvalidArgument", err.code)
  end)

  it("reports codes per problem, every problem listed", function()
    local cases = {
      { doc(entity_text(U1, "E", comp_text("core:transform", 1, 0, "          position: [1, 2]"))), "InvalidArgument" },
      { doc(entity_text(U1, "E", comp_text("core:transform", 1, 0, "          position: [1, .nan, 2]"))), "InvalidArgument" },
      { doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:camera", 1, 0, "          fov: 500"))), "InvalidArgument" },
      { doc(entity_text(U1, "E", "", "    parent: " .. U3 .. "\n")), "NotFound" },
      { doc(entity_text(U1, "A", "", "    parent: " .. U2 .. "\n") .. entity_text(U2, "B", "", "    parent: " .. U1 .. "\n")), "InvalidOperation" },
      { doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:transform", 1, 0))), "InvalidOperation" },
      { doc(entity_text(U1, "E", comp_text("core:camera", 1, 0))), "InvalidOperation" },
      { doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:point_light", 1, 0) .. comp_text("core:spot_light", 1, 0))), "InvalidOperation" },
      { doc(entity_text(U1, "E", comp_text("core:transform", 1, 1))), "InvalidOperation" },
    }
    for i, case in ipairs(cases) do
      local w, err = keel.parse(case[1])
      assert.is_nil(w, "case " .. i)
      assert.are.equal(case[2], err.code, "case " .. i .. ": " .. tostring(err))
    end
    local w, err = keel.parse(doc(entity_text("bad", "A", "") .. entity_text(U2, "B", "", "    parent: " .. U3 .. "\n")
      .. entity_text(U3 .. "x", "C", "")))
    assert.is_nil(w)
    assert.truthy(#err.diagnostics >= 3)
  end)

  it("refuses entity references to unknown UUIDs with NotFound and resolves known ones after load", function()
    local k = key("eref")
    keel.kind{ key = k, fields = { { "target", "entity" } } }
    local w = assert(keel.parse(doc(entity_text(U1, "A", comp_text(k, 1, 0, "          target: " .. U2)) .. entity_text(U2, "B", ""))))
    assert.are.equal(w:find(U2), w:find(U1):get(k).target)
    local none, err = keel.parse(doc(entity_text(U1, "A", comp_text(k, 1, 0, "          target: " .. U3))))
    assert.is_nil(none)
    assert.are.equal("NotFound", err.code)
  end)

  it("refuses anchors, aliases and foreign tags", function()
    for _, text in ipairs{
      doc(entity_text(U1, "A", comp_text("core:transform", 1, 0, "          position: &p [1, 2, 3]"))),
      doc(entity_text(U1, "!custom A", "")),
      doc(entity_text(U1, "A", comp_text("core:transform", 1, 0, "          position: !vec [1, 2, 3]"))),
    } do
      local w, err = keel.parse(text)
      assert.is_nil(w)
      assert.are.equal("ParseError", err.code)
    end
  end)

  it("limits each load: LimitExceeded with the path, never a truncated world", function()
    local many = ""
    for i = 1, 5 do many = many .. comp_text("core:audio_source", 1, i - 1) end
    local text = doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. many))
    assert(keel.parse(text))
    local w, err = keel.parse(text, { limits = { components_per_entity = 3 } })
    assert.is_nil(w)
    assert.are.equal("LimitExceeded", err.code)
    assert.truthy(err.diagnostics[1].path:find("entities[0]", 1, true))
    local big, err2 = keel.parse(text, { limits = { document_size = 100 } })
    assert.is_nil(big)
    assert.are.equal("LimitExceeded", err2.code)
  end)

  it("has the documented default limits: hierarchy depth 256, 256 components per entity, nesting 32", function()
    local function chain(n)
      local parts = {}
      for i = 1, n do
        local u = ("%08x-0000-4000-8000-000000000000"):format(i)
        local parent = i > 1 and ("    parent: %08x-0000-4000-8000-000000000000\n"):format(i - 1) or nil
        parts[i] = entity_text(u, "N" .. i, "", parent)
      end
      return doc(table.concat(parts))
    end
    assert(keel.parse(chain(256)))
    local w, err = keel.parse(chain(258))
    assert.is_nil(w)
    assert.are.equal("LimitExceeded", err.code)
    local function sources(n)
      local parts = { comp_text("core:transform", 1, 0) }
      for i = 1, n do parts[#parts + 1] = comp_text("core:audio_source", 1, i - 1) end
      return doc(entity_text(U1, "E", table.concat(parts)))
    end
    assert(keel.parse(sources(255)))
    local w2, err2 = keel.parse(sources(256))
    assert.is_nil(w2)
    assert.are.equal("LimitExceeded", err2.code)
    assert.truthy(err2.diagnostics[1].path:find("entities[0]", 1, true))
    local deep = "x: " .. string.rep("[", 40) .. string.rep("]", 40)
    local w3, err3 = keel.parse(doc(entity_text(U1, "E", comp_text("mod:deep", 1, 0, "          " .. deep))))
    assert.is_nil(w3)
    assert.are.equal("LimitExceeded", err3.code)
  end)

  it("takes every limit per load (snake_case names of the Limits table)", function()
    local long = string.rep("n", 40)
    local text = doc(entity_text(U1, long, comp_text("core:transform", 1, 0, "          position: [1, 2, 3]")
      .. comp_text("mod:blob", 1, 0, "          list: [1, 2, 3, 4, 5]\n          nested: {a: {b: {c: 1}}}"))
      .. entity_text(U2, "B", "", "    parent: " .. U1 .. "\n") .. entity_text(U3, "C", "", "    parent: " .. U2 .. "\n"))
    assert(keel.parse(text))
    for name, value in pairs{ document_size = 200, entities = 2, components_per_entity = 1, body_size = 16,
      string_length = 20, nesting_depth = 4, hierarchy_depth = 2, collection_length = 4 } do
      local w, err = keel.parse(text, { limits = { [name] = value } })
      assert.is_nil(w, name)
      assert.are.equal("LimitExceeded", err.code, name .. ": " .. tostring(err))
      assert.are.equal("string", type(err.diagnostics[1].path), name)
    end
  end)

  it("refuses unknown load options and limit names with InvalidArgument", function()
    local text = doc("")
    assert.are.equal("InvalidArgument", code_of(keel.parse, text, { limits = { entites = 1 } }))
    assert.are.equal("InvalidArgument", code_of(keel.parse, text, { strcit = true }))
    assert.are.equal("InvalidArgument", code_of(keel.parse, text, { limits = 5 }))
    assert.are.equal("InvalidArgument", code_of(keel.parse, text, { assets = true }))
    assert.are.equal("InvalidArgument", code_of(keel.parse, text, { limits = { entities = -1 } }))
    assert.are.equal("InvalidArgument", code_of(keel.load, ROOT .. "/scenes/demo.yaml", { limits = { [1] = 2 } }))
    assert.truthy(keel.parse(text, { strict = true, limits = { entities = 5 } }))
  end)

  it("warns about a missing asset with a placeholder when loading for editing", function()
    local d = tmpdir()
    spit(d .. "/assets.yaml", "assets: []\n")
    local text = doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:mesh_renderer", 1, 0, "          mesh: " .. U2)))
    local w = assert(keel.parse(text, { assets = d .. "/assets.yaml" }))
    local warned = false
    for _, diag in ipairs(w:warnings()) do if diag.message:find(U2, 1, true) then warned = true end end
    assert.is_true(warned)
    local none, err = keel.parse(text, { assets = d .. "/assets.yaml", strict = true })
    assert.is_nil(none)
    assert.truthy(err.code)
    rmrf(d)
  end)

  it("saves atomically and leaves the old file intact on failure", function()
    local d = tmpdir()
    local w = keel.world("Saved")
    w:spawn("E")
    assert.is_true(w:save(d .. "/s.yaml"))
    local before = slurp(d .. "/s.yaml")
    local ok, err = w:save(d .. "/missing/s.yaml")
    assert.is_nil(ok)
    assert.truthy(err.code)
    assert.are.equal(before, slurp(d .. "/s.yaml"))
    local p = io.popen("ls -a " .. shell_quote(d))
    local listing = p:read("a")
    p:close()
    assert.are.equal(".\n..\ns.yaml\n", listing)
    rmrf(d)
  end)

  it("fails the whole load, never half of it", function()
    local k = key("txn")
    local awoke = 0
    keel.kind{ key = k, awake = function() awoke = awoke + 1 end }
    local w, err = keel.parse(doc(entity_text(U1, "A", comp_text(k, 1, 0)) .. entity_text(U2, "B", "", "    parent: " .. U3 .. "\n")))
    assert.is_nil(w)
    assert.are.equal("NotFound", err.code)
    assert.are.equal(0, awoke)
  end)
end)

-- ---------------------------------------------------------------------------
describe("the Lua face", function()
  it("keel.world(name) makes a new empty scene with uuid, name, root, revision", function()
    local w = keel.world("Arena")
    assert.are.equal("Arena", w.name)
    assert.truthy(w.uuid:match(UUID_PATTERN))
    assert.truthy(w.root)
    assert.are.equal("number", type(w.revision))
    assert.are.equal(0, w:count())
  end)

  it("gives file, line and col in the diagnostics of a load from a file", function()
    local path = ROOT .. "/tests/fixtures/bad_three_errors.yaml"
    local w, err = keel.load(path)
    assert.is_nil(w)
    assert.are.equal(3, #err.diagnostics)
    for _, d in ipairs(err.diagnostics) do
      assert.are.equal(path, d.file)
      assert.are.equal("number", type(d.line))
      assert.are.equal("number", type(d.col))
      assert.are.equal("error", d.severity)
      assert.truthy(d.path:find("^entities%[%d%]"))
    end
    assert.are.equal(err.diagnostics[1].code, err.code)
  end)

  it("keel.load and w:save follow io.open: nil, err", function()
    local w, err = keel.parse("not: [valid")
    assert.is_nil(w)
    assert.are.equal("ParseError", err.code)
    assert.truthy(tostring(err):find("^ParseError: "))
    assert.are.equal("table", type(err.diagnostics))
    local d = err.diagnostics[1]
    assert.are.equal("number", type(d.line))
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

  it("w:count([kind])", function()
    local w = keel.world()
    w:spawn{ name = "A", components = { "core:transform", "core:audio_source", "core:audio_source" } }
    w:spawn("B")
    assert.are.equal(2, w:count())
    assert.are.equal(1, w:count("core:transform"))
    assert.are.equal(0, w:count("core:camera"))
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

  it("w:dump gives the canonical YAML text", function()
    local w = keel.world("Dumped")
    local text = w:dump()
    assert.truthy(text:find("^keel: 1\n"))
    assert.truthy(text:find("name: Dumped", 1, true))
    local again = assert(keel.parse(text))
    assert.are.equal(text, again:dump())
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

  it("makes a handle to a removed component raise NotFound", function()
    local e = keel.world():spawn{ name = "E", components = { "core:transform" } }
    local c = e:add("core:audio_source", { volume = 0.1 })
    e:remove("core:audio_source", 0)
    assert.are.equal("NotFound", code_of(function() return c.volume end))
    assert.are.equal("NotFound", code_of(function() c.volume = 0.5 end))
  end)

  it("does not bind a removed component's handle to a new one in the same slot", function()
    local e = keel.world():spawn{ name = "E", components = { "core:transform" } }
    local c = e:add("core:audio_source", { volume = 0.1 })
    e:remove("core:audio_source", 0)
    e:add("core:audio_source")
    assert.are.equal("NotFound", code_of(function() return c.volume end))
  end)

  it("writes entity and asset fields as UUIDs, null when empty", function()
    local k = key("refs")
    keel.kind{ key = k, fields = { { "target", "entity" }, { "clip", "asset" }, { "none", "entity" } } }
    local w = keel.world()
    local t = w:spawn("T")
    w:spawn("E"):add(k, { target = t, clip = U2 })
    local text = w:dump()
    assert.truthy(text:find("target: " .. t.uuid, 1, true), text)
    assert.truthy(text:find("clip: " .. U2, 1, true), text)
    assert.truthy(text:find("none: null", 1, true) or not text:find("none:", 1, true), text)
  end)

  it("makes stale component handles raise NotFound and never reach another component", function()
    local e = keel.world():spawn{ name = "E", components = { "core:transform" } }
    local c = e:add("core:audio_source", { volume = 0.1 })
    e:remove("core:audio_source", 0)
    e:add("core:audio_source", { volume = 0.9 }, 0)
    assert.are.equal("NotFound", code_of(function() return c.volume end))
  end)

  it("lists unknown components in e:components() and finds them with get and remove by key and slot", function()
    local w = assert(keel.parse(doc(entity_text(U1, "E", comp_text("mod:other", 2, 3, "          x: 1")))))
    local e = w:find(U1)
    local list = e:components()
    assert.are.equal(1, #list)
    assert.are.equal("mod:other", list[1].kind)
    assert.are.equal(3, list[1].slot)
    assert.is_false(list[1].loaded)
    assert.are.equal(list[1], e:get("mod:other", 3))
    assert.is_true(e:has("mod:other"))
    e:remove("mod:other", 3)
    assert.are.equal(0, #e:components())
  end)
end)

-- ---------------------------------------------------------------------------
describe("keel.persist", function()
  local SCENE = ROOT .. "/tests/fixtures/good_design_example.yaml"

  -- Loads SCENE, moves the Player to `position` and saves that to `path`; returns the world and its baseline.
  local function save_moved(path, position)
    local w = assert(keel.load(SCENE))
    local base = keel.persist.baseline(w)
    w:find("Player"):get("core:transform").position = position
    assert(keel.persist.save(w, base, path))
    return w, base
  end

  it("saves a difference from the baseline and restores it over a freshly loaded scene", function()
    local d = tmpdir()
    local w = assert(keel.load(SCENE))
    local base = keel.persist.baseline(w)
    local p = w:find("Player")
    p:get("core:transform").position = { 5, 6, 7 }
    p:remove("core:audio_source", 2)
    p:add("core:camera", { fov = 90 })
    local s = w:spawn{ name = "Spawned", components = { "core:transform" } }
    local gone = w:spawn("Gone")
    gone:destroy()
    local child_uuid
    for e in w:entities() do if e.name ~= "Player" and e.name ~= "Spawned" then child_uuid = child_uuid or e.uuid end end
    if child_uuid then w:find(child_uuid):destroy() end
    assert.is_true(keel.persist.save(w, base, d .. "/slot1.sav", { title = "Chapter 2", play_seconds = 310 }))
    local info = keel.persist.info(d .. "/slot1.sav")
    assert.are.equal("Chapter 2", info.title)
    assert.are.equal(310, info.play_seconds)
    local fresh = assert(keel.load(SCENE))
    assert.is_true(keel.persist.load(fresh, d .. "/slot1.sav"))
    local fp = fresh:find("Player")
    assert.are.same({ 5, 6, 7 }, fp:get("core:transform").position)
    assert.is_nil(fp:get("core:audio_source", 2))
    assert.are.equal(90, fp:get("core:camera").fov)
    assert.truthy(fresh:find(s.uuid))
    assert.is_true(fresh:find(s.uuid):has("core:transform"))
    if child_uuid then assert.is_nil(fresh:find(child_uuid)) end
    assert.are.equal(w:count(), fresh:count())
    -- the baseline is a value usable with any world loaded from that scene
    local other = assert(keel.load(SCENE))
    assert.is_true(keel.persist.save(other, base, d .. "/slot2.sav"))
    rmrf(d)
  end)

  it("writes neither nosave components nor transient fields to a save game", function()
    local d = tmpdir()
    local ns, tr = key("ns"), key("tr")
    keel.kind{ key = ns, nosave = true, fields = { { "x", "int" } } }
    keel.kind{ key = tr, fields = { { "x", "int" }, { "t", "int", transient = true } } }
    local w = assert(keel.load(SCENE))
    local base = keel.persist.baseline(w)
    local p = w:find("Player")
    p:add(ns, { x = 5 })
    p:add(tr, { x = 1, t = 9 })
    assert(keel.persist.save(w, base, d .. "/n.sav"))
    local fresh = assert(keel.load(SCENE))
    assert.is_true(keel.persist.load(fresh, d .. "/n.sav"))
    local fp = fresh:find("Player")
    assert.is_false(fp:has(ns))
    assert.are.equal(1, fp:get(tr).x)
    assert.are.equal(0, fp:get(tr).t)
    rmrf(d)
  end)

  it("keeps game fields in the slot details and migrates saved components as for scenes", function()
    local d = tmpdir()
    local k = key("saved")
    keel.kind{ key = k, fields = { { "kmh", "float" } } }
    local w = assert(keel.parse(doc(entity_text(U1, "E", comp_text(k, 1, 0, "          kmh: 1")))))
    local text = w:dump()
    local base = keel.persist.baseline(w)
    w:find(U1):get(k).kmh = 36
    assert(keel.persist.save(w, base, d .. "/g.sav", { title = "T", play_seconds = 5, chapter = 2, hero = "Ann" }))
    local info = keel.persist.info(d .. "/g.sav")
    assert.are.equal("T", info.title)
    assert.are.equal(2, info.chapter)
    assert.are.equal("Ann", info.hero)
    local woke = key("woke")
    keel.kind{ key = woke, fields = { { "n", "int" } } }
    w:spawn{ name = "New", components = { { woke, n = 4 } } }
    assert(keel.persist.save(w, base, d .. "/g2.sav"))
    keel.kind{ key = k, version = 2, fields = { { "ms", "float" } },
      migrate = { [2] = function(body) body.ms = body.kmh / 3.6; body.kmh = nil; return body end } }
    local fresh = assert(keel.parse(text))
    assert.is_true(keel.persist.load(fresh, d .. "/g.sav"))
    assert.are.equal(10, fresh:find(U1):get(k).ms)
    local awoken = {}
    keel.kind{ key = woke, fields = { { "n", "int" } }, awake = function(self) awoken[#awoken + 1] = self.n end }
    local fresh2 = assert(keel.parse(text))
    local ok, err = keel.persist.load(fresh2, d .. "/g2.sav")
    assert.is_true(ok, tostring(err))
    assert.are.same({ 4 }, awoken)
    rmrf(d)
  end)

  it("refuses a save of another scene, a missing slot file and an unwritable path", function()
    local d = tmpdir()
    local w, base = save_moved(d .. "/x.sav", { 1, 1, 1 })
    local other = assert(keel.load(ROOT .. "/scenes/demo.yaml"))
    local before = other:dump()
    local ok, err = keel.persist.load(other, d .. "/x.sav")
    assert.is_nil(ok)
    assert.truthy(err.code)
    assert.are.equal(before, other:dump())
    local none, err2 = keel.persist.info(d .. "/absent.sav")
    assert.is_nil(none)
    assert.are.equal("IOError", err2.code)
    assert.truthy(err2.message:find(d .. "/absent.sav", 1, true))
    local no, err3 = keel.persist.save(w, base, d .. "/missing/x.sav")
    assert.is_nil(no)
    assert.are.equal("IOError", err3.code)
    rmrf(d)
  end)

  it("refuses a damaged file with an error, never half-applied", function()
    local d = tmpdir()
    save_moved(d .. "/s.sav", { 9, 9, 9 })
    local bytes = slurp(d .. "/s.sav")
    spit(d .. "/bad.sav", bytes:sub(1, #bytes - 10) .. string.rep("\0", 10))
    local fresh = assert(keel.load(SCENE))
    local r = fresh.revision
    local ok, err = keel.persist.load(fresh, d .. "/bad.sav")
    assert.is_nil(ok)
    assert.truthy(err.code)
    assert.are.equal(r, fresh.revision)
    assert.are.same({ 0, 1.5, 0 }, fresh:find("Player"):get("core:transform").position)
    local none, err2 = keel.persist.load(fresh, d .. "/absent.sav")
    assert.is_nil(none)
    assert.truthy(err2.code)
    rmrf(d)
  end)
end)

-- ---------------------------------------------------------------------------
describe("keel.history", function()
  it("runs commands and undoes/redoes them; false when there is nothing to do", function()
    local w = keel.world()
    local h = history.new(w)
    assert.is_false(h:undo())
    assert.is_false(h:redo())
    local e = h:spawn{ name = "E", components = { "core:transform" } }
    local uuid = e.uuid
    h:rename(e, "Renamed")
    local c = h:add(e, "core:audio_source", { volume = 0.3 })
    h:set(c, "volume", 0.7)
    assert.are.equal(0.7, c.volume)
    assert.is_true(h:undo())
    assert.are.equal(0.3, e:get("core:audio_source").volume)
    assert.is_true(h:undo())
    assert.is_false(e:has("core:audio_source"))
    assert.is_true(h:undo())
    assert.are.equal("E", e.name)
    assert.is_true(h:redo())
    assert.are.equal("Renamed", e.name)
    assert.is_true(h:undo())
    assert.is_true(h:undo())
    assert.are.equal(0, w:count())
    assert.is_false(h:undo())
    assert.is_true(h:redo())
    assert.truthy(w:find(uuid))
  end)

  it("raises InvalidArgument error objects on misuse", function()
    assert.are.equal("InvalidArgument", code_of(history.new, nil))
    assert.are.equal("InvalidArgument", code_of(history.new, {}))
    local w = keel.world()
    local h = history.new(w)
    assert.are.equal("InvalidArgument", code_of(function() h:add(nil, "core:transform") end))
    assert.are.equal("InvalidArgument", code_of(function() h:destroy("E") end))
    assert.are.equal("InvalidArgument", code_of(function() h:set(w:spawn("E"), "x", 1) end))
    assert.is_false(h:undo())
  end)

  it("records nothing for a command that fails", function()
    local w = keel.world()
    local h = history.new(w)
    local e = w:spawn("E")
    assert.are.equal("InvalidOperation", code_of(function() h:add(e, "core:camera") end))
    assert.are.equal("NotFound", code_of(function() h:remove(e, "core:transform") end))
    assert.is_false(h:undo())
  end)

  it("undoes a remove in the same slot with the same body", function()
    local w = keel.world()
    local h = history.new(w)
    local e = w:spawn{ name = "E", components = { "core:transform" } }
    for _ = 1, 3 do e:add("core:audio_source") end
    e:get("core:audio_source", 1).volume = 0.125
    h:remove(e, "core:audio_source", 1)
    e:add("core:audio_source")
    assert.is_nil(e:get("core:audio_source", 1))
    assert.is_true(h:undo())
    assert.are.equal(0.125, e:get("core:audio_source", 1).volume)
  end)

  it("undoes destroy and reparent", function()
    local w = keel.world()
    local h = history.new(w)
    local p = w:spawn("P")
    local e = w:spawn{ name = "E", components = { { "core:transform", position = { 1, 2, 3 } } } }
    h:reparent(e, p)
    assert.are.equal(p, e.parent)
    assert.is_true(h:undo())
    assert.is_nil(e.parent)
    local uuid = e.uuid
    h:destroy(e)
    assert.is_nil(w:find(uuid))
    assert.is_true(h:undo())
    local back = w:find(uuid)
    assert.truthy(back)
    assert.are.same({ 1, 2, 3 }, back:get("core:transform").position)
  end)
end)

-- ---------------------------------------------------------------------------
describe("built-in kinds", function()
  local TABLE = {
    ["core:transform"] = { "one", {}, { "core:world_settings" }, { "position", "rotation", "scale" },
      { position = "vec3", rotation = "quat", scale = "vec3" } },
    ["core:mesh_renderer"] = { "one", { "core:transform" }, {}, { "mesh", "material", "visible", "casts_shadow", "color", "metallic", "roughness" },
      { mesh = "asset", material = "asset", color = "color" } },
    ["core:point_light"] = { "one", { "core:transform" }, { "core:spot_light", "core:directional_light" }, { "color", "intensity", "range" }, {} },
    ["core:spot_light"] = { "one", { "core:transform" }, { "core:point_light", "core:directional_light" },
      { "color", "intensity", "range", "inner_angle", "outer_angle" }, {} },
    ["core:directional_light"] = { "one", { "core:transform" }, { "core:point_light", "core:spot_light" }, { "color", "intensity" }, {} },
    ["core:reflection_probe"] = { "one", { "core:transform" }, {}, { "radius", "intensity", "box_projection" }, {} },
    ["core:camera"] = { "one", { "core:transform" }, {}, { "projection", "fov", "near", "far" }, { projection = "enum" } },
    ["core:audio_source"] = { "many", { "core:transform" }, {},
      { "clip", "bus", "volume", "pitch", "loop", "spatial", "min_distance", "max_distance", "play_on_start" }, { clip = "asset", bus = "enum" } },
    ["core:world_settings"] = { "one", {}, { "core:transform" }, { "ambient", "sky_color", "fog", "fog_density", "exposure" }, {} },
  }

  local function sorted(t)
    local c = { table.unpack(t) }
    table.sort(c)
    return c
  end

  for k, row in pairs(TABLE) do
    it(k .. " is declared as the table says", function()
      local info = keel.kind_info(k)
      assert.truthy(info, k)
      assert.is_true(info.builtin)
      assert.are.equal(row[1], info.multiplicity)
      assert.are.same(sorted(row[2]), sorted(info.requires))
      assert.are.same(sorted(row[3]), sorted(info.rejects))
      local keys = {}
      for i, f in ipairs(info.fields) do
        keys[i] = f.key
        if row[5][f.key] then assert.are.equal(row[5][f.key], f.type, k .. "." .. f.key) end
      end
      assert.are.same(row[4], keys)
    end)
  end

  it("core:audio_source offers the buses music, effects, ambience, voice", function()
    for _, f in ipairs(keel.kind_info("core:audio_source").fields) do
      if f.key == "bus" then assert.are.same({ "music", "effects", "ambience", "voice" }, f.choices) end
    end
  end)

  it("checks the documented ranges", function()
    local w = keel.world()
    local e = w:spawn{ name = "E", components = { "core:transform" } }
    local light = e:add("core:point_light")
    assert.are.equal("InvalidArgument", code_of(function() light.intensity = -1 end))
    assert.are.equal("InvalidArgument", code_of(function() light.range = 0 end))
    local cam = e:add("core:camera")
    assert.are.equal("InvalidArgument", code_of(function() cam.fov = 0.5 end))
    assert.are.equal("InvalidArgument", code_of(function() cam.fov = 180 end))
    cam.fov = 179
    assert.are.equal("InvalidArgument", code_of(function() cam.near = 0 end))
    assert.are.equal("InvalidArgument", code_of(function() cam.far = cam.near end))
    local f = w:spawn{ name = "F", components = { "core:transform" } }
    local spot = f:add("core:spot_light")
    spot.outer_angle = 40
    assert.error(function() spot.inner_angle = 50 end)
    spot.inner_angle = 40
    local probe = f:add("core:reflection_probe")
    assert.are.equal("InvalidArgument", code_of(function() probe.radius = 0 end))
  end)

  it("keeps the lights exclusive and world_settings on the root only", function()
    local w = keel.world()
    local e = w:spawn{ name = "E", components = { "core:transform", "core:spot_light" } }
    assert.are.equal("InvalidOperation", code_of(function() e:add("core:point_light") end))
    assert.are.equal("InvalidOperation", code_of(function() e:add("core:directional_light") end))
    assert.are.equal("InvalidOperation", code_of(function() w.root:add("core:transform") end) )
  end)
end)

-- ---------------------------------------------------------------------------
describe("the keel program", function()
  local file_exists = H.file_exists
  local KEEL = H.find_keel()

  -- `input`: a file for stdin
  local function run(args, cwd, input) return H.run_keel(KEEL, args, input and slurp(input), cwd) end

  local d
  before_each(function() d = tmpdir() end)
  after_each(function() rmrf(d) end)

  it("exists", function()
    assert.truthy(KEEL and file_exists(KEEL))
  end)

  it("keel check prints FILE:LINE:COL: error: CODE: message and exits 1", function()
    local f = d .. "/bad.yaml"
    spit(f, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0, "          position: [1, 2]"))))
    local code, out, err = run("check " .. shell_quote(f))
    assert.are.equal(1, code)
    local text = (out or "") .. (err or "")
    assert.truthy(text:find(f .. ":%d+:%d+: error: InvalidArgument: "), text)
    local _, lerr = keel.load(f)
    local d1 = lerr.diagnostics[1]
    local line = ("%s:%d:%d: error: %s: %s (at %s)"):format(f, d1.line, d1.col, d1.code, d1.message, d1.path)
    assert.truthy(text:find(line, 1, true), text)
    local ok = d .. "/ok.yaml"
    spit(ok, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0))))
    assert.are.equal(0, (run("check " .. shell_quote(ok))))
    assert.are.equal(1, (run("check " .. shell_quote(ok) .. " " .. shell_quote(f))))
  end)

  it("keel check warns about an enum choice no longer offered, and --strict makes it an error", function()
    local f = d .. "/enum.yaml"
    spit(f, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:camera", 1, 0, "          projection: fisheye"))))
    local code, out, err = run("check " .. shell_quote(f))
    assert.are.equal(0, code)
    assert.truthy(((out or "") .. err):find(f .. ":%d+:%d+: warning: "))
    code, out, err = run("check --strict " .. shell_quote(f))
    assert.are.equal(1, code)
    assert.truthy(((out or "") .. err):find(f .. ":%d+:%d+: error: InvalidArgument: "))
  end)

  it("keel check reports unknown kinds as a warning with a count", function()
    local code, out, err = run("check " .. shell_quote(ROOT .. "/scenes/unknown_kind.yaml"))
    assert.are.equal(0, code)
    assert.truthy(((out or "") .. (err or "")):find("mod:winch is not declared: 3 components kept", 1, true))
  end)

  it("keel check --strict turns a missing asset into an error", function()
    local f = d .. "/a.yaml"
    spit(f, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:mesh_renderer", 1, 0, "          mesh: " .. U2))))
    spit(d .. "/assets.yaml", "assets: []\n")
    assert.are.equal(0, (run("check --assets " .. shell_quote(d .. "/assets.yaml") .. " " .. shell_quote(f))))
    assert.are.equal(1, (run("check --strict --assets " .. shell_quote(d .. "/assets.yaml") .. " " .. shell_quote(f))))
  end)

  it("keel fmt rewrites in canonical form; --check only reports", function()
    local f = d .. "/s.yaml"
    local w = assert(keel.load(ROOT .. "/tests/fixtures/good_design_example.yaml"))
    local canonical = w:dump()
    spit(f, slurp(ROOT .. "/tests/fixtures/good_design_example.yaml"))
    local code = run("fmt --check " .. shell_quote(f))
    assert.are.equal(1, code)
    assert.are.equal(slurp(ROOT .. "/tests/fixtures/good_design_example.yaml"), slurp(f))
    assert.are.equal(0, (run("fmt " .. shell_quote(f))))
    assert.are.equal(canonical, slurp(f))
    assert.are.equal(0, (run("fmt --check " .. shell_quote(f))))
    assert.are.equal(canonical, slurp(f))
  end)

  it("keel fmt leaves a file with errors alone and exits 1", function()
    local f = d .. "/bad.yaml"
    local text = doc(entity_text(U1, "E", "", "    parent: " .. U3 .. "\n"))
    spit(f, text)
    local code, out, err = run("fmt " .. shell_quote(f))
    assert.are.equal(1, code)
    assert.are.equal(text, slurp(f))
    assert.truthy(((out or "") .. err):find(f .. ":%d+:%d+: error: NotFound: "))
  end)

  it("keel run --frames N --dt S --save OUT runs headless and saves", function()
    local out = d .. "/out.yaml"
    local code = run("run " .. shell_quote(ROOT .. "/scenes/demo.yaml") .. " --frames 5 --dt 0.1 --save " .. shell_quote(out))
    assert.are.equal(0, code)
    assert.truthy(keel.load(out))
    assert.are.equal(0, (run("fmt --check " .. shell_quote(out))))
    assert.are.equal(0, (run("run --frames 2", d)))
  end)

  it("keel kinds lists kinds; --json is machine-readable", function()
    local code, out = run("kinds")
    assert.are.equal(0, code)
    assert.truthy(out:find("core:transform", 1, true))
    code, out = run("kinds --json")
    assert.are.equal(0, code)
    assert.truthy(out:find('"key": *"core:transform"'))
    assert.truthy(out:find('"multiplicity": *"many"'))
    assert.truthy(out:find('"fields"'))
    for _, name in ipairs{ "display", "category", "version", "max", "requires", "rejects", "builtin",
      "type", "default", "min", "choices", "transient", "readonly", "hidden" } do
      assert.truthy(out:find('"' .. name .. '":'), name)
    end
  end)

  it("--kinds DIR loads Lua kinds at start-up", function()
    local kd = d .. "/kinds"
    os.execute("mkdir -p " .. shell_quote(kd))
    spit(kd .. "/thing.lua", 'local keel = require "keel"\nkeel.kind{ key = "cli:thing", fields = { { "x", "int" } } }\n')
    local code, out = run("kinds --kinds " .. shell_quote(kd))
    assert.are.equal(0, code)
    assert.truthy(out:find("cli:thing", 1, true))
  end)

  it("keel cook and keel dump round-trip to the canonical YAML; editor_only dropped by cooking", function()
    local kd = d .. "/kinds"
    os.execute("mkdir -p " .. shell_quote(kd))
    spit(kd .. "/ed.lua", 'local keel = require "keel"\nkeel.kind{ key = "cli:gizmo", editor_only = true }\n')
    local src = d .. "/s.yaml"
    local w = assert(keel.load(ROOT .. "/tests/fixtures/good_design_example.yaml"))
    local canonical = w:dump()
    spit(src, canonical)
    local cooked = d .. "/s.keelc"
    assert.are.equal(0, (run("cook " .. shell_quote(src) .. " -o " .. shell_quote(cooked))))
    assert.are.equal("KEELCOOK", slurp(cooked):sub(1, 8))
    local code, out = run("dump " .. shell_quote(cooked))
    assert.are.equal(0, code)
    assert.are.equal(canonical, out)
    local ed = d .. "/ed.yaml"
    spit(ed, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("cli:gizmo", 1, 0))))
    assert.are.equal(0, (run("--kinds " .. shell_quote(kd) .. " cook " .. shell_quote(ed) .. " -o " .. shell_quote(cooked))))
    code, out = run("--kinds " .. shell_quote(kd) .. " dump " .. shell_quote(cooked))
    assert.are.equal(0, code)
    assert.falsy(out:find("cli:gizmo", 1, true))
    assert.truthy(out:find("core:transform", 1, true))
  end)

  it("keel cook fails on unknown kinds; a damaged cooked file is refused", function()
    local cooked = d .. "/u.keelc"
    assert.are.equal(1, (run("cook " .. shell_quote(ROOT .. "/scenes/unknown_kind.yaml") .. " -o " .. shell_quote(cooked))))
    local src = d .. "/s.yaml"
    spit(src, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0))))
    assert.are.equal(0, (run("cook " .. shell_quote(src) .. " -o " .. shell_quote(cooked))))
    local bytes = slurp(cooked)
    spit(cooked, bytes:sub(1, #bytes // 2))
    assert.are.equal(1, (run("dump " .. shell_quote(cooked))))
  end)

  it("keel cook fails on a missing asset; a cooked file with one altered byte is refused", function()
    local src = d .. "/s.yaml"
    spit(d .. "/assets.yaml", "assets: []\n")
    spit(src, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0) .. comp_text("core:mesh_renderer", 1, 0, "          mesh: " .. U2))))
    assert.are.equal(1, (run("cook --assets " .. shell_quote(d .. "/assets.yaml") .. " " .. shell_quote(src) .. " -o " .. shell_quote(d .. "/x.keelc"))))
    spit(src, doc(entity_text(U1, "E", comp_text("core:transform", 1, 0, "          position: [1, 2, 3]"))))
    local cooked = d .. "/s.keelc"
    assert.are.equal(0, (run("cook " .. shell_quote(src) .. " -o " .. shell_quote(cooked))))
    local bytes = slurp(cooked)
    local at = #bytes // 2
    spit(cooked, bytes:sub(1, at - 1) .. string.char((bytes:byte(at) + 1) % 256) .. bytes:sub(at + 1))
    local code, out = run("dump " .. shell_quote(cooked))
    assert.are.equal(1, code)
    assert.falsy(out and out:find("entities:", 1, true))
  end)

  it("keel repl [SCENE] binds the scene to `world`; bare keel binds an empty world", function()
    local script = d .. "/in.txt"
    spit(script, "print('name=' .. world.name)\nprint('count=' .. world:count())\n")
    local code, out = run("repl " .. shell_quote(ROOT .. "/tests/fixtures/good_design_example.yaml"), nil, script)
    assert.are.equal(0, code)
    assert.truthy(out:find("name=MainLevel", 1, true), out)
    code, out = run("", nil, script)
    assert.are.equal(0, code)
    assert.truthy(out:find("count=0", 1, true), out)
  end)

  it("takes --kinds DIR more than once", function()
    for _, n in ipairs{ "one", "two" } do
      os.execute("mkdir -p " .. shell_quote(d .. "/" .. n))
      spit(d .. "/" .. n .. "/k.lua", 'require("keel").kind{ key = "multi:' .. n .. '" }\n')
    end
    local code, out = run("kinds --kinds " .. shell_quote(d .. "/one") .. " --kinds " .. shell_quote(d .. "/two"))
    assert.are.equal(0, code)
    assert.truthy(out:find("multi:one", 1, true))
    assert.truthy(out:find("multi:two", 1, true))
  end)

  it("reload() in the REPL re-runs the kind files that changed (hot reload)", function()
    local kd = d .. "/kinds"
    os.execute("mkdir -p " .. shell_quote(kd))
    local file = kd .. "/hot.lua"
    spit(file, 'require("keel").kind{ key = "cli:hot", fields = { { "a", "int" } } }\n')
    local input = d .. "/in.txt"
    spit(input, table.concat({
      'f = io.open(' .. ("%q"):format(file) .. ', "w")',
      'f:write(\'require("keel").kind{ key = "cli:hot", fields = { { "a", "int" }, { "b", "int" } } }\\n\')',
      'f:close()',
      'os.execute("touch -d \'+5 seconds\' ' .. file .. '")',
      'reload()',
      'print("fields=" .. #require("keel").kind_info("cli:hot").fields)',
    }, "\n") .. "\n")
    local code, out, err = run("repl --kinds " .. shell_quote(kd), nil, input)
    assert.are.equal(0, code, err)
    assert.truthy(out:find("fields=2", 1, true), out .. err)
  end)

  it("loads ./kinds when present", function()
    os.execute("mkdir -p " .. shell_quote(d .. "/kinds"))
    spit(d .. "/kinds/local.lua", 'local keel = require "keel"\nkeel.kind{ key = "cwd:local" }\n')
    local code, out = run("kinds", d)
    assert.are.equal(0, code)
    assert.truthy(out:find("cwd:local", 1, true))
    assert.truthy(out:find("game:health", 1, true))
  end)

  it("keel cook refuses a component written by a newer version, and says so", function()
    local src = d .. "/newer.yaml"
    spit(src, doc(entity_text(U1, "E", comp_text("core:transform", 9, 0))))
    local code, out, err = run("cook " .. shell_quote(src) .. " -o " .. shell_quote(d .. "/n.keelc"))
    assert.are.equal(1, code)
    assert.truthy(((out or "") .. err):find("core:transform is written in version 9, newer than the declared 1", 1, true), err)
  end)

  it("runs a Lua script with arg set and require 'keel' available", function()
    local script = d .. "/s.lua"
    spit(script, 'local keel = require "keel"\nprint(arg[1], arg[2], keel.world("X").name)\n')
    local code, out = run(shell_quote(script) .. " one two")
    assert.are.equal(0, code)
    assert.are.equal("one\ttwo\tX\n", out)
  end)

  it("runs a script like lua: ... holds the arguments, an error exits 1 with the message, os.exit keeps its code", function()
    local script = d .. "/v.lua"
    spit(script, 'print(select("#", ...), ...)\n')
    local code, out = run(shell_quote(script) .. " a b")
    assert.are.equal(0, code)
    assert.are.equal("2\ta\tb\n", out)
    spit(script, 'local keel = require "keel"\nerror(select(2, keel.parse("{")))\n')
    local code2, _, err = run(shell_quote(script))
    assert.are.equal(1, code2)
    assert.truthy(err:find("ParseError: ", 1, true))
    spit(script, "os.exit(3)\n")
    assert.are.equal(3, (run(shell_quote(script))))
  end)

  it("exits 2 on usage errors", function()
    assert.are.equal(2, (run("check")))
    assert.are.equal(2, (run("fmt")))
    assert.are.equal(2, (run("cook " .. shell_quote(ROOT .. "/scenes/demo.yaml"))))
    assert.are.equal(2, (run("dump")))
    assert.are.equal(2, (run("run --frames nope")))
    assert.are.equal(2, (run("--no-such-flag")))
  end)
end)
