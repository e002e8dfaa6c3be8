-- lua_kind_fields_spec.lua — keel.kind{} with many fields: any count up to the limit
-- (1024) declares, spawns, sets, reads, dumps and parses back; one more is LimitExceeded.
local keel = require "keel"

local fails = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "helper.lua").fails

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
