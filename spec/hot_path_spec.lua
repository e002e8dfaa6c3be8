-- hot_path_spec.lua — the hot paths' misuse cases: w:spawn's bodies checked once and written
-- later, e:add's World found through the handle's metatable, and c.x's fast read/write, each
-- against what plain Lua can do in between (metatables, awakes that redeclare, destroy, close).
local keel = require "keel"

local H = require "helper"
local code_of = H.code_of
local key = H.key_maker("hot_path")

local function ok_or_keel_error(f)
  local ok, err = pcall(f)
  if not ok then assert.are.equal("table", type(err), "a keel error object: " .. tostring(err)) end
  return ok, err
end

describe("w:spawn bodies", function()
  it("read a body table raw: a metatable's __index supplies no field and runs no code", function()
    local K = key("plain")
    keel.kind{ key = K, fields = { { "x", "float", default = 1 }, { "y", "float", default = 2 } } }
    local w = keel.world()
    local ran = false
    local body = setmetatable({ K, x = 5 }, { __index = function() ran = true; return 9 end })
    local e = w:spawn{ name = "E", components = { body } }
    assert.are.equal(5, e:get(K).x)
    assert.are.equal(2, e:get(K).y)
    assert.is_false(ran)
  end)

  it("see a kind redeclared (fields reordered) by an earlier component's awake", function()
    local A, B = key("redeclarer"), key("reordered")
    keel.kind{ key = B, fields = { { "x", "float" }, { "y", "float" } } }
    keel.kind{ key = A, fields = { { "v", "float" } }, awake = function()
      keel.kind{ key = B, fields = { { "y", "float" }, { "z", "float", default = 7 }, { "x", "float" } } }
    end }
    local w = keel.world()
    local e = w:spawn{ name = "E", components = { A, { B, x = 1, y = 2 } } }
    local b = e:get(B)
    assert.are.equal(1, b.x)
    assert.are.equal(2, b.y)
    assert.are.equal(7, b.z)
  end)

  it("with a reference to an entity an earlier awake destroyed refuse, leaving no half entity", function()
    local A, R = key("killer"), key("ref")
    local victim
    keel.kind{ key = R, fields = { { "target", "entity" } } }
    keel.kind{ key = A, fields = { { "v", "float" } }, awake = function() victim:destroy() end }
    local w = keel.world()
    victim = w:spawn("Victim")
    local ok = ok_or_keel_error(function()
      return w:spawn{ name = "E", components = { A, { R, target = victim } } }
    end)
    local e = w:find("E")
    if ok then
      assert.is_nil(e:get(R).target) -- never a handle to a dead (or reused) index
    else
      assert.is_nil(e)
    end
    local again = w:spawn("Again") -- the victim's index, reused: still not the target
    if ok then assert.are_not.equal(again, e:get(R).target) end
  end)

  it("refuse w:close() inside an awake (InvalidOperation) and finish the spawn's later bodies", function()
    local A, B = key("closer"), key("after_close")
    keel.kind{ key = B, fields = { { "x", "float" } } }
    local w = keel.world()
    local code
    keel.kind{ key = A, fields = { { "v", "float" } }, awake = function() code = code_of(w.close, w) end }
    local e = w:spawn{ name = "E", components = { A, { B, x = 3 } } }
    assert.are.equal("InvalidOperation", code)
    assert.are.equal(3, e:get(B).x)
    w:close()
    assert.are.equal("NotFound", code_of(function() return w:spawn("F") end))
  end)

  it("run inside a coroutine, and an awake that yields raises instead of leaving the spawn half done", function()
    local A, B = key("yielder"), key("after_yield")
    keel.kind{ key = B, fields = { { "x", "float" } } }
    keel.kind{ key = A, fields = { { "v", "float" } }, awake = function() coroutine.yield(1) end }
    local w = keel.world()
    local co = coroutine.create(function()
      local e = w:spawn{ name = "Plain", components = { { B, x = 4 } } }
      assert.are.equal(4, e:get(B).x)
      return w:spawn{ name = "Y", components = { A, { B, x = 5 } } }
    end)
    local ok = coroutine.resume(co)
    assert.are.equal("dead", coroutine.status(co))
    if ok then assert.are.equal(5, w:find("Y"):get(B).x) end
    w:spawn{ name = "Z", components = { { B, x = 6 } } }
    assert.are.equal(6, w:find("Z"):get(B).x)
  end)

  it("keep a body's values when garbage with a __gc that writes a component is collected between", function()
    local B = key("gc_body")
    keel.kind{ key = B, fields = { { "x", "float" }, { "y", "float" } } }
    local w = keel.world()
    local target = w:spawn{ name = "T", components = { { B, x = 1 } } }:get(B)
    for i = 1, 200 do
      setmetatable({}, { __gc = function() target.x = i end })
      local e = w:spawn{ name = "E" .. i, components = { { B, x = i, y = -i } } }
      local c = e:get(B)
      assert.are.equal(i, c.x)
      assert.are.equal(-i, c.y)
    end
    collectgarbage()
  end)
end)

