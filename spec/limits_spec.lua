-- limits_spec.lua — the load limits held when values are set: what a world accepts, keel.load reads back.
local keel = require "keel"

keel.kind{ key = "hc:notes", multiplicity = "many", fields = { { "a", "string" }, { "b", "string" } } }
keel.kind{ key = "hc:writer", fields = { { "a", "string" }, { "b", "string" } },
  update = function(self) self.a = ("a"):rep(40 * 1024); self.b = ("b"):rep(40 * 1024) end }

local function catch(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return err
end

local function assert_error(code, err)
  assert.are.equal("table", type(err), "an error object expected, got " .. tostring(err))
  assert.are.equal(code, err.code)
  return err
end

local function reloads(w)
  local path = os.tmpname()
  assert.is_true(w:save(path))
  local back, err = keel.load(path)
  os.remove(path)
  assert.is_nil(err and tostring(err))
  assert.is_not_nil(back)
  return back
end

describe("limits held at set time", function()
  local KIB64 = 64 * 1024

  it("refuses entity and scene names over 64 KiB with LimitExceeded", function()
    local w = keel.world("W")
    assert_error("LimitExceeded", catch(function() w:spawn(("n"):rep(KIB64 + 1)) end))
    local e = w:spawn(("n"):rep(KIB64))
    assert_error("LimitExceeded", catch(function() e.name = ("m"):rep(KIB64 + 1) end))
    assert.are.equal(KIB64, #e.name)
    assert_error("LimitExceeded", catch(function() w.name = ("s"):rep(KIB64 + 1) end))
    assert.are.equal("W", w.name)
    reloads(w)
  end)

  it("refuses a string that makes a saved body larger than 64 KiB", function()
    local w = keel.world("W")
    local c = w:spawn("E"):add("hc:notes")
    c.a = ("a"):rep(40 * 1024)
    assert_error("LimitExceeded", catch(function() c.b = ("b"):rep(40 * 1024) end))
    assert.are.equal("", c.b)
    c.b = ("b"):rep(KIB64 - 40 * 1024 - 64)
    local back = reloads(w)
    assert.are.equal(1, back:count())
  end)

  it("refuses the same from a hook's writes: the hook faults, the fields stay", function()
    local w = keel.world("W")
    local c = w:spawn("E"):add("hc:writer")
    w:step(0.1)
    local errs = w:errors()
    assert.are.equal(1, #errs)
    assert.truthy(errs[1].message:match("larger than the limit"))
    assert.are.equal("", c.a)
    assert.are.equal("", c.b)
    reloads(w)
  end)
end)

describe("keel.world() names", function()
  it("refuses a scene name keel.load would refuse (LimitExceeded), not a silent empty name", function()
    local ok, err = pcall(keel.world, ("n"):rep(64 * 1024 + 1))
    assert.is_false(ok)
    assert.are.equal("LimitExceeded", err.code)
    assert.are.equal(("n"):rep(64 * 1024), keel.world(("n"):rep(64 * 1024)).name)
  end)
end)
