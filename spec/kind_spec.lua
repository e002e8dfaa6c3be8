-- kind_spec.lua — keel.kind{}, keel.kinds(), keel.kind_info(): declaration, hot reload,
-- adoption of unknown components, validate and migrate.
local keel = require "keel"

local fails = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helper.lua").fails

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
  end)
end)
