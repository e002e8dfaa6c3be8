-- value_spec.lua — field values at every boundary: a string holding a NUL byte is refused
-- wherever a value comes in (writes, specs, names, keys, save details, hooks, scene text,
-- migrations) and kept byte for byte in unknown bodies; subnormal floats are written in the
-- shortest form that reads back.
local keel = require "keel"

local H = require "helper"
local raises, assert_error = H.raises, H.assert_error

local SCENE_HEAD = [[
keel: 1
scene:
  uuid: 5a5e0000-0000-4000-8000-0000000000fe
  name: Fixes
entities:
]]

describe("values", function()
  describe("a string holding a NUL byte", function()
    keel.kind{ key = "fx:str", multiplicity = "many", fields = {
      { "s", "string", default = "d" },
      { "mode", "enum", choices = { "walk", "run" }, default = "walk" },
      { "target", "entity" },
    } }
    keel.kind{ key = "fx:strhook", fields = { { "s", "string", default = "d" } },
      update = function(self) self.s = "x\0y" end }

    it("is refused by c.field = and c:set{}, with the field named", function()
      local w = keel.world("N")
      local c = w:spawn("e"):add("fx:str", { s = "ok" })
      local err = assert_error("InvalidArgument", raises(function() c.s = "a\0b" end))
      assert.truthy(err.message:find("'s'", 1, true), err.message)
      assert.truthy(err.message:find("NUL", 1, true), err.message)
      assert.are.equal("ok", c.s)
      assert_error("InvalidArgument", raises(c.set, c, { s = "a\0b" }))
      assert.are.equal("ok", c.s)
      assert_error("InvalidArgument", raises(function() c.mode = "walk\0x" end))
      assert.are.equal("walk", c.mode)
      assert_error("InvalidArgument", raises(function() c.target = "00000000-0000-4000-8000-000000000001\0x" end))
      assert.are.equal("ok", c.s)
    end)

    it("is refused by e:add and w:spawn, which then change nothing", function()
      local w = keel.world("N")
      local e = w:spawn("e")
      assert_error("InvalidArgument", raises(e.add, e, "fx:str", { s = "a\0b" }))
      assert.is_false(e:has("fx:str"))
      assert_error("NotFound", raises(e.add, e, "fx:str", { ["s\0x"] = "v" })) -- not field s
      assert.is_false(e:has("fx:str"))
      local n = w:count()
      assert_error("InvalidArgument", raises(w.spawn, w, { name = "s", components = { { "fx:str", s = "a\0b" } } }))
      assert.are.equal(n, w:count())
    end)

    it("in an entity or world name, or a field name, is refused, not cut short", function()
      local w = keel.world("N")
      local n = w:count()
      assert_error("InvalidArgument", raises(w.spawn, w, "a\0b"))
      assert_error("InvalidArgument", raises(w.spawn, w, { name = "a\0b" }))
      assert.are.equal(n, w:count())
      assert_error("InvalidArgument", raises(function() w.name = "a\0b" end))
      assert.are.equal("N", w.name)
      assert_error("InvalidArgument", raises(keel.world, "a\0b"))
      local c = w:spawn("e"):add("fx:str", { s = "ok" })
      assert_error("NotFound", raises(function() return c["s\0x"] end))
      assert_error("NotFound", raises(function() c["s\0x"] = "v" end))
      assert_error("NotFound", raises(c.set, c, { ["s\0x"] = "v" }))
      assert.are.equal("ok", c.s)
    end)

    it("in a kind key, a field name, a choice or a name looked up is refused", function()
      local w = keel.world("N")
      local e = w:spawn("A")
      for _, f in ipairs{ function() e:add("core:transform\0junk") end, function() e:get("core:transform\0x") end,
        function() e:has("core:transform\0x") end, function() w:count("core:transform\0x") end,
        function() w:find("A\0B") end, function() keel.kind{ key = "fx:k\0y" } end,
        function() keel.kind{ key = "fx:kf", fields = { { "a\0b", "int" } } } end,
        function() keel.kind{ key = "fx:kc", fields = { { "m", "enum", choices = { "a\0b" } } } } end,
        function() keel.kind{ key = "fx:kr", requires = { "core:transform\0junk" } } end,
        function() keel.world("bad\xff") end } do
        assert_error("InvalidArgument", raises(f))
      end
      assert.is_false(e:has("core:transform"))
      assert.is_nil(keel.kind_info("fx:k"))
    end)

    it("in save-game slot details is refused", function()
      local w = keel.world("N")
      local base = keel.persist.baseline(w)
      local path = os.tmpname() .. ".sav"
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, path, { title = "a\0b" }))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, path, { note = "a\0b" }))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, path, { ["no\0te"] = 1 }))
      os.remove(path)
    end)

    it("written by a hook to self is refused and rolled back", function()
      local w = keel.world("N")
      local c = w:spawn("e"):add("fx:strhook")
      w:step(1 / 60)
      assert.are.equal("d", c.s)
      assert.are.equal(1, #w:errors())
      assert.truthy(w:errors()[1].message:find("NUL", 1, true), w:errors()[1].message)
    end)

    it("in a scene body is refused with file:line:col, not cut short", function()
      local text = SCENE_HEAD .. [[
  - uuid: 00000000-0000-4000-8000-0000000000f1
    name: E
    components:
      - kind: fx:str
        version: 1
        slot: 0
        body:
          s: "a\0b"
]]
      local w, err = keel.parse(text)
      assert.is_nil(w)
      assert_error("InvalidArgument", err)
      local d = err.diagnostics[1]
      assert.are.equal(13, d.line)
      assert.are.equal(14, d.col)
      assert.truthy(d.message:find("NUL", 1, true), d.message)
      w, err = keel.parse((text:gsub([["a\0b"]], [["walk\0x"]]):gsub("          s:", "          mode:")))
      assert.is_nil(w)
      assert_error("InvalidArgument", err)
    end)

    it("in a scene file fails keel check at its line and column", function()
      local f = "bad_nul_in_string.yaml"
      local rc, out, err = H.run_keel(H.find_keel(), "check " .. H.shell_quote(H.ROOT .. "/tests/fixtures/" .. f))
      assert.are.equal(1, rc, out .. err)
      assert.truthy((out .. err):find(f .. ":17:12: error: InvalidArgument: bus: enum field holds a NUL byte", 1, true), out .. err)
    end)

    it("as e.name is refused, through history too", function()
      local w = keel.world("N")
      local e = w:spawn("e")
      assert_error("InvalidArgument", raises(function() e.name = "a\0b" end))
      local h = require("keel.history").new(w)
      assert_error("InvalidArgument", raises(h.rename, h, e, "a\0b"))
      assert.are.equal("e", e.name)
    end)

    it("in an entity or scene name is refused", function()
      local w, err = keel.parse(SCENE_HEAD .. [[
  - uuid: 00000000-0000-4000-8000-0000000000f1
    name: "Pl\0ayer"
    components: []
]])
      assert.is_nil(w)
      assert_error("InvalidArgument", err)
      assert.are.equal(7, err.diagnostics[1].line)
      w, err = keel.parse((SCENE_HEAD:gsub("name: Fixes", [[name: "Fi\0xes"]])) .. "  []\n")
      assert.is_nil(w)
      assert_error("InvalidArgument", err)
    end)

    it("returned by a migration is refused", function()
      keel.kind{ key = "fx:strmig", version = 2, fields = { { "s", "string" } },
        migrate = { [2] = function(b) b.s = "x\0y"; return b end } }
      local w, err = keel.parse(SCENE_HEAD .. [[
  - uuid: 00000000-0000-4000-8000-0000000000f1
    name: E
    components:
      - kind: fx:strmig
        version: 1
        slot: 0
        body: {}
]])
      assert.is_nil(w)
      assert_error("InvalidArgument", err)
    end)

    it("in an unknown kind's body is kept and written back byte for byte", function()
      local text = SCENE_HEAD:gsub("entities:\n", "root: []\nentities:\n") .. [[
  - uuid: 00000000-0000-4000-8000-0000000000f1
    name: E
    components:
      - kind: fx:not_declared
        version: 1
        slot: 0
        body:
          label: "a\0b"
          "k\0ey": 1
]]
      local w = assert(keel.parse(text))
      local out = w:dump()
      assert.truthy(out:find([[label: "a\0b"]], 1, true), out)
      assert.truthy(out:find([["k\0ey": 1]], 1, true), out)
      assert.are.equal(out, assert(keel.parse(out)):dump())
      assert.are.equal("a\0b", w:find("E"):remove("fx:not_declared").label)
    end)
  end)

  describe("subnormal floats", function()
    keel.kind{ key = "fx:num", fields = { { "f", "float" }, { "v", "vec2" } } }

    for _, case in ipairs{ { 5e-324, "5e-324" }, { 1e-310, "1e-310" },
                           { -2.225073858507201e-308, "-2.225073858507201e-308" },
                           { 2.2250738585072014e-308, "2.2250738585072014e-308" }, -- DBL_MIN: normal
                           { 0.1, "0.1" }, { 1e-300, "1e-300" } } do
      local v, text = case[1], case[2]
      it("are written in the shortest form that reads back: " .. text, function()
        local w = keel.world("F")
        local c = w:spawn("e"):add("fx:num")
        c.f = v
        c.v = { v, 1 }
        local out = w:dump()
        assert.are.equal(text, out:match("\n *f: ([^\n]*)"))
        assert.are.equal("[" .. text .. ", 1]", out:match("\n *v: ([^\n]*)"))
        local back = assert(keel.parse(out))
        local bc = back:find("e"):get("fx:num")
        assert.are.equal(v, bc.f)
        assert.are.equal(v, bc.v[1])
        assert.are.equal(out, back:dump())
      end)
    end
  end)
end)
