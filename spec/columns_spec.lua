-- columns_spec.lua — keel.system{ columns = ... } (gameplay.md, "Column systems"): one call per
-- batch with each queried kind's fields as arrays, only `writes` kinds read back, a batch one
-- transaction; compared with `each` on the same world.
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("columns")
local POS, VEL, TAG = key("pos"), key("vel"), key("tag")
keel.kind{ key = POS, fields = { { "x", "float" }, { "y", "float" }, { "hits", "int" } } }
keel.kind{ key = VEL, fields = { { "x", "float", default = 1 }, { "y", "float", default = 2 } } }
keel.kind{ key = TAG, fields = { { "n", "int", min = 0, max = 100 }, { "label", "string" } } }

local n = 0
local function name() n = n + 1 return "cs:" .. n end
local used = {}
local function system(spec)
  spec.name = spec.name or name()
  used[#used + 1] = spec.name
  return keel.system(spec)
end
after_each(function() -- systems are process-wide: every one of this file is emptied again
  for _, s in ipairs(used) do keel.system{ name = s, phase = "update", run = function() end } end
  used = {}
end)

-- A world of `count` movers; every 7th is disabled, every 5th lacks VEL, one is under a disabled parent.
local function world(count)
  local w = keel.world("C")
  local off = w:spawn("Off")
  off.enabled = false
  for i = 1, count do
    local e = w:spawn{ name = "E" .. i, parent = i == 3 and off or nil,
      components = { { POS, x = i, y = -i } } }
    if i % 5 ~= 0 then e:add(VEL, { x = i / 10, y = 1 }) end
    if i % 7 == 0 then e.enabled = false end
  end
  return w
end

local function state(w)
  local out = {}
  for e in w:entities() do
    local p = e:get(POS)
    if p then out[e.name] = { p.x, p.y, p.hits, p.version } end
  end
  return out
end

describe("a columns system", function()
  it("gives the same fields, versions and skipped entities as each", function()
    local a, b = world(600), world(600) -- more than one batch
    local sa = system{ phase = "update", query = { POS, VEL }, each = function(_, p, v, dt)
      p.x = p.x + v.x * dt
      p.y = p.y + v.y * dt
    end }
    a:step(0.5)
    system{ name = sa, phase = "update", run = function() end }
    system{ phase = "update", query = { POS, VEL }, writes = { POS }, columns = function(count, p, v, dt)
      local px, py, vx, vy = p.x, p.y, v.x, v.y
      for i = 1, count do
        px[i] = px[i] + vx[i] * dt
        py[i] = py[i] + vy[i] * dt
      end
    end }
    b:step(0.5)
    assert.are.same(state(a), state(b))
    assert.are.equal(3, b:find("E3"):get(POS).x) -- under a disabled parent: skipped
    assert.are.equal(7, b:find("E7"):get(POS).x) -- disabled: skipped
    assert.are.equal(5, b:find("E5"):get(POS).x) -- no VEL: not in the query
    assert.are.equal(1.05, b:find("E1"):get(POS).x)
    a:close()
    b:close()
  end)

  it("calls once per batch of up to 256, arrays as long as the batch, none left from a longer one", function()
    local w = world(400) -- 400 minus the skipped (273 visited): one full batch and a short one
    local sizes, lens, stale = {}, {}, false
    system{ phase = "update", query = { POS, VEL }, columns = function(count, p)
      sizes[#sizes + 1] = count
      lens[#lens + 1] = #p.x
      if p.x[count + 1] ~= nil or p.hits[count + 1] ~= nil then stale = true end
    end }
    w:step(1 / 60)
    assert.are.equal(2, #sizes)
    assert.are.equal(256, sizes[1])
    assert.are.equal(17, sizes[2])
    assert.are.same(sizes, lens)
    assert.is_false(stale)
    w:close()
  end)

  it("never writes back a kind not in writes, even when the code changed its arrays", function()
    local w = world(20)
    local v0 = w:find("E1"):get(VEL).version
    system{ phase = "update", query = { POS, VEL }, writes = { POS }, columns = function(count, p, v)
      for i = 1, count do
        v.x[i] = 1000
        p.hits[i] = p.hits[i] + 1
      end
    end }
    w:step(1 / 60)
    local e = w:find("E1")
    assert.are.equal(0.1, e:get(VEL).x)
    assert.are.equal(v0, e:get(VEL).version)
    assert.are.equal(1, e:get(POS).hits)
    w:close()
  end)

  it("is read-only without writes: nothing written, no version bumps", function()
    local w = world(10)
    local v0 = w:find("E1"):get(POS).version
    system{ phase = "update", query = { POS }, columns = function(count, p)
      for i = 1, count do p.x[i] = -1 end
    end }
    w:step(1 / 60)
    assert.are.equal(1, w:find("E1"):get(POS).x)
    assert.are.equal(v0, w:find("E1"):get(POS).version)
    w:close()
  end)

  it("rolls a failing batch back whole and faults the system, as each does", function()
    local w = keel.world("F")
    for i = 1, 10 do w:spawn{ name = "T" .. i, components = { { TAG, n = i } } } end
    local calls = 0
    local s = system{ phase = "update", query = { TAG }, writes = { TAG }, columns = function(count, t)
      calls = calls + 1
      for i = 1, count do t.n[i] = t.n[i] + 1 end
      t.n[count] = 1000 -- over max: the write-back refuses, after the others were checked
    end }
    w:step(1 / 60)
    for i = 1, 10 do assert.are.equal(i, w:find("T" .. i):get(TAG).n) end
    local errs = w:errors()
    assert.are.equal(1, #errs)
    assert.truthy(errs[1].message:find(s, 1, true))
    w:step(1 / 60)
    assert.are.equal(1, calls) -- faulted: not called again
    keel.system_reset(s)
    system{ name = s, phase = "update", query = { TAG }, writes = { TAG }, columns = function(count, t)
      for i = 1, count do t.n[i] = t.n[i] + 1 end
      w:spawn("during") -- a structural change inside the batch
      error("late failure")
    end }
    local before = w:count()
    w:step(1 / 60)
    assert.are.equal(before, w:count())
    assert.are.equal(1, w:find("T1"):get(TAG).n)
    w:close()
  end)

  it("refuses a float array holding NaN and writes none of the batch's floats", function()
    local w = world(10)
    local x1 = w:find("E1"):get(POS).x
    system{ phase = "update", query = { POS, VEL }, writes = { POS }, columns = function(count, p)
      for i = 1, count do p.x[i] = p.x[i] + 100 end
      p.y[count] = 0 / 0
    end }
    w:step(1 / 60)
    assert.are.equal(x1, w:find("E1"):get(POS).x)
    assert.are.equal(1, #w:errors())
    w:close()
  end)

  it("writes other field types through the general path with their checks", function()
    local w = keel.world("G")
    for i = 1, 4 do w:spawn{ name = "T" .. i, components = { { TAG, n = i, label = "a" } } } end
    system{ phase = "update", query = { TAG }, writes = { TAG }, columns = function(count, t)
      for i = 1, count do t.label[i] = t.label[i] .. i end
    end }
    w:step(1 / 60)
    assert.are.equal("a2", w:find("T2"):get(TAG).label)
    w:close()
  end)

  it("hands out entity handles as a.entity[i] when asked", function()
    local w = world(12)
    local names = {}
    system{ phase = "update", query = { POS, VEL }, entities = true, columns = function(count, p, v)
      assert(p.entity == v.entity)
      for i = 1, count do names[#names + 1] = p.entity[i].name end
    end }
    w:step(1 / 60)
    assert.are.same({ "E1", "E2", "E4", "E6", "E8", "E9", "E11", "E12" }, names)
    w:close()
  end)

  it("picks up a redeclaration (hot reload) at the next step", function()
    local w = world(4)
    local s = system{ phase = "update", query = { POS }, writes = { POS }, columns = function(count, p)
      for i = 1, count do p.x[i] = p.x[i] + 1 end
    end }
    w:step(1 / 60)
    assert.are.equal(2, w:find("E1"):get(POS).x)
    system{ name = s, phase = "update", query = { POS }, writes = { POS }, columns = function(count, p)
      for i = 1, count do p.x[i] = p.x[i] * 10 end
    end }
    w:step(1 / 60)
    assert.are.equal(20, w:find("E1"):get(POS).x)
    w:close()
  end)

  it("is refused at declaration when misdeclared (InvalidArgument)", function()
    H.fails("InvalidArgument", function()
      keel.system{ name = name(), phase = "update", query = { POS }, writes = { VEL }, columns = function() end }
    end)
    H.fails("InvalidArgument", function()
      keel.system{ name = name(), phase = "update", query = {}, columns = function() end }
    end)
    H.fails("InvalidArgument", function()
      keel.system{ name = name(), phase = "update", query = { POS }, columns = function() end, each = function() end }
    end)
    H.fails("InvalidArgument", function()
      keel.system{ name = name(), phase = "update", query = { POS }, writes = { POS }, each = function() end }
    end)
    H.fails("InvalidArgument", function()
      keel.system{ name = name(), phase = "update", query = { POS }, columns = 1 }
    end)
  end)
end)