describe("e:add's World through the handle's metatable", function()
  it("refuses a table dressed in an entity handle's metatable", function()
    local B = key("dressed")
    keel.kind{ key = B, fields = { { "x", "float" } } }
    local w = keel.world()
    local e = w:spawn("E")
    local mt = getmetatable(e)
    if type(mt) ~= "table" then return end -- a protected metatable: nothing to forge with
    local fake = setmetatable({}, mt)
    assert.is_false(pcall(e.add, fake, B, { x = 1 }))
    assert.is_false(pcall(e.add, w, B, { x = 1 }))
    assert.is_nil(e:get(B))
  end)

  it("refuses a handle of a closed world and of a destroyed entity whose index came back", function()
    local B = key("stale_add")
    keel.kind{ key = B, fields = { { "x", "float" } } }
    local w = keel.world()
    local e = w:spawn("E")
    e:destroy()
    local again = w:spawn("Again")
    assert.are.equal("NotFound", code_of(function() return e:add(B, { x = 1 }) end))
    assert.is_nil(again:get(B))
    w:close()
    assert.are.equal("NotFound", code_of(function() return again:add(B, { x = 1 }) end))
  end)
end)

describe("c.x's fast path", function()
  local B = key("fast")
  keel.kind{ key = B, fields = { { "x", "float", default = 1 }, { "y", "float", default = 2 } } }

  it("raises NotFound for a handle of a closed world, read or written", function()
    local w = keel.world()
    local c = w:spawn{ name = "E", components = { { B, x = 3 } } }:get(B)
    assert.are.equal(3, c.x)
    w:close()
    assert.are.equal("NotFound", code_of(function() return c.x end))
    assert.are.equal("NotFound", code_of(function() c.x = 4 end))
  end)

  it("raises NotFound once the entity is destroyed, even when its index and row are reused", function()
    local w = keel.world()
    local e = w:spawn{ name = "E", components = { { B, x = 3 } } }
    local c = e:get(B)
    assert.are.equal(3, c.x)
    e:destroy()
    local again = w:spawn{ name = "Again", components = { { B, x = 8 } } }
    assert.are.equal("NotFound", code_of(function() return c.x end))
    assert.are.equal("NotFound", code_of(function() c.x = 4 end))
    assert.are.equal(8, again:get(B).x)
  end)

  it("reads and writes the right field after the kind is redeclared with its fields reordered", function()
    local K = key("reorder")
    keel.kind{ key = K, fields = { { "x", "float" }, { "y", "float" } } }
    local w = keel.world()
    local c = w:spawn{ name = "E", components = { { K, x = 1, y = 2 } } }:get(K)
    assert.are.equal(1, c.x) -- the fast path's field table is built
    keel.kind{ key = K, fields = { { "w", "string", default = "pad" }, { "y", "float" }, { "x", "float" } } }
    assert.are.equal(1, c.x)
    assert.are.equal(2, c.y)
    c.x = 5
    assert.are.equal(5, c.x)
    assert.are.equal(2, c.y)
    assert.are.equal("pad", c.w)
    keel.kind{ key = K, fields = { { "y", "float" } } } -- x gone
    assert.are.equal(2, c.y)
    assert.are.equal("NotFound", code_of(function() return c.x end))
  end)

  it("never reaches one world's record through another world's metatable", function()
    local a, b = keel.world(), keel.world()
    local ca = a:spawn{ name = "A", components = { { B, x = 1 } } }:get(B)
    local cb = b:spawn{ name = "B", components = { { B, x = 2 } } }:get(B)
    local mta, mtb = getmetatable(ca), getmetatable(cb)
    if type(mta) == "table" and type(mtb) == "table" then
      if type(mta.__index) == "function" then assert.are.equal(2, mta.__index(cb, "x")) end
      if type(mta.__newindex) == "function" then mta.__newindex(cb, "x", 9) end
      assert.are.equal(1, ca.x)
      assert.are.equal(cb.x == 9 or cb.x == 2, true)
      local fake = setmetatable({}, mta)
      assert.is_false(pcall(function() return fake.x end))
      assert.is_false(pcall(function() fake.x = 1 end))
    end
    b:close()
    assert.are.equal("NotFound", code_of(function() return cb.x end))
    assert.are.equal(1, ca.x)
  end)

  it("writes integers and refuses non-numbers into a float field", function()
    local w = keel.world()
    local c = w:spawn{ name = "E", components = { B } }:get(B)
    c.x = 3
    assert.are.equal(3, c.x)
    c.x = math.maxinteger
    assert.are.equal(math.maxinteger + 0.0, c.x)
    assert.are.equal("InvalidArgument", code_of(function() c.x = "1" end))
    assert.are.equal("InvalidArgument", code_of(function() c.x = {} end))
    assert.is_false(rawequal(c, w:spawn("F")))
  end)
end)

