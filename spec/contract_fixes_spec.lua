-- contract_fixes_spec.lua — contract points a black-box audit found broken: persist argument
-- errors, NUL bytes in strings, shortest subnormal floats, remove without a slot for unknown
-- kinds, and concatenating an error object.
local keel = require "keel"
local H = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helper.lua")

local function catch(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return err
end

-- An error object with this code, whose __tostring starts with it.
local function assert_error(code, err)
  assert.are.equal("table", type(err), "an error object expected, got " .. tostring(err))
  assert.are.equal(code, err.code)
  assert.are.equal(code .. ": ", tostring(err):sub(1, #code + 2))
  return err
end

local SCENE_HEAD = [[
keel: 1
scene:
  uuid: 5a5e0000-0000-4000-8000-0000000000fe
  name: Fixes
entities:
]]

describe("keel.persist argument errors", function()
  local w, base, path
  before_each(function()
    w = keel.world("P")
    base = keel.persist.baseline(w)
    path = os.tmpname() .. ".sav"
  end)
  after_each(function() os.remove(path) end)

  it("are InvalidArgument error objects, as baseline's are", function()
    assert_error("InvalidArgument", catch(keel.persist.baseline, nil))
    assert_error("InvalidArgument", catch(keel.persist.save, w, nil, "x"))
    assert_error("InvalidArgument", catch(keel.persist.save, w, {}, "x"))
    assert_error("InvalidArgument", catch(keel.persist.save, nil, base, "x"))
    assert_error("InvalidArgument", catch(keel.persist.save, w, base, nil))
    assert_error("InvalidArgument", catch(keel.persist.save, w, base, "p", 5))
    assert_error("InvalidArgument", catch(keel.persist.save, w, base, "p", { title = 5 }))
    assert_error("InvalidArgument", catch(keel.persist.save, w, base, "p", { play_seconds = "x" }))
    assert_error("InvalidArgument", catch(keel.persist.save, w, base, "p", { saved_at = 1.5 }))
    assert_error("InvalidArgument", catch(keel.persist.save, w, base, "p", { [1] = "x" }))
    assert_error("InvalidArgument", catch(keel.persist.save, w, base, "p", { nested = {} }))
    assert_error("InvalidArgument", catch(keel.persist.save, w, base, "p", { speed = 0 / 0 }))
    assert_error("InvalidArgument", catch(keel.persist.load, w, nil))
    assert_error("InvalidArgument", catch(keel.persist.load, nil, path))
    assert_error("InvalidArgument", catch(keel.persist.info, nil))
    assert_error("InvalidArgument", catch(keel.persist.info, {}))
  end)

  it("name the argument in the message", function()
    local err = catch(keel.persist.save, w, nil, "x")
    assert.truthy(err.message:find("#2", 1, true), err.message)
    assert.truthy(err.message:find("keel.Baseline", 1, true), err.message)
    err = catch(keel.persist.save, w, base, "p", { title = 5 })
    assert.truthy(err.message:find("title", 1, true), err.message)
  end)

  it("refuse a freed baseline with an error object", function()
    base:free()
    local err = catch(keel.persist.save, w, base, path)
    assert.are.equal("table", type(err))
    assert.truthy(err.message:find("freed", 1, true), err.message)
    assert_error("InvalidArgument", catch(base.free, 5))
  end)

  it("leave the good calls working", function()
    assert.is_true(keel.persist.save(w, base, path, { title = "T", play_seconds = 3, lives = 2 }))
    local info = keel.persist.info(path)
    assert.are.equal("T", info.title)
    assert.are.equal(2, info.lives)
    assert.is_true(keel.persist.load(w, path))
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

describe("e:remove(key) of an unknown kind without a slot", function()
  local function crane_world()
    local w = assert(keel.load(H.ROOT .. "/scenes/unknown_kind.yaml"))
    return w, w:find("Crane"), w:find("Dock")
  end
  local function winches(e)
    local n = 0
    for _, c in ipairs(e:components()) do if c.kind == "mod:winch" then n = n + 1 end end
    return n
  end

  it("is InvalidOperation when the entity holds several, and removes nothing", function()
    local w, crane = crane_world()
    local before = w:dump()
    local err = assert_error("InvalidOperation", catch(crane.remove, crane, "mod:winch"))
    assert.truthy(err.message:find("slot", 1, true), err.message)
    assert.are.equal(2, winches(crane))
    assert.are.equal(before, w:dump())
  end)

  it("removes the only one when there is nothing to guess", function()
    local _, crane, dock = crane_world()
    assert.are.equal(12.5, dock:remove("mod:winch").rope_length)
    assert.are.equal(0, winches(dock))
    assert.are.equal(8, crane:remove("mod:winch", 2).rope_length)
    assert.are.equal(30, crane:remove("mod:winch").rope_length)
    assert.are.equal(0, winches(crane))
  end)

  it("behaves the same through history, whose undo still works", function()
    local history = require "keel.history"
    local w, crane = crane_world()
    local h = history.new(w)
    assert_error("InvalidOperation", catch(h.remove, h, crane, "mod:winch"))
    assert.is_false(h:undo())
    h:remove(crane, "mod:winch", 0)
    assert.are.equal(1, winches(crane))
    assert.is_true(h:undo())
    assert.are.equal(2, winches(crane))
  end)

  it("leaves e:get(key) at the lowest slot, as for many kinds", function()
    local _, crane = crane_world()
    assert.are.equal(0, crane:get("mod:winch").slot)
    assert.are.equal(2, crane:get("mod:winch", 2).slot)
  end)
end)

describe("error objects", function()
  it("concatenate as their text on either side (the io.open idiom)", function()
    local w, err = keel.load("/nonexistent-dir/none.yaml")
    assert.is_nil(w)
    local text = tostring(err)
    assert.are.equal("could not load: " .. text, "could not load: " .. err)
    assert.are.equal(text .. "!", err .. "!")
    assert.are.equal("1" .. text, 1 .. err)
    assert.are.equal(text .. text, err .. err)
    assert.are.equal("a: " .. text .. " b", "a: " .. err .. " b")
    local raised = catch(function() keel.world("C"):spawn("e"):add("fx:no_such_kind") end)
    assert.are.equal("failed: " .. tostring(raised), "failed: " .. raised)
  end)

  it("refuse to concatenate with what a string would refuse", function()
    local _, err = keel.load("/nonexistent-dir/none.yaml")
    assert.has_error(function() return err .. {} end)
    assert.has_error(function() return nil .. err end)
  end)
end)
