-- system_spec.lua — keel.system{}, keel.systems(), keel.system_reset() (gameplay.md, "Systems").
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("system")
local n = 0
local function sys(what) n = n + 1 return ("ss:%s%d"):format(what, n) end

local LOG = {}
local function note(s) LOG[#LOG + 1] = s end

local MOVER = key("mover")
keel.kind{ key = MOVER, multiplicity = "many", fields = { { "speed", "float", default = 1 }, { "x", "float" } },
  update = function(self, e) note("hook:" .. e.name) end }
local TAG = key("tag")
keel.kind{ key = TAG, fields = { { "n", "int" } } }

local function world()
  local w = keel.world("S")
  local a = w:spawn("A")
  a:add(MOVER)
  a:add(TAG)
  local b = w:spawn("B")
  b:add(MOVER)
  b:add(TAG)
  return w, a, b
end

describe("systems", function()
  before_each(function() LOG = {} end)

  it("run after the phase's hooks, in `after` order, ties by declaration order", function()
    local s1, s2, s3 = sys("a"), sys("b"), sys("c")
    keel.system{ name = s1, phase = "update", after = { s2 }, run = function() note("s1") end }
    keel.system{ name = s2, phase = "update", run = function() note("s2") end }
    keel.system{ name = s3, phase = "update", run = function() note("s3") end }
    local w = world()
    w:step(1 / 60)
    local got = {}
    for _, s in ipairs(LOG) do if s:match("^s%d") or s:match("^hook") then got[#got + 1] = s end end
    assert.are.same({ "hook:A", "hook:B", "s2", "s1", "s3" }, got)
    for _, s in ipairs({ s1, s2, s3 }) do keel.system{ name = s, phase = "update", run = function() end } end
  end)

  it("refuse a cycle at declaration, naming it (InvalidArgument); `after` may name one declared later", function()
    local a, b = sys("cyc"), sys("cyc")
    keel.system{ name = a, phase = "late_update", after = { b }, run = function() end } -- b not declared yet
    local err = H.fails("InvalidArgument", function()
      keel.system{ name = b, phase = "late_update", after = { a }, run = function() end }
    end)
    assert.truthy(tostring(err):find(a, 1, true))
    assert.truthy(tostring(err):find(b, 1, true))
    for _, s in ipairs(keel.systems()) do assert.are_not.equal(b, s.name) end
  end)

  it("each: one call per matching entity in run order, its components (lowest slot) and dt", function()
    local s = sys("each")
    keel.system{ name = s, phase = "update", query = { MOVER, TAG }, each = function(e, m, t, dt)
      note(("%s:%d:%s"):format(e.name, m.slot, dt))
      m.x = m.x + m.speed
      t.n = t.n + 1
    end }
    local w, a = world()
    a:add(MOVER, nil, 0 + 5) -- a second mover in slot 5: the lowest slot is visited
    w:spawn("NoTag"):add(MOVER)
    w:step(0.5)
    local eaches = {}
    for _, l in ipairs(LOG) do if not l:match("^hook") then eaches[#eaches + 1] = l end end
    assert.are.same({ "A:0:0.5", "B:0:0.5" }, eaches)
    assert.are.equal(1, a:get(MOVER).x)
    assert.are.equal(1, a:get(TAG).n)
    assert.are.equal(0, a:get(MOVER, 5).x)
    keel.system{ name = s, phase = "update", run = function() end }
  end)

  it("each skips disabled entities and components, faulted ones, and what was spawned this step", function()
    local s = sys("skip")
    local spawner = sys("spawner")
    keel.system{ name = spawner, phase = "start", run = function(w)
      if not w:find("Late") then w:spawn{ name = "Late", components = { MOVER, TAG } } end
    end }
    keel.system{ name = s, phase = "update", query = { TAG }, each = function(e) note("each:" .. e.name) end }
    local w, a, b = world()
    local c = w:spawn("C")
    c:add(TAG).enabled = false
    local d = w:spawn("D")
    d:add(TAG)
    d.enabled = false
    w:step(1 / 60)
    local eaches = {}
    for _, l in ipairs(LOG) do if l:match("^each") then eaches[#eaches + 1] = l end end
    assert.are.same({ "each:A", "each:B" }, eaches) -- not C, D, nor Late (spawned this step)
    LOG = {}
    w:step(1 / 60)
    eaches = {}
    for _, l in ipairs(LOG) do if l:match("^each") then eaches[#eaches + 1] = l end end
    assert.are.same({ "each:A", "each:B", "each:Late" }, eaches)
    keel.system{ name = s, phase = "update", run = function() end }
    keel.system{ name = spawner, phase = "start", run = function() end }
  end)

  it("run each call as a transaction: a failure rolls back, faults the system, is recorded once with its name", function()
    local s = sys("bad")
    keel.system{ name = s, phase = "update", query = { TAG }, each = function(e, t)
      t.n = 99
      e.world:spawn("Made")
      if e.name == "B" then error("broken") end
    end }
    local w, a, b = world()
    w:step(1 / 60)
    w:step(1 / 60)
    assert.are.equal(99, a:get(TAG).n) -- A's call committed
    assert.are.equal(0, b:get(TAG).n)  -- B's rolled back
    local made = 0
    for e in w:entities() do if e.name == "Made" then made = made + 1 end end
    assert.are.equal(1, made)
    local errs = w:errors()
    assert.are.equal(1, #errs)
    assert.are.equal(s, errs[1].system)
    assert.truthy(errs[1].message:find("broken", 1, true))
    local info
    for _, x in ipairs(keel.systems()) do if x.name == s then info = x end end
    assert.is_true(info.faulted)
    assert.are.same({ TAG }, info.query)
    keel.system_reset(s)
    for _, x in ipairs(keel.systems()) do if x.name == s then info = x end end
    assert.is_false(info.faulted)
    keel.system{ name = s, phase = "update", run = function() end }
  end)

  it("each gets the hooks' reused self tables, one per queried kind, the same table on every call", function()
    local s = sys("selves")
    local seen = {}
    keel.system{ name = s, phase = "update", query = { MOVER, TAG }, each = function(e, m, t)
      seen[#seen + 1] = { e.name, m, t, m.x, t.n, m.kind, t.kind, t.entity }
    end }
    local w, a, b = world()
    a:get(MOVER).x = 3
    b:get(TAG).n = 7
    w:step(1 / 60)
    assert.are.equal(2, #seen)
    local A, B = seen[1], seen[2]
    assert.are.equal("table", type(A[2]))     -- a self table, not a keel.Component handle
    assert.is_true(rawequal(A[2], B[2]))       -- reused across entities, as a hook's self
    assert.is_true(rawequal(A[3], B[3]))
    assert.is_false(rawequal(A[2], A[3]))      -- one per queried kind
    assert.are.same({ "A", 3, 0 }, { A[1], A[4], A[5] }) -- each call sees its own entity's values
    assert.are.same({ "B", 0, 7 }, { B[1], B[4], B[5] })
    assert.are.same({ MOVER, TAG }, { A[6], A[7] })
    assert.are.equal(a, A[8])
    assert.are.equal(b, B[8])
    keel.system{ name = s, phase = "update", run = function() end }
  end)

  it("each's writes land through the registry: the version bumps once per written field, not when nothing changed", function()
    local s = sys("writes")
    keel.system{ name = s, phase = "update", query = { TAG }, each = function(e, t)
      if e.name == "A" then t.n = t.n + 1 end
    end }
    local w, a, b = world()
    local va, vb = a:get(TAG).version, b:get(TAG).version
    local rev = w.revision
    w:step(1 / 60)
    w:step(1 / 60)
    assert.are.equal(2, a:get(TAG).n)
    assert.are.equal(va + 2, a:get(TAG).version)
    assert.are.equal(vb, b:get(TAG).version) -- read, never written: no bump
    if rev then assert.are.equal(rev + 2, w.revision) end
    keel.system{ name = s, phase = "update", run = function() end }
  end)

  it("each on a kind declared in C (core:transform) gets a self table too", function()
    local s = sys("transform")
    keel.system{ name = s, phase = "update", query = { "core:transform", TAG }, each = function(e, tr, t)
      tr.position = { t.n, 2, 3 }
    end }
    local w, a = world()
    a:add("core:transform")
    a:get(TAG).n = 5
    w:step(1 / 60)
    assert.are.same({ 5, 2, 3 }, a:get("core:transform"):body().position)
    keel.system{ name = s, phase = "update", run = function() end }
  end)

  it("each does not visit a component added during this step to an entity it would visit", function()
    local s, adder = sys("added"), sys("adder")
    keel.system{ name = adder, phase = "start", run = function(w)
      local b = w:find("B")
      if not b:get(TAG) then b:add(TAG) end
    end }
    keel.system{ name = s, phase = "update", query = { TAG }, each = function(e) note("each:" .. e.name) end }
    local w, a, b = world()
    b:remove(TAG)
    w:step(1 / 60)
    local eaches = {}
    for _, l in ipairs(LOG) do if l:match("^each") then eaches[#eaches + 1] = l end end
    assert.are.same({ "each:A" }, eaches)
    keel.system{ name = s, phase = "update", run = function() end }
    keel.system{ name = adder, phase = "start", run = function() end }
  end)

  it("each skips a faulted component", function()
    local s = sys("faulted")
    local BAD = key("bad")
    keel.kind{ key = BAD, fields = { { "n", "int" } }, update = function(self, e)
      if e.name == "A" then error("hook fails") end
    end }
    keel.system{ name = s, phase = "late_update", query = { BAD }, each = function(e) note("each:" .. e.name) end }
    local w, a, b = world()
    a:add(BAD)
    b:add(BAD)
    w:step(1 / 60) -- A's update faults its component before the late_update systems
    local eaches = {}
    for _, l in ipairs(LOG) do if l:match("^each") then eaches[#eaches + 1] = l end end
    assert.are.same({ "each:B" }, eaches)
    keel.system{ name = s, phase = "late_update", run = function() end }
  end)

  it("a failing each call rolls back its self writes, handle writes and structural changes; later calls do not run", function()
    local s = sys("rollback")
    local calls = 0
    local EXTRA = key("extra")
    keel.kind{ key = EXTRA }
    keel.system{ name = s, phase = "update", query = { MOVER, TAG }, each = function(e, m, t)
      calls = calls + 1
      m.x = 42
      t.n = 42
      e:get(MOVER, 5).x = 42   -- another component, through a handle
      e:add(EXTRA)
      e.world:spawn("Made")
      error("boom")
    end }
    local w, a, b = world()
    a:add(MOVER, nil, 5)
    w:step(1 / 60)
    assert.are.equal(1, calls)      -- A's call failed; B's never ran (the system is faulted)
    assert.is_nil(a:get(EXTRA))
    assert.is_nil(w:find("Made"))
    assert.are.equal(0, a:get(MOVER).x)
    assert.are.equal(0, a:get(TAG).n)
    assert.are.equal(0, a:get(MOVER, 5).x)
    assert.are.equal(0, b:get(TAG).n)
    assert.are.equal(1, #w:errors())
    assert.are.equal(s, w:errors()[1].system)
    keel.system{ name = s, phase = "update", run = function() end }
  end)

  it("a value each cannot store (wrong type, readonly field) fails the call: nothing written, system faulted", function()
    local RO = key("ro")
    keel.kind{ key = RO, fields = { { "locked", "int", default = 5, readonly = true }, { "free", "int" } } }
    local s1, s2 = sys("badvalue"), sys("readonly")
    keel.system{ name = s1, phase = "update", query = { TAG, RO }, each = function(e, t, r)
      r.free = 1
      t.n = "not a number"
    end }
    keel.system{ name = s2, phase = "update", query = { RO }, after = { s1 }, each = function(e, r)
      r.free = 2
      r.locked = 6
    end }
    local w, a = world()
    a:add(RO)
    w:step(1 / 60)
    assert.are.equal(0, a:get(TAG).n)
    assert.are.equal(0, a:get(RO).free)
    assert.are.equal(5, a:get(RO).locked)
    local errs = w:errors()
    assert.are.equal(2, #errs)
    assert.are.same({ s1, s2 }, { errs[1].system, errs[2].system })
    assert.truthy(errs[2].message:find("readonly", 1, true))
    keel.system{ name = s1, phase = "update", run = function() end }
    keel.system{ name = s2, phase = "update", run = function() end }
  end)

  it("refuse a query naming a kind twice (InvalidArgument)", function()
    H.fails("InvalidArgument", function()
      keel.system{ name = sys("twice"), phase = "update", query = { TAG, TAG }, each = print }
    end)
  end)

  it("redeclaring a name replaces it and clears its fault", function()
    local s = sys("redo")
    keel.system{ name = s, phase = "update", run = function() error("first") end }
    local w = world()
    w:step(1 / 60)
    keel.system{ name = s, phase = "update", run = function() note("second") end }
    w:step(1 / 60)
    local seen = false
    for _, l in ipairs(LOG) do if l == "second" then seen = true end end
    assert.is_true(seen)
    keel.system{ name = s, phase = "update", run = function() end }
  end)

  it("refuse bad declarations (InvalidArgument)", function()
    H.fails("InvalidArgument", function() keel.system{ name = "x:y", phase = "awake", run = print } end)
    H.fails("InvalidArgument", function() keel.system{ name = "x:y", phase = "update" } end)
    H.fails("InvalidArgument", function() keel.system{ name = "x:y", phase = "update", run = print, each = print } end)
    H.fails("InvalidArgument", function() keel.system{ name = "x:y", phase = "update", each = print } end)
    H.fails("InvalidArgument", function() keel.system{ name = "", phase = "update", run = print } end)
    H.fails("InvalidArgument", function() keel.system{ name = "x:y", phase = "update", run = print, bogus = 1 } end)
    H.fails("InvalidArgument", function() keel.system_reset("never:declared") end)
  end)
end)
