-- access_keys_spec.lua — c.key and c.key = v on a live handle: the hot path finds a field by the
-- key's object, so every key that is not one of the kind's field names (other types, a long
-- string, a name built at run time) must still mean what the general path says, and a float
-- write the hot path hands to core must be refused as keel_set refuses it.
local keel = require "keel"

local H = require "helper"

local K = "ak:a"
local LONG = "f" .. string.rep("l", 60) -- a long string: not interned, equal copies are other objects
keel.kind{ key = K, fields = { { "x", "float", default = 2 }, { "n", "int", default = 3 }, { LONG, "float", default = 4 },
                               { "1", "float", default = 5 }, { "b", "float", default = 1, min = 0, max = 10 },
                               { "ro", "float", default = 6, readonly = true } } }

local function handle()
  local w = keel.world()
  local e = w:spawn("E")
  e:add(K, {})
  local c = e:get(K)
  assert.are.equal(2, c.x) -- the kind's names are known from here on
  return c, w, e
end

describe("a live handle's field keys", function()
  it("answers a key of another type as the general path does", function()
    local c, w = handle()
    local other = w:spawn("F")
    other:add(K, {})
    local lud -- the World's light userdata, an upvalue of the handle's own __index
    for i = 1, 5 do
      local _, v = debug.getupvalue(getmetatable(c).__index, i)
      if type(v) == "userdata" and not getmetatable(v) then lud = v end
    end
    assert.is_not_nil(lud)
    for _, k in ipairs{ true, false, {}, print, function() end, lud, other:get(K), c } do
      local err = H.fails("InvalidArgument", function() return c[k] end)
      assert.matches("a field name expected", err.message)
      H.fails("InvalidArgument", function() c[k] = 1 end)
    end
    H.fails("NotFound", function() return c[1.5] end)
    H.fails("NotFound", function() c[1.5] = 1 end)
    H.fails("NotFound", function() return c.nope end)
    assert.are.equal(5, c[1]) -- a number names the field its string names
    c[1] = 7
    assert.are.equal(7, c["1"])
  end)

  it("finds a field by a name built at run time and by a long name's copy", function()
    local c = handle()
    local x = table.concat{ "x", "" }
    assert.are.equal(2, c[x])
    c[x] = 8
    assert.are.equal(8, c.x)
    local long = ("l"):rep(60):gsub("^", "f")
    assert.are.equal(4, c[long])
    c[long] = 9
    assert.are.equal(9, c[LONG])
  end)

  it("refuses a float write keel_set refuses, and writes nothing", function()
    local c, _, e = handle()
    for _, v in ipairs{ 1 / 0, -1 / 0, 0 / 0 } do
      H.fails("InvalidArgument", function() c.x = v end)
    end
    H.fails("InvalidArgument", function() c.x = "3" end)
    assert.are.equal(2, c.x)
    H.fails("InvalidArgument", function() c.b = 11 end) -- out of its bounds
    assert.are.equal(1, c.b)
    c.b = 10
    assert.are.equal(10, c.b)
    H.fails("Unsupported", function() c.ro = 1 end)
    assert.are.equal(6, c.ro)
    c.n = 4 -- an int field takes a whole number
    assert.are.equal(4, e:get(K).n)
    local v0 = c.version
    c.x = 3
    assert.are.equal(v0 + 1, c.version) -- a write through the hot path moves the counters
  end)
end)
