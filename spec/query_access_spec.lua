-- query_access_spec.lua — w:query passes after the first over an unchanged world hand out the
-- rows and handles an earlier pass found (nothing looked up again while nothing moved): every
-- change of membership or of an enabled flag, made at any point (in the loop, in a hook, in a
-- finalizer), must still be seen by the very next row, and no handle may outlive what it names.
local keel = require "keel"

local H = require "helper"
local code_of = H.code_of

local A, B = "qa:a", "qa:b"
keel.kind{ key = A, fields = { { "x", "float", default = 0 } } }
keel.kind{ key = B, fields = { { "vx", "float", default = 1 } } }

-- A world of n entities E1..En with both kinds (x = i), passed over twice so the second and
-- later passes run on what the first kept.
local function world(n)
  local w = keel.world()
  local es = {}
  for i = 1, n do
    local e = w:spawn("E" .. i)
    e:add(A, { x = i })
    e:add(B, { vx = i })
    es[i] = e
  end
  return w, es
end

-- The names a pass yields; `each(e, a, b, i)` runs in the loop body for the i-th row yielded.
local function pass(w, each, opts)
  local seen = {}
  local iter = opts and w:query(A, B, opts) or w:query(A, B)
  for e, a, b in iter do
    seen[#seen + 1] = e.name
    assert.are.equal(a, e:get(A))
    assert.are.equal(b, e:get(B))
    if each then each(e, a, b, #seen) end
  end
  return table.concat(seen, ",")
end

-- The A handles a pass hands out, by entity name.
local function held(w)
  local old = {}
  pass(w, function(e, a) old[e.name] = a end)
  return old
end

local function warm(w, want)
  assert.are.equal(want, pass(w))
  assert.are.equal(want, pass(w))
end

describe("w:query over an unchanged world", function()
  it("yields the same handles pass after pass, == to e:get's, reading and writing the records", function()
    local w, es = world(3)
    warm(w, "E1,E2,E3")
    local first = held(w)
    for _ = 1, 3 do pass(w, function(e, a, b) a.x = a.x + b.vx end) end
    pass(w, function(e, a) assert.is_true(rawequal(first[e.name], a)) end)
    for i, e in ipairs(es) do assert.are.equal(i + 3 * i, e:get(A).x) end
  end)

  it("skips a component disabled in the loop, and yields one enabled in the loop", function()
    local w, es = world(4)
    warm(w, "E1,E2,E3,E4")
    assert.are.equal("E1,E2,E4", pass(w, function(e, a, b, i) if i == 1 then es[3]:get(B).enabled = false end end))
    assert.are.equal("E1,E2,E4", pass(w))
    assert.are.equal("E1,E2,E3,E4", pass(w, function(e, a, b, i) if i == 1 then es[3]:get(B).enabled = true end end))
    assert.are.equal("E1,E2,E3,E4", pass(w))
  end)

  it("skips an entity disabled in the loop, or under a parent disabled in the loop", function()
    local w, es = world(4)
    local p = w:spawn("P")
    es[4].parent = p
    warm(w, "E1,E2,E3,E4")
    assert.are.equal("E1,E3", pass(w, function(e, a, b, i) if i == 1 then es[2].enabled = false; p.enabled = false end end))
    assert.are.equal("E1,E3", pass(w))
    p.enabled = true
    assert.are.equal("E1,E3,E4", pass(w))
    assert.are.equal("E1,E2,E3,E4", pass(w, nil, { all = true }))
    assert.are.equal("E1,E3,E4", pass(w))
  end)

  it("skips what is removed, destroyed or lifted in the loop; its handles stay stale", function()
    local w, es = world(5)
    warm(w, "E1,E2,E3,E4,E5")
    local old = held(w)
    local lift
    assert.are.equal("E1,E5", pass(w, function(e, a, b, i)
      if i == 1 then
        es[2]:remove(A)
        es[3]:destroy()
        lift = w:lift(es[4])
      end
    end))
    assert.are.equal("NotFound", code_of(function() return old.E2.x end))
    assert.are.equal("NotFound", code_of(function() return old.E3.x end))
    assert.are.equal("NotFound", code_of(function() old.E3.x = 1 end))
    assert.are.equal("NotFound", code_of(function() return old.E4.x end))
    assert.are.equal("E1,E5", pass(w))
    lift:restore()
    local back = {}
    for name in pass(w):gmatch("[^,]+") do back[#back + 1] = name end
    table.sort(back)
    assert.are.equal("E1,E4,E5", table.concat(back, ","))
    assert.are.equal(4, old.E4.x)
  end)

  it("never hands a handle of a destroyed entity to the component that reuses its index", function()
    local w, es = world(3)
    warm(w, "E1,E2,E3")
    local old = held(w)
    es[2]:destroy()
    local n = w:spawn("N")
    n:add(A, { x = 20 })
    n:add(B, { vx = 0 })
    assert.are.equal("NotFound", code_of(function() return old.E2.x end))
    local got = held(w)
    assert.is_nil(got.E2)
    assert.are.equal(20, got.N.x)
    for _, h in pairs(old) do assert.is_false(rawequal(h, got.N)) end
    assert.are.equal(got.N, n:get(A))
  end)

  it("sees changes a hook makes between passes, and ones a hook makes during a step in the loop", function()
    local K = "qa:toggler"
    local target
    keel.kind{ key = K, fields = { { "n", "float", default = 0 } },
      update = function(self) if target then target.enabled = not target.enabled end end }
    local w, es = world(3)
    w:spawn("T"):add(K)
    warm(w, "E1,E2,E3")
    target = es[2]:get(A)
    w:step(0.1)
    assert.are.equal("E1,E3", pass(w))
    assert.are.equal("E1,E2,E3", pass(w, function(e, a, b, i) if i == 1 then w:step(0.1) end end))
    target = nil
  end)

  it("sees a change a __gc finalizer makes in the middle of a pass", function()
    local w, es = world(40)
    local all = {}
    for i = 1, 40 do all[i] = "E" .. i end
    warm(w, table.concat(all, ","))
    local names = pass(w, function(e, a, b, i)
      if i == 1 then
        setmetatable({}, { __gc = function() es[30]:get(A).enabled = false end })
        collectgarbage()
        collectgarbage()
      end
    end)
    table.remove(all, 30)
    assert.are.equal(table.concat(all, ","), names)
    assert.are.equal(table.concat(all, ","), pass(w))
  end)

  it("ends a pass whose world is closed in the loop", function()
    local w, es = world(3)
    warm(w, "E1,E2,E3")
    local kept
    assert.are.equal("E1", pass(w, function(e, a) kept = a; w:close() end))
    assert.are.equal("NotFound", code_of(function() return kept.x end))
    assert.are.equal("NotFound", code_of(function() kept.x = 1 end))
  end)

  it("reads the redeclared layout after a kind is redeclared in the loop", function()
    local C = "qa:redeclared"
    keel.kind{ key = C, fields = { { "x", "float", default = 0 } } }
    local w = keel.world()
    for i = 1, 3 do w:spawn("E" .. i):add(C, { x = i }) end
    local function names()
      local t = {}
      for e, c in w:query(C) do t[#t + 1] = ("%s=%g"):format(e.name, c.x) end
      return table.concat(t, ",")
    end
    assert.are.equal("E1=1,E2=2,E3=3", names())
    assert.are.equal("E1=1,E2=2,E3=3", names())
    local t = {}
    for e, c in w:query(C) do
      if #t == 0 then
        keel.kind{ key = C, fields = { { "pad", "float", default = 9 }, { "x", "float", default = 0 } } }
      end
      t[#t + 1] = ("%s=%g/%g"):format(e.name, c.x, c.pad)
      c.x = c.x + 10
    end
    assert.are.equal("E1=1/9,E2=2/9,E3=3/9", table.concat(t, ","))
    assert.are.equal("E1=11,E2=12,E3=13", names())
  end)

  it("does not let a handle taken while playing reach the store play's stop threw away", function()
    local w, es = world(2)
    warm(w, "E1,E2")
    w:play()
    w:spawn("X") -- one structural change while playing
    local during
    pass(w, function(e, a) during = during or a end)
    assert.are.equal(1, during.x)
    w:stop()
    assert.are.equal("NotFound", code_of(function() return during.x end))
    assert.are.equal("NotFound", code_of(function() during.x = 5 end))
    assert.are.equal("NotFound", code_of(function() return es[1]:get(A) end)) -- a new epoch
    assert.are.equal(1, w:find("E1"):get(A).x)
    assert.are.equal("E1,E2", pass(w))
  end)
end)

describe("a Component metamethod given what is not its World's handle", function()
  it("checks it in full: a table, another userdata, another World's handle", function()
    local w1, w2 = keel.world("one"), keel.world("two")
    local c1 = w1:spawn("E"):add(A, { x = 1 })
    local c2 = w2:spawn("E"):add(A, { x = 2 })
    local mt = getmetatable(c1)
    assert.are.equal("InvalidArgument", code_of(function() return mt.__index(setmetatable({}, mt), "x") end))
    assert.are.equal("InvalidArgument", code_of(function() return mt.__index(io.stdout, "x") end))
    assert.are.equal("InvalidArgument", code_of(function() mt.__newindex(io.stdout, "x", 1) end))
    assert.are.equal(2, mt.__index(c2, "x"))
    mt.__newindex(c2, "x", 3)
    assert.are.equal(3, c2.x)
    assert.are.equal(1, c1.x)
  end)

  it("through the debug library: another userdata dressed in its metatable is refused", function()
    local w = keel.world()
    local c = w:spawn("E"):add(A, { x = 1 })
    local mt = getmetatable(c)
    local f = io.tmpfile()
    local old = debug.getmetatable(f)
    debug.setmetatable(f, mt)
    local ok = pcall(function() return f.x end)
    local ok2 = pcall(function() f.x = 2 end)
    debug.setmetatable(f, old)
    f:close()
    assert.is_false(ok)
    assert.is_false(ok2)
    assert.are.equal(1, c.x)
  end)
end)

describe("the component handle caches", function()
  it("are reachable from a script, and what it puts there is never taken for a handle", function()
    local w, es = world(3)
    warm(w, "E1,E2,E3")
    local c = es[1]:get(A)
    local caches = rawget(getmetatable(c), 2)
    assert.are.equal("table", type(caches))
    for _, cache in pairs(caches) do
      for i in pairs(cache) do cache[i] = io.stdout end
    end
    local other = keel.world():spawn("O"):add(A, { x = 9 })
    for _, cache in pairs(caches) do cache[1] = other end
    es[3]:destroy() -- the next pass finds every row in full
    local got = {}
    for e, a, b in w:query(A, B) do
      got[#got + 1] = ("%s=%g"):format(e.name, a.x)
      assert.are.equal(a, e:get(A))
      assert.is_false(rawequal(a, other))
    end
    assert.are.equal("E1=1,E2=2", table.concat(got, ","))
    assert.are.equal(9, other.x)
    for _, cache in pairs(caches) do
      for i in pairs(cache) do cache[i] = nil end
    end
    rawset(getmetatable(c), 2, 42)
    assert.are.equal("E1,E2", pass(w))
    assert.are.equal(1, es[1]:get(A).x)
  end)
end)
