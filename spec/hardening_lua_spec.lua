-- hardening_lua_spec.lua — issue 17's Lua-side memory-safety items: each case crashed (under
-- ASan) or misbehaved before its fix.
local keel = require "keel"
local H = require "spec.helper"

local n = 0
local function key(what)
  n = n + 1
  return ("hl:%s%d"):format(what, n)
end

-- A pcall's failure as an InvalidOperation error object, from inside a callback.
local function refused(f)
  local ok, err = pcall(f)
  return not ok and type(err) == "table" and err.code == "InvalidOperation"
end

describe("w:close() inside a callback of its world (issue 17, item 2)", function()
  it("refuses inside awake: InvalidOperation, and the world stays usable", function()
    local w = keel.world("C")
    local seen
    local k = key("awake")
    keel.kind{ key = k, fields = { { "x", "float" } },
      awake = function(self) self.x = 5; seen = refused(function() w:close() end) end }
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
      on_destroy = function(self) self.x = 3; seen = refused(function() w:close() end) end }
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
      validate = function() seen = refused(function() w:close() end); return true end }
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
        seen = refused(function() fresh:close() end)
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
    keel.kind{ key = k, fields = {}, update = function() seen = refused(function() w:close() end) end }
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

-- An error value whose __tostring itself raises.
local function bad_error()
  return setmetatable({}, { __tostring = function() error("tostring raised") end })
end

describe("a callback error whose __tostring raises (issue 17, item 3)", function()
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

describe("c:set{} with a validate hook that changes the argument table (issue 17, item 4)", function()
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

describe("keel.history misuse (issue 17, item 11)", function()
  local history = require "keel.history"

  it("raises InvalidArgument error objects for a wrong self", function()
    local h = history.new(keel.world("H"))
    local e = h:spawn("e")
    for _, call in ipairs{
      function() h.undo() end, function() h.redo(nil) end, function() h.spawn(1, "x") end,
      function() h.destroy("h", e) end, function() h.add({}, e, "x") end, function() h.remove(e, e, "x") end,
      function() h.set(true, nil, "n", 1) end, function() h.reparent(nil, e) end, function() h.rename(nil, e, "n") end,
    } do
      local err = H.fails("InvalidArgument", call)
      assert.truthy(err.message:match("a history expected"), err.message)
    end
  end)

  it("keel.core._invalid raises an error object whatever it is given", function()
    H.fails("InvalidArgument", function() keel._invalid("boom") end)
    H.fails("InvalidArgument", function() keel._invalid() end)
    H.fails("InvalidArgument", function() keel._invalid({}) end)
  end)
end)