describe("entities and names across worlds", function()
  local B = key("named")
  keel.kind{ key = B, fields = { { "x", "float" } } }

  it("keep their names through transfer, duplicate, reparent and undo of destroy", function()
    local a, b = keel.world(), keel.world()
    local p = a:spawn("Parent")
    for i = 1, 40 do a:spawn{ name = "Kid" .. (i % 5), parent = p, components = { { B, x = i } } } end
    local moved = a:transfer(p, b)
    a:close() -- a's name table is gone: b's names are its own
    assert.are.equal("Parent", moved.name)
    local kids = moved:children()
    assert.are.equal(40, #kids)
    for i, k in ipairs(kids) do
      assert.are.equal("Kid" .. (i % 5), k.name)
      assert.are.equal(i, k:get(B).x)
    end
    local h = require("keel.history").new(b)
    h:destroy(moved)
    for _ = 1, 50 do b:spawn("Filler") end -- indexes and names churn meanwhile
    assert.is_true(h:undo())
    local back = b:find("Parent")
    assert.are.equal(40, #back:children())
    assert.are.equal("Kid1", back:children()[1].name)
  end)
end)

describe("w:close from a __gc finalizer", function()
  local S = key("gc_strings")
  keel.kind{ key = S, multiplicity = "many", fields = { { "s", "string" }, { "x", "float" }, { "v", "vec3" } } }

  -- Arms finalizers that try to close w; the collector is set to run at nearly every allocation,
  -- so they fire in the middle of the calls below. Returns the codes the closes raised.
  local function armed(w)
    local codes, on = {}, { true }
    for _ = 1, 20 do
      setmetatable({}, { __gc = function()
        if not on[1] then return end
        on[1] = false
        local ok, err = pcall(w.close, w)
        codes[#codes + 1] = ok and "closed" or err.code
      end })
    end
    collectgarbage("incremental", 0, 100, 0)
    return codes, on
  end

  after_each(function() collectgarbage("incremental", 200, 100, 13); collectgarbage() end)

  it("is refused (InvalidOperation), so a w:spawn it interrupts finishes on a live world", function()
    for trial = 1, 60 do
      local w = keel.world()
      local comps = {}
      for i = 1, 40 do comps[i] = { S, s = "v" .. i .. "_" .. trial, x = i, v = { i, i, i } } end
      local codes, on = armed(w)
      local e = w:spawn{ name = "E", components = comps }
      on[1] = false
      for _, c in ipairs(codes) do assert.are.equal("InvalidOperation", c) end
      assert.are.equal(40, #e:components())
      w:close()
    end
  end)

  it("is refused, so an e:add it interrupts returns a live handle", function()
    for trial = 1, 60 do
      local w = keel.world()
      local e = w:spawn("E")
      local codes, on = armed(w)
      for i = 1, 20 do
        local c = e:add(S, { s = "v" .. i .. "_" .. trial, x = i, v = { i, i, i } })
        assert.are.equal(i, c.x)
      end
      on[1] = false
      for _, code in ipairs(codes) do assert.are.equal("InvalidOperation", code) end
      w:close()
    end
  end)
end)

describe("__gc finalizers in the middle of component reads, writes, adds and spawns", function()
  local K = key("gc_mid")
  keel.kind{ key = K, fields = { { "s", "string" }, { "x", "float" }, { "v", "vec3" } } }
  local flip = false

  after_each(function() collectgarbage("incremental", 200, 100, 13); collectgarbage() end)

  -- Each round arms finalizers doing `act` once, with the collector running at nearly every
  -- allocation, then reads and writes fields, adds and spawns: nothing may read freed memory
  -- (the ASan build), each value read back is the one written, and the acts that would free what
  -- the interrupted call holds are refused (InvalidOperation).
  local function churn(mode)
    local refused = 0
    for trial = 1, 40 do
      local w = keel.world()
      local e = w:spawn("E")
      local c = e:add(K, { s = "a", x = 1 })
      local others = {}
      for i = 1, 10 do others[i] = w:spawn{ name = "O" .. i, components = { { K, s = "o" .. i } } } end
      if mode == "stop" then w:play() end
      local on = { true }
      for _ = 1, 20 do
        setmetatable({}, { __gc = function()
          if not on[1] then return end
          on[1] = false
          local ok, err = true, nil
          if mode == "redeclare" then
            flip = not flip
            local fields = flip and { { "v", "vec3" }, { "pad", "string", default = "p" }, { "x", "float" }, { "s", "string" } }
              or { { "s", "string" }, { "x", "float" }, { "v", "vec3" } }
            ok, err = pcall(keel.kind, { key = K, fields = fields })
          elseif mode == "stop" then
            ok, err = pcall(w.stop, w)
          else
            for _, o in ipairs(others) do o:destroy() end
          end
          if not ok then
            assert(err.code == "InvalidOperation", tostring(err))
            refused = refused + 1
          end
        end })
      end
      collectgarbage("incremental", 0, 100, 0)
      for i = 1, 20 do
        local s = "value " .. i .. " " .. trial
        c.s = s
        c.x = i
        c.v = { i, i + 1, i + 2 }
        assert.are.equal(s, c.s)
        assert.are.equal(i, c.x)
        assert.are.equal(i + 2, c.v[3])
        local n = w:spawn{ name = "N" .. i, components = { { K, s = "n" .. i, x = i, v = { i, i, i } } } }
        assert.are.equal(i, n:get(K).x)
        assert.are.equal("n" .. i, n:get(K).s)
      end
      on[1] = false
      collectgarbage("incremental", 200, 100, 13)
      if mode == "stop" then w:stop() end
      w:close()
    end
    return refused
  end

  it("refuse keel.kind there (a redeclaration would free the description and records in use)", function()
    assert.is_true(churn("redeclare") > 0)
  end)

  it("refuse w:stop there (the played copy's records would be freed in use)", function()
    assert.is_true(churn("stop") > 0)
  end)

  it("may destroy other entities there", function()
    assert.are.equal(0, churn("destroy"))
  end)
end)
