-- kind_spec.lua — keel.kind{}, keel.kinds(), keel.kind_info(): declaration, hot reload,
-- adoption of unknown components, validate and migrate.
local keel = require "keel"

local H = require "helper"
local fails, raises, code_of = H.fails, H.raises, H.code_of
local doc, entity_text, comp_text, U1, U2 = H.doc, H.entity_text, H.comp_text, H.U1, H.U2
local doc_of, ent, comp = H.doc_of, H.ent, H.comp
local key = H.key_maker("kind")

-- The shared cx: kinds.
setup(function() H.declare_cx_kinds() end)

local function scene(entities)
  local w = keel.world("Doc")
  return (w:dump():gsub("entities: %[%]", "entities:\n" .. entities))
end

describe("kinds", function()
  describe("keel.kind{}", function()
    it("declares a kind described by keel.kind_info()", function()
      assert.are.equal("sk:stamina", keel.kind{ key = "sk:stamina", display = "Stamina", category = "Gameplay",
        version = 2, multiplicity = "one", requires = { "core:transform" }, rejects = {},
        fields = {
          { "value", "float", default = 100, min = 0, max = 100 },
          { "sprinting", "bool" },
          { "mode", "enum", choices = { "walk", "run" }, default = "walk" },
          { "secret", "int", hidden = true, transient = true, readonly = true },
        } })
      local info = keel.kind_info("sk:stamina")
      assert.are.equal("sk:stamina", info.key)
      assert.are.equal("Stamina", info.display)
      assert.are.equal("Gameplay", info.category)
      assert.are.equal(2, info.version)
      assert.are.equal("one", info.multiplicity)
      assert.are.same({ "core:transform" }, info.requires)
      assert.are.same({}, info.rejects)
      assert.is_false(info.builtin)
      assert.are.equal(4, #info.fields)
      local v = info.fields[1]
      assert.are.same({ key = "value", type = "float", default = 100, min = 0, max = 100,
        transient = false, readonly = false, hidden = false }, v)
      assert.are.same({ "walk", "run" }, info.fields[3].choices)
      assert.are.equal("walk", info.fields[3].default)
      assert.is_true(info.fields[4].hidden and info.fields[4].transient and info.fields[4].readonly)
      assert.is_nil(keel.kind_info("sk:nothing"))
    end)
    it("describes many kinds with max, and built-ins", function()
      keel.kind{ key = "sk:many", multiplicity = "many", max = 4, fields = {} }
      assert.are.equal("many", keel.kind_info("sk:many").multiplicity)
      assert.are.equal(4, keel.kind_info("sk:many").max)
      local t = keel.kind_info("core:transform")
      assert.is_true(t.builtin)
      assert.are.equal("vec3", t.fields[1].type)
    end)
    it("reports flags and defaults for display and category", function()
      keel.kind{ key = "sk:flags", nosave = true, editor_only = true, fields = {} }
      local info = keel.kind_info("sk:flags")
      assert.is_true(info.nosave)
      assert.is_true(info.editor_only)
      assert.are.equal("General", info.category)
      assert.are.equal("string", type(info.display))
      assert.are.equal(1, info.version)
      assert.are.equal("one", info.multiplicity)
    end)
    it("keel.kinds() is sorted by key", function()
      local list = keel.kinds()
      assert.is_true(#list >= 9)
      for i = 2, #list do assert.is_true(list[i - 1].key < list[i].key) end
    end)
    it("refuses bad declarations with InvalidArgument", function()
      fails("InvalidArgument", function() keel.kind("x") end)
      fails("InvalidArgument", function() keel.kind{} end)
      fails("InvalidArgument", function() keel.kind{ key = "Bad Key" } end)
      fails("InvalidArgument", function() keel.kind{ key = "sk:b1", multiplicity = "some" } end)
      fails("InvalidArgument", function() keel.kind{ key = "sk:b2", fields = { { "x", "matrix" } } } end)
      fails("InvalidArgument", function() keel.kind{ key = "sk:b3", fields = { { "x", "int", default = "one" } } } end)
      fails("InvalidArgument", function() keel.kind{ key = "sk:b4", fields = { { "x", "int", default = 5, max = 3 } } } end)
      fails("InvalidArgument", function() keel.kind{ key = "sk:b5", fields = { { "x", "int" }, { "x", "float" } } } end)
      fails("InvalidArgument", function() keel.kind{ key = "sk:b6", fields = { { "m", "enum" } } } end)
      fails("InvalidArgument", function() keel.kind{ key = "sk:b7", update = 5 } end)
      fails("InvalidArgument", function() keel.kind{ key = "sk:b8", max = 2 } end)
      assert.is_nil(keel.kind_info("sk:b3"))
    end)

    it("shares the kind registry between worlds", function()
      local k = key("shared")
      keel.kind{ key = k, fields = { { "x", "int" } } }
      local a, b = keel.world("A"), keel.world("B")
      assert.truthy(a:spawn("E"):add(k))
      assert.truthy(b:spawn("E"):add(k))
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

    it("bad declarations raise InvalidArgument", function()
      fails("InvalidArgument", keel.kind, { key = "Bad Key", fields = {} })
      fails("InvalidArgument", keel.kind, { key = "cx:bt", fields = { { "x", "flaot" } } })
      fails("InvalidArgument", keel.kind, { key = "cx:bm", multiplicity = "two", fields = {} })
    end)
  end)

  describe("hot reload", function()
    it("replaces behaviour and carries fields over by name", function()
      keel.kind{ key = "sk:hot", fields = { { "hp", "int", default = 10 }, { "old", "string" } },
        update = function(self) self.hp = self.hp - 1 end }
      local w = keel.world("Hot")
      local e = w:spawn("e")
      local c = e:add("sk:hot", { hp = 50, old = "gone" })
      w:step(1 / 60)
      assert.are.equal(49, c.hp)
      keel.kind{ key = "sk:hot", fields = { { "armor", "float", default = 2.5 }, { "hp", "int", default = 10 } },
        update = function(self) self.hp = self.hp + 100 end }
      local c2 = e:get("sk:hot")
      assert.are.equal(49, c2.hp)
      assert.are.equal(2.5, c2.armor)
      assert.are.same({ armor = 2.5, hp = 49 }, c2:body())
      w:step(1 / 60)
      assert.are.equal(149, c2.hp)
      assert.are.same({}, w:errors())
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

    it("redeclaring a key carries live instances over by field name", function()
      keel.kind{ key = "cx:hot", fields = { { "a", "int", default = 1 }, { "b", "int", default = 2 } } }
      local w = keel.world("Hot")
      local e = w:spawn{ name = "H", components = { { "cx:hot", a = 10, b = 20 } } }
      keel.kind{ key = "cx:hot", fields = { { "b", "int", default = 0 }, { "c", "int", default = 3 } } }
      assert.are.same({ b = 20, c = 3 }, e:get("cx:hot"):body())
    end)
  end)

  describe("hot reload that changes the rules", function()
    local function two_of(key)
      keel.kind{ key = key, multiplicity = "many", fields = { { "v", "float", default = 1 } } }
      local w = keel.world("Rules")
      local e = w:spawn("E")
      e:add(key)
      e:add(key)
      return w, e
    end

    it("refuses to make a many kind one while an entity holds two, and keeps the old declaration", function()
      local w, e = two_of("sk:rule_one")
      local err = fails("InvalidOperation", keel.kind, { key = "sk:rule_one", multiplicity = "one" })
      assert.truthy(err.message:find("entity 'E' (" .. e.uuid .. ") in world 'Rules' holds sk:rule_one in slot 1, "
        .. "and it is now a one kind", 1, true), err.message)
      assert.are.equal("many", keel.kind_info("sk:rule_one").multiplicity)
      assert.are.equal(1, e:get("sk:rule_one", 1).v)
      assert.truthy(keel.parse(w:dump()), "what it saves still loads")
    end)

    it("refuses a max below what an entity holds, a requirement it lacks, a kind it holds beside", function()
      local _, e = two_of("sk:rule_max")
      fails("InvalidOperation", keel.kind, { key = "sk:rule_max", multiplicity = "many", max = 1 })
      fails("InvalidOperation", keel.kind, { key = "sk:rule_max", multiplicity = "many",
        requires = { "core:transform" } })
      e:add("core:transform")
      fails("InvalidOperation", keel.kind, { key = "sk:rule_max", multiplicity = "many",
        rejects = { "core:transform" } })
      fails("InvalidOperation", keel.kind, { key = "sk:rule_max", multiplicity = "many", root_only = true })
      -- rules the live components keep are taken
      assert.are.equal("sk:rule_max", keel.kind{ key = "sk:rule_max", multiplicity = "many", max = 2,
        requires = { "core:transform" } })
      assert.are.same({ "core:transform" }, keel.kind_info("sk:rule_max").requires)
    end)

    it("does not count worlds nobody can reach any more", function()
      do two_of("sk:rule_gone") end
      assert.are.equal("sk:rule_gone", keel.kind{ key = "sk:rule_gone", multiplicity = "one" })
    end)

    it("warns when a component's enum choice is gone and it takes the default", function()
      keel.kind{ key = "sk:rule_enum", fields = { { "c", "enum", choices = { "a", "b" }, default = "a" } } }
      local c = keel.world("E"):spawn("E"):add("sk:rule_enum", { c = "b" })
      local _, warnings = keel.kind{ key = "sk:rule_enum",
        fields = { { "c", "enum", choices = { "a", "c" }, default = "a" } } }
      assert.are.equal("a", c.c)
      assert.are.equal(1, #warnings)
      assert.truthy(warnings[1].message:find("sk:rule_enum slot 0: c: 'b' is no longer a choice; reset to its default",
        1, true), warnings[1].message)
    end)

    it("cannot happen from a validate hook (a pure check), nor to a built-in kind", function()
      keel.kind{ key = "sk:rule_check", fields = { { "a", "int" } },
        validate = function() keel.kind{ key = "sk:rule_check", fields = { { "b", "int" } } } return true end }
      local c = keel.world("V"):spawn("E"):add("sk:rule_check")
      local err = fails("InvalidOperation", function() c.a = 5 end)
      assert.truthy(err.message:find("kinds cannot be declared from a validate or migrate callback", 1, true), err.message)
      assert.are.equal(0, c.a)
      assert.are.equal("a", keel.kind_info("sk:rule_check").fields[1].key)
      fails("InvalidOperation", keel.kind, { key = "core:camera", fields = {} })
    end)

    it("puts a carried-over value outside new bounds back to its default, as a warning", function()
      local w, e = two_of("sk:rule_range")
      local c0, c1 = e:get("sk:rule_range", 0), e:get("sk:rule_range", 1)
      c0.v = 8
      local before = c0.version
      local key, warnings = keel.kind{ key = "sk:rule_range", multiplicity = "many",
        fields = { { "v", "float", default = 2, max = 5 } } }
      assert.are.equal("sk:rule_range", key)
      assert.are.equal(1, #warnings)
      assert.are.equal("warning", warnings[1].severity)
      assert.truthy(warnings[1].message:find("sk:rule_range slot 0: v: 8 is above the maximum", 1, true),
        warnings[1].message)
      assert.are.equal(2, c0.v)
      assert.are.equal(1, c1.v)
      assert.is_true(c0.version > before)
      assert.truthy(keel.parse(w:dump()), "what it saves still loads")
    end)
  end)

  describe("hot reload from inside a hook", function()
    it("finishes the running call with the old behaviour and runs the new one next", function()
      local w = keel.world("HotInside")
      local calls = {}
      local function declare(tag, fields)
        keel.kind{ key = "sk:selfreload", fields = fields,
          update = function(self)
            calls[#calls + 1] = tag
            if tag == "old" then declare("new", { { "b", "int" }, { "a", "int" } }) end
            self.a = 5 -- after the reload: dropped (the old layout is gone), never a crash
          end }
      end
      declare("old", { { "a", "int" } })
      for i = 1, 3 do w:spawn("e" .. i):add("sk:selfreload") end
      w:step(1 / 60)
      w:step(1 / 60)
      assert.are.equal("old", calls[1])
      assert.are.equal("new", calls[#calls])
      for e in w:entities() do assert.are.equal(0, e:get("sk:selfreload").b) end
    end)
  end)

  describe("adoption", function()
    it("makes unknown components of a later declared kind come alive in the same slots", function()
      local w = assert(keel.parse(scene([[
  - uuid: 22222222-2222-4222-8222-222222222222
    name: Crane
    components:
      - kind: sk:winch
        version: 1
        slot: 0
        body:
          length: 3
      - kind: sk:winch
        version: 1
        slot: 2
        body:
          length: 7.5
]])))
      local e = w:find("Crane")
      local list = e:components()
      assert.are.equal(2, #list)
      assert.is_false(list[1].loaded)
      assert.are.equal("sk:winch", list[2].kind)
      assert.are.equal(2, list[2].slot)
      assert.are.same({ length = 7.5 }, list[2]:body())
      fails("Unsupported", function() return list[1].length end)
      fails("Unsupported", function() list[1].length = 4 end)
      assert.are.equal(list[2], e:get("sk:winch", 2))
      local awoken = 0
      keel.kind{ key = "sk:winch", multiplicity = "many", fields = { { "length", "float", default = 1 } },
        awake = function() awoken = awoken + 1 end }
      assert.are.equal(2, awoken)
      local c = e:get("sk:winch", 2)
      assert.is_true(c.loaded)
      assert.are.equal(7.5, c.length)
      assert.are.equal(3, e:get("sk:winch").length)
      assert.is_true(list[2].loaded) -- the old handle now reaches the adopted component
      assert.are.equal(7.5, list[2].length)
    end)
    it("lets unknown components be removed and duplicated, not edited", function()
      local w = assert(keel.parse(scene([[
  - uuid: 33333333-3333-4333-8333-333333333333
    name: Odd
    components:
      - kind: sk:never_declared
        version: 3
        slot: 0
        body:
          a: [1, 2]
          b: text
]])))
      local e = w:find("Odd")
      assert.is_true(e:has("sk:never_declared"))
      local d = e:duplicate()
      assert.are.same({ a = { 1, 2 }, b = "text" }, d:components()[1]:body())
      local body = e:remove("sk:never_declared")
      assert.are.same({ a = { 1, 2 }, b = "text" }, body)
      assert.is_false(e:has("sk:never_declared"))
      fails("NotFound", function() e:add("sk:never_declared") end)
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

  describe("hooks during a load", function()
    it("see entity handles that stay valid with the loaded world", function()
      local seen
      keel.kind{ key = "sk:awake_keep", fields = { { "n", "int" } }, awake = function(self, e) seen = e end }
      local w = assert(keel.parse(scene([[
  - uuid: 66666666-6666-4666-8666-666666666666
    name: A
    components:
      - kind: sk:awake_keep
        version: 1
        slot: 0
        body:
          n: 2
]])))
      assert.are.equal(w:find("A"), seen)
      assert.is_true(rawequal(w, seen.world))
      w = nil
      collectgarbage()
      collectgarbage()
      assert.are.equal("A", seen.name)
    end)
    it("leave stale handles when the load fails after awake", function()
      local seen
      keel.kind{ key = "sk:awake_fail", fields = {}, awake = function(self, e) seen = e end }
      local w, err = keel.parse(scene([[
  - uuid: 77777777-7777-4777-8777-777777777777
    name: A
    components:
      - kind: sk:awake_fail
        version: 1
        slot: 0
        body: {}
  - uuid: 88888888-8888-4888-8888-888888888888
    name: B
    parent: 99999999-9999-4999-8999-999999999999
]]))
      assert.is_nil(w)
      assert.are.equal("NotFound", err.code)
      if seen then
        assert.is_false(seen:alive())
        local ok, e2 = pcall(function() return seen.name end)
        assert.is_false(ok)
        assert.are.equal("NotFound", e2.code)
      end
    end)
  end)

  describe("validate", function()
    it("rejects writes by returning false or nil, msg, or by raising", function()
      keel.kind{ key = "sk:valid", fields = { { "even", "int" }, { "name", "string" } },
        validate = function(self, field)
          if field == "even" and self.even % 2 ~= 0 then return false, "must be even" end
          if field == "name" and self.name == "bad" then return nil, "no bad names" end
          if field == "name" and self.name == "boom" then error("exploded") end
          return true
        end }
      local w = keel.world("V")
      local c = w:spawn("e"):add("sk:valid")
      c.even = 4
      assert.are.equal(4, c.even)
      local err = fails("InvalidArgument", function() c.even = 3 end)
      assert.truthy(tostring(err):match("must be even"))
      assert.are.equal(4, c.even)
      fails("InvalidArgument", function() c.name = "bad" end)
      assert.is_false(pcall(function() c.name = "boom" end))
      assert.are.equal("", c.name)
      c.name = "good"
      assert.are.equal("good", c.name)
    end)
    it("rejects writes from hooks, faulting the component", function()
      keel.kind{ key = "sk:valid2", fields = { { "n", "int" } },
        validate = function(self, field) return self.n < 10 end,
        update = function(self) self.n = self.n + 6 end }
      local w = keel.world("V")
      local c = w:spawn("e"):add("sk:valid2")
      w:step(1 / 60)
      assert.are.equal(6, c.n)
      w:step(1 / 60)
      assert.are.equal(6, c.n)
      assert.are.equal(1, #w:errors())
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
  end)

  describe("migrate", function()
    it("runs Lua steps over plain tables when loading older versions", function()
      keel.kind{ key = "sk:speedy", version = 3, fields = { { "speed", "float" }, { "tags", "string" } },
        migrate = {
          [2] = function(body) body.speed = body.velocity / 3.6; body.velocity = nil; return body end,
          [3] = function(body) body.tags = table.concat(body.list or {}, ","); body.list = nil end,
        } }
      local w = assert(keel.parse(scene([[
  - uuid: 44444444-4444-4444-8444-444444444444
    name: Car
    components:
      - kind: sk:speedy
        version: 1
        slot: 0
        body:
          velocity: 36
          list: [a, b]
]])))
      local c = w:find("Car"):get("sk:speedy")
      assert.are.equal(10, c.speed)
      assert.are.equal("a,b", c.tags)
    end)
    it("fails the load when a step raises", function()
      keel.kind{ key = "sk:broken", version = 2, fields = {},
        migrate = { [2] = function() error("cannot migrate") end } }
      local w, err = keel.parse(scene([[
  - uuid: 55555555-5555-4555-8555-555555555555
    name: B
    components:
      - kind: sk:broken
        version: 1
        slot: 0
        body: {}
]]))
      assert.is_nil(w)
      assert.truthy(tostring(err):match("cannot migrate"))
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

    it("older versions are migrated in order before decoding; migrate sees plain values", function()
      local w = assert(keel.parse(doc_of(ent(U1, "A", nil, comp("cx:mig", "{velocity: 36}", 0, 1)))))
      local c = w:find("A"):get("cx:mig")
      assert.are.equal(10, c.speed)
      assert.are.equal("23", c.trail)
      assert.truthy(w:dump():find("kind: cx:mig\n%s*version: 3"))
      local seen
      keel.kind{ key = "cx:mig2", version = 2, fields = { { "v", "int", default = 0 } },
        migrate = { [2] = function(b) seen = b; return b end } }
      assert.truthy(keel.parse(doc_of(ent(U1, "A", nil, comp("cx:mig2",
        "{v: 1, f: 2.5, b: true, s: hello, n: null, l: [1, x], m: {k: 1}}", 0, 1)))))
      assert.are.equal("integer", math.type(seen.v))
      assert.are.equal("float", math.type(seen.f))
      assert.is_true(seen.b)
      assert.are.equal("hello", seen.s)
      assert.is_nil(seen.n)
      assert.are.same({ 1, "x" }, seen.l)
      assert.are.same({ k = 1 }, seen.m)
    end)
  end)

  describe("keel.kind_info() and keel.kinds()", function()
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
  end)

  describe("nosave, editor_only, transient and readonly", function()
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
  end)
end)

-- keel.kind{} with many fields: any count up to the limit (1024) declares, spawns, sets, reads,
-- dumps and parses back; one more is LimitExceeded.
do
  local fails = H.fails

  local LIMIT = 1024 -- keep in step with KEEL_LUA_MAX_FIELDS

  -- fields f1..fn: floats (default i/2), with every tenth an int and every seventh a string
  -- (names and defaults are strings the declaration borrows from its table); the last a float
  local function spec(key, n)
    local fields = {}
    for i = 1, n do
      if i == n then fields[i] = { "f" .. i, "float", default = i / 2 }
      elseif i % 10 == 0 then fields[i] = { "f" .. i, "int", default = i }
      elseif i % 7 == 0 then fields[i] = { "f" .. i, "string", default = "s" .. i }
      else fields[i] = { "f" .. i, "float", default = i / 2 } end
    end
    return { key = key, fields = fields }
  end

  local function last(n) return "f" .. n end

  -- keel.kind in a fresh coroutine: its Lua stack starts small (busted's main stack is deep
  -- and large). Coroutines made right after it sit beside its stack in the heap, so a
  -- declaration that pushes without growing the stack overwrites them; collecting them then
  -- trips the allocator (under ASan: a report and an abort).
  local function declare(s)
    local co = coroutine.create(function() return keel.kind(s) end)
    local neighbours = {}
    for i = 1, 256 do neighbours[i] = coroutine.create(function() end) end
    local res = table.pack(coroutine.resume(co))
    neighbours = nil
    collectgarbage()
    collectgarbage()
    if not res[1] then error(res[2], 0) end
    return table.unpack(res, 2, res.n)
  end

  describe("keel.kind{} with many fields", function()
    for _, n in ipairs({ 35, 100, LIMIT }) do
      it("declares, spawns, sets, reads and round-trips a kind of " .. n .. " fields", function()
        local key = "wide:k" .. n
        assert.are.equal(key, declare(spec(key, n)))
        local info = keel.kind_info(key)
        assert.are.equal(n, #info.fields)
        assert.are.equal(last(n), info.fields[n].key)

        local w = keel.world("Wide")
        local e = w:spawn{ name = "e", components = { { key, [last(n)] = 7 } } }
        local c = e:get(key)
        assert.are.equal(7, c[last(n)])
        assert.are.equal(1 / 2, c.f1)
        c[last(n)] = 9
        assert.are.equal(9, c[last(n)])
        c:set{ f1 = 3.5, [last(n)] = 11 }
        assert.are.equal(3.5, c.f1)
        assert.are.equal(11, c[last(n)])
        if n >= 7 then assert.are.equal("s7", c.f7) end

        local text = w:dump()
        local w2 = assert(keel.parse(text))
        local c2 = w2:find("e"):get(key)
        assert.are.equal(11, c2[last(n)])
        assert.are.equal(3.5, c2.f1)
        assert.are.equal(text, w2:dump())
        w2:close()
        w:close()
      end)
    end

    it("runs the hooks of a kind of " .. LIMIT .. " fields with every field in self", function()
      local key = "wide:hooked"
      local s = spec(key, LIMIT)
      s.update = function(self)
        self.f1 = self.f1 + 1
        self[last(LIMIT)] = self[last(LIMIT)] + 1
      end
      declare(s)
      local w = keel.world("Hooks")
      local c = w:spawn{ components = { key } }:get(key)
      w:step(1 / 60)
      w:step(1 / 60)
      assert.are.equal(0.5 + 2, c.f1)
      assert.are.equal(LIMIT / 2 + 2, c[last(LIMIT)])
      w:close()
    end)

    it("refuses " .. (LIMIT + 1) .. " fields with LimitExceeded", function()
      local err = fails("LimitExceeded", declare, spec("wide:over", LIMIT + 1))
      assert.truthy(err.message:find(tostring(LIMIT), 1, true), err.message)
      assert.is_nil(keel.kind_info("wide:over"))
    end)
  end)
end

-- gameplay.md "Smaller expectations": the runtime field flag.
do

  describe("runtime fields", function()
    it("are saved in save games and never written to scene files", function()
      keel.kind{ key = "sk:ai", fields = { { "name", "string", default = "bob" },
        { "countdown", "float", default = 3, runtime = true } },
        update = function(self) self.countdown = self.countdown - 1 end }
      local text = keel.world("R"):dump()
      local w = assert(keel.parse(text))
      local base = keel.persist.baseline(w)
      local e = w:spawn("Old")
      e:add("sk:ai")
      w:step(1 / 60)
      w:step(1 / 60)
      assert.are.equal(1, e:get("sk:ai").countdown)
      local dump = w:dump()
      assert.truthy(dump:find("name: bob", 1, true))
      assert.is_nil(dump:find("countdown", 1, true))
      local dir = H.tmpdir()
      assert(keel.persist.save(w, base, dir .. "/slot.save"))
      local back = assert(keel.parse(text))
      assert(keel.persist.load(back, dir .. "/slot.save"))
      H.rmrf(dir)
      assert.are.equal(1, back:find("Old"):get("sk:ai").countdown)
      assert.is_true(keel.kind_info("sk:ai").fields[2].runtime)
      assert.is_nil(keel.kind_info("sk:ai").fields[1].runtime)
    end)

    it("cannot also be transient (InvalidArgument)", function()
      H.fails("InvalidArgument", function()
        keel.kind{ key = "sk:both", fields = { { "x", "int", transient = true, runtime = true } } }
      end)
    end)
  end)
end
