-- errors_spec.lua — error objects: shape, __tostring, and one case per code.
local keel = require "keel"

local H = require "helper"
local fails, raises, code_of, tmpdir, rmrf = H.fails, H.raises, H.code_of, H.tmpdir, H.rmrf
local doc, entity_text, comp_text, U1, U2, SCENE_UUID = H.doc, H.entity_text, H.comp_text, H.U1, H.U2, H.SCENE_UUID
local key = H.key_maker("errors")

-- The shared cx: kinds.
setup(function() H.declare_cx_kinds() end)

keel.kind{ key = "sx:one", fields = { { "n", "int", min = 0, max = 5 }, { "ro", "int", readonly = true } } }
keel.kind{ key = "sx:needs", requires = { "sx:one" }, fields = {} }

describe("errors", function()
  it("are tables with code, message, diagnostics and a __tostring", function()
    local w = keel.world("E")
    local c = w:spawn("e"):add("sx:one")
    local err = raises(function() c.n = 9 end)
    assert.are.equal("InvalidArgument", err.code)
    assert.are.equal("string", type(err.message))
    assert.are.equal(H.here(-3), err.where) -- raised from Lua: the line that called keel
    assert.are.equal(err.where .. ": " .. err.code .. ": " .. err.message, tostring(err))
    assert.are.equal(1, #err.diagnostics)
    local d = err.diagnostics[1]
    assert.are.equal("InvalidArgument", d.code)
    assert.are.equal("error", d.severity)
    assert.are.equal("string", type(d.path))
    assert.are.equal(getmetatable(err), getmetatable(raises(function() c.n = -1 end)))
  end)

  it("carry file, line and column from documents", function()
    local w, err = keel.parse("keel: 1\nscene:\n  uuid: not-a-uuid\n  name: X\nentities: []\n")
    assert.is_nil(w)
    assert.are.equal("ParseError", err.code)
    local d = err.diagnostics[1]
    assert.are.equal(3, d.line)
    assert.is_true(d.col > 0)
  end)

  local cases = {
    NotFound = function(w)
      local e = w:spawn("e")
      local c = e:add("sx:one")
      e:remove("sx:one")
      c.n = 1
    end,
    Unsupported = function(w) w:spawn("e"):add("sx:one").ro = 1 end,
    ProtectedEntity = function(w) w.root:destroy() end,
    InvalidOperation = function(w) w:spawn("e"):add("sx:needs") end,
    InvalidArgument = function(w) w:spawn("e"):add("sx:one", { n = true }) end,
    LimitExceeded = function(w)
      local t, e = keel.parse(w:dump(), { limits = { document_size = 10 } })
      error(e)
    end,
    ParseError = function() local _, e = keel.parse("{{{"); error(e) end,
    IOError = function() local _, e = keel.load("/nonexistent/x.yaml"); error(e) end,
  }
  for code, f in pairs(cases) do
    it("raises " .. code, function()
      local err = raises(f, keel.world("C"))
      assert.are.equal("table", type(err), tostring(err))
      assert.are.equal(code, err.code, tostring(err))
      H.assert_error(code, err)
    end)
  end

  it("misuse with wrong Lua types raises InvalidArgument objects", function()
    local w = keel.world("M")
    local e = w:spawn("e")
    for _, f in ipairs{
      function() w:step("fast") end,
      function() w:count(7) end,
      function() e:add({}) end,
      function() e.parent = 5 end,
      function() keel.load(5) end,
      function() keel.parse("x", 5) end,
      function() keel.kind_info(3) end,
      function() w.spawn(e, "x") end,
      function() e.alive(w) end,
      function() w.close(e) end,
      function() keel.world({}) end,
    } do
      local err = raises(f)
      assert.are.equal("InvalidArgument", err.code, tostring(err))
    end
  end)

  it("raise an object with code, message, diagnostics and a __tostring 'Code: message'", function()
    local e = keel.world():spawn("E")
    e:add("core:transform")
    local err = raises(function() e:add("core:transform") end)
    local line = H.here(-1)
    assert.are.equal("table", type(err))
    assert.are.equal("InvalidOperation", err.code)
    assert.are.equal("string", type(err.message))
    assert.are.equal("table", type(err.diagnostics))
    assert.truthy(#err.diagnostics >= 1)
    assert.are.equal(err.code, err.diagnostics[1].code)
    assert.are.equal(line .. ": InvalidOperation: " .. err.message, tostring(err))
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

  it("carry code, message, diagnostics and a 'Code: message' __tostring", function()
    local w = keel.world("Err")
    local e = w:spawn("E")
    local err = fails("InvalidOperation", e.add, e, "core:audio_source")
    assert.are.equal("string", type(err.message))
    assert.is_nil(err.where) -- called by pcall, from C: no Lua position
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
      H.assert_error(code, x)
      assert.are.equal(code, x.diagnostics[1].code)
    end
    local _, pe = keel.parse("keel: [")
    assert.are.equal("ParseError", pe.code)
    assert.are.equal("ParseError: ", tostring(pe):sub(1, 12))
  end)

  it("concatenate as their text on either side (the io.open idiom)", function()
    local w, err = keel.load("/nonexistent-dir/none.yaml")
    assert.is_nil(w)
    local text = tostring(err)
    assert.are.equal("could not load: " .. text, "could not load: " .. err)
    assert.are.equal(text .. "!", err .. "!")
    assert.are.equal("1" .. text, 1 .. err)
    assert.are.equal(text .. text, err .. err)
    assert.are.equal("a: " .. text .. " b", "a: " .. err .. " b")
    local raised = raises(function() keel.world("C"):spawn("e"):add("fx:no_such_kind") end)
    assert.are.equal("failed: " .. tostring(raised), "failed: " .. raised)
  end)

  it("refuse to concatenate with what a string would refuse", function()
    local _, err = keel.load("/nonexistent-dir/none.yaml")
    assert.has_error(function() return err .. {} end)
    assert.has_error(function() return nil .. err end)
  end)
end)

-- a callback error whose __tostring raises: each case crashed under ASan or misbehaved before its fix.
do

  -- An error value whose __tostring itself raises.
  local function bad_error()
    return setmetatable({}, { __tostring = function() error("tostring raised") end })
  end

  describe("a callback error whose __tostring raises", function()
    it("is recorded by w:step, which goes on; later steps run", function()
      local w = keel.world("S")
      local k, ran = key("update"), 0
      keel.kind{ key = k, fields = { { "x", "float" } }, update = function() ran = ran + 1; error(bad_error()) end }
      w:spawn("e"):add(k)
      w:step(1 / 60)
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.are.equal("update", errs[1].phase)
      assert.truthy(errs[1].message:find("its __tostring failed", 1, true), errs[1].message)
      w:step(1 / 60) -- not "a step cannot run inside a step"
      assert.are.equal(1, ran) -- the failed component is faulted
    end)

    it("is recorded per item in a batch of hooks", function()
      local w = keel.world("S")
      local k, ran = key("batch"), 0
      keel.kind{ key = k, fields = { { "x", "float" } },
        update = function(self) ran = ran + 1; if self.x == 2 then error(bad_error()) end; self.x = self.x + 10 end }
      for i = 1, 6 do w:spawn("e" .. i):add(k, { x = i }) end
      w:step(1 / 60)
      assert.are.equal(6, ran)
      local errs = w:errors()
      assert.are.equal(1, #errs)
      assert.truthy(errs[1].message:find("its __tostring failed", 1, true), errs[1].message)
      assert.are.equal(13, w:find("e3"):get(k).x)
      w:step(1 / 60)
      assert.are.equal(11, ran)
    end)

    it("does not escape keel.parse through awake (nor leak its buffer)", function()
      local k = key("awake")
      keel.kind{ key = k, fields = { { "x", "float" } } }
      local src = keel.world("P")
      src:spawn{ name = "E", components = { k } }
      local text = src:dump()
      keel.kind{ key = k, fields = { { "x", "float" } }, awake = function() error(bad_error()) end }
      local ok, w = pcall(keel.parse, text)
      assert.is_true(ok, tostring(w))
      assert.are.equal(1, #w:errors())
      assert.truthy(w:errors()[1].message:find("its __tostring failed", 1, true))
    end)

    it("raised from validate becomes an error object; the registry is not left inside a callback", function()
      local w = keel.world("S")
      local k = key("validate")
      keel.kind{ key = k, fields = { { "x", "float" } }, validate = function() error(bad_error()) end }
      local c = w:spawn("e"):add(k)
      local err = H.fails("InvalidOperation", function() c.x = 5 end)
      assert.truthy(err.message:find("its __tostring failed", 1, true), err.message)
      assert.are.equal(0, c.x)
      keel.kind{ key = key("after"), fields = {} } -- refused while a validate is (wrongly) still open
    end)

    it("raised from a migrate step fails keel.persist.load with an error, not a raise", function()
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
      keel.kind{ key = k, version = 2, fields = { { "ms", "float" } },
        migrate = { [2] = function() error(bad_error()) end } }
      local ok, res, err = pcall(keel.persist.load, fresh, d .. "/g.sav")
      assert.is_true(ok, tostring(res))
      assert.is_nil(res)
      assert.truthy(tostring(err):find("its __tostring failed", 1, true), tostring(err))
      H.rmrf(d)
    end)
  end)
end

-- gameplay.md, "Smaller expectations": an error keel raises inside a Lua callback carries the Lua
-- position of the call that caused it, in the error and in w:errors() (message and where).
describe("errors raised inside callbacks", function()
  local key = H.key_maker("where")

  -- The one entry of w:errors(), checked to carry `line` in where and message.
  local function one_entry(w, line)
    local errs = w:errors()
    assert.are.equal(1, #errs)
    assert.are.equal(line, errs[1].where)
    assert.truthy(errs[1].message:find(line .. ": NotFound: ", 1, true), errs[1].message)
    return errs[1]
  end

  it("a hook: where is its line, and every component failing alike is one entry", function()
    local K = key("hook")
    local line
    keel.kind{ key = K, fields = { { "x", "float" } }, update = function(self, e)
      line = H.here(1)
      local _ = e:get(K).position
    end }
    local w = keel.world("W")
    for i = 1, 5 do w:spawn("E" .. i):add(K) end
    w:step(0.1)
    local f = one_entry(w, line)
    assert.are.equal("update", f.phase)
    assert.are.equal(K, f.kind)
    assert.are.equal(5, f.count) -- five components faulted, one entry
    assert.are.equal("update: " .. line .. ": NotFound: " .. K .. " has no field 'position'", f.message)
    w:step(0.1) -- faulted: nothing more
    assert.are.equal(1, #w:errors())
  end)

  it("the error object a callback catches has where, and tostring puts it first", function()
    local K = key("caught")
    local err, line
    keel.kind{ key = K, fields = {}, update = function(self, e)
      local ok
      line = H.here(1)
      ok, err = pcall(function() return e:get(K).nope end)
      assert(not ok)
    end }
    local w = keel.world("W")
    w:spawn("E"):add(K)
    w:step(0.1)
    assert.are.equal(0, #w:errors())
    assert.are.equal(line, err.where)
    assert.are.equal(line .. ": NotFound: " .. K .. " has no field 'nope'", tostring(err))
    assert.are.equal(K .. " has no field 'nope'", err.message) -- the message stays as it was
  end)

  it("a Lua error's own position is the entry's where too", function()
    local K = key("plain")
    local line
    keel.kind{ key = K, fields = {}, update = function()
      line = H.here(1)
      error("boom")
    end }
    local w = keel.world("W")
    w:spawn("E"):add(K)
    w:step(0.1)
    local f = w:errors()[1]
    assert.are.equal(line, f.where)
    assert.are.equal("update: " .. line .. ": boom", f.message)
  end)

  it("a system's each", function()
    local K = key("sys")
    local line
    keel.system{ name = key("system"), phase = "update", query = { K }, each = function(e, c)
      line = H.here(1)
      local _ = e:get(K).missing -- c is a self table (a missing field reads nil); a handle raises
    end }
    keel.kind{ key = K, fields = {} }
    local w = keel.world("W")
    w:spawn("E"):add(K)
    w:step(0.1)
    local f = one_entry(w, line)
    assert.truthy(f.system)
  end)

  it("a system's run", function()
    local line
    local name = key("run")
    keel.system{ name = name, phase = "late_update", run = function(w)
      line = H.here(1)
      w:spawn(7)
    end }
    local w = keel.world("W")
    w:step(0.1)
    local f = w:errors()[1]
    assert.are.equal(1, #w:errors())
    assert.are.equal(name, f.system)
    assert.are.equal(line, f.where)
    assert.truthy(f.message:find(line .. ": InvalidArgument: ", 1, true), f.message)
    keel.system{ name = name, phase = "late_update", run = function() end } -- harmless from now on
  end)

  it("an on_message handler", function()
    local K = key("msg")
    local line
    keel.kind{ key = K, fields = {}, on_message = function(self, e)
      line = H.here(1)
      local _ = e:get(K).missing
    end }
    local w = keel.world("W")
    local e = w:spawn("E")
    e:add(K)
    e:send("hit", {})
    w:step(0.1)
    local f = one_entry(w, line)
    assert.are.equal("on_message", f.phase)
  end)

  it("a timer", function()
    local line
    local w = keel.world("W")
    local e = w:spawn("E")
    e:add("core:transform")
    w:after(0, function()
      line = H.here(1)
      local _ = e:get("core:transform").missing
    end)
    w:step(0.1)
    local f = one_entry(w, line)
    assert.are.equal("number", type(f.timer))
  end)

  it("keel's own Lua modules are skipped: keel.system{} blames the declaring line", function()
    local ok, err = pcall(function() keel.system{ name = "where:bad", phase = "nope", run = print } end)
    local line = H.here(-1)
    assert.is_false(ok)
    H.assert_error("InvalidArgument", err)
    assert.are.equal(line, err.where)
  end)

  it("errors returned as nil, err carry no position", function()
    local w, err = keel.load("/nonexistent-dir/none.yaml")
    assert.is_nil(w)
    assert.is_nil(err.where)
  end)
end)
