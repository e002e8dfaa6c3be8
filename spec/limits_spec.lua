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

describe("limits held where a body is built", function()
  local A, B, C = ("a"):rep(60000), ("b"):rep(60000), ("c"):rep(60000)
  local SMALL = ("s"):rep(1000)
  local awoken = 0
  keel.kind{ key = "hb:big", fields = { { "a", "string" }, { "b", "string" }, { "c", "string" } } }
  keel.kind{ key = "hb:checked", fields = { { "a", "string" }, { "b", "string" }, { "c", "string" } },
    validate = function() return true end }
  keel.kind{ key = "hb:woken", fields = { { "a", "string" }, { "b", "string" }, { "c", "string" } },
    awake = function() awoken = awoken + 1 end }
  keel.kind{ key = "hb:defaulted", fields = { { "a", "string", default = ("d"):rep(40000) }, { "b", "string" } } }
  local KINDS = { "hb:big", "hb:checked", "hb:woken" }

  -- an empty world loaded from a file, with its save-game baseline: a save game needs both
  local function fresh()
    local path = os.tmpname()
    assert.is_true(keel.world("W"):save(path))
    local w = assert(keel.load(path))
    return w, { path = path, base = keel.persist.baseline(w) }
  end

  -- what a save and a save game write, their loads read back
  local function round_trips(w, f)
    local back = reloads(w)
    local slot = os.tmpname()
    assert.is_true(keel.persist.save(w, f.base, slot))
    local into = assert(keel.load(f.path))
    local ok, err = keel.persist.load(into, slot)
    os.remove(slot)
    os.remove(f.path)
    assert.is_nil(err and tostring(err))
    assert.is_true(ok)
    assert.are.equal(w:count(), into:count())
    return back
  end

  it("refuses a spawn whose body a save could not write (LimitExceeded), creating nothing", function()
    for _, k in ipairs(KINDS) do
      local w, f = fresh()
      local rev = w.revision
      awoken = 0
      local err = assert_error("LimitExceeded", catch(function()
        w:spawn{ name = "X", components = { { "core:transform" }, { k, a = A, b = B, c = C } } }
      end))
      assert.truthy(err.message:match("larger than the limit"), err.message)
      assert.are.equal(0, w:count(), k)
      assert.are.equal(rev, w.revision, k)
      assert.are.equal(0, awoken, k)
      w:spawn{ name = "Y", components = { { k, a = A, b = SMALL } } } -- within the limit
      assert.are.equal(1, round_trips(w, f):count())
    end
  end)

  it("counts a default string the body keeps", function()
    local w, f = fresh()
    assert_error("LimitExceeded", catch(function() w:spawn{ components = { { "hb:defaulted", b = B } } } end))
    assert.are.equal(0, w:count())
    w:spawn{ components = { { "hb:defaulted", a = "", b = B } } }
    round_trips(w, f)
  end)

  it("refuses an add with such a body, leaving the entity as it was", function()
    for _, k in ipairs(KINDS) do
      local w, f = fresh()
      local e = w:spawn("E")
      assert_error("LimitExceeded", catch(function() e:add(k, { a = A, b = B, c = C }) end))
      assert.is_nil(e:get(k), k)
      e:add(k, { a = A, c = SMALL })
      round_trips(w, f)
    end
  end)

  it("refuses the same over the channel: object.spawn and component.add", function()
    local channel = require "keel.channel"
    local w, f = fresh()
    local e = w:spawn("E")
    local ch = channel.new(w)
    local body = { a = A, b = B, c = C }
    assert_error("LimitExceeded", catch(ch.call, ch, "object.spawn",
      { name = "X", components = channel.array { { kind = "hb:big", body = body } } }))
    assert_error("LimitExceeded", catch(ch.call, ch, "component.add", { object = e.uuid, kind = "hb:big", body = body }))
    assert.are.equal(1, w:count())
    assert.is_nil(e:get("hb:big"))
    round_trips(w, f)
  end)

  it("refuses an instantiate whose set makes such a body, publishing nothing", function()
    local src = keel.world("P")
    src:spawn{ name = "T", components = { { "hb:big", a = A } } }
    local path = os.tmpname()
    assert.is_true(src:save(path))
    local p = assert(keel.prefab(path))
    os.remove(path)
    local w, f = fresh()
    assert_error("LimitExceeded", catch(w.instantiate, w, p, { set = { ["hb:big"] = { b = B, c = C } } }))
    assert.are.equal(0, w:count())
    w:instantiate(p, { set = { ["hb:big"] = { b = SMALL } } })
    round_trips(w, f)
  end)

  it("keeps what duplicate and transfer build within it", function()
    local w, f = fresh()
    local other, fo = fresh()
    local e = w:spawn{ name = "E", components = { { "hb:big", a = A, b = SMALL } } }
    local copy = e:duplicate()
    assert.are.equal(A, copy:get("hb:big").a)
    w:transfer(copy, other)
    assert.are.equal(1, round_trips(other, fo):count())
    assert.are.equal(1, round_trips(w, f):count())
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
