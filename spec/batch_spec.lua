-- batch_spec.lua — a stretch of one Lua kind's hooks runs in one protected call, yet every hook
-- is still its own transaction: a failure rolls back and faults that component only, and the
-- rest of the stretch goes on in order.
local keel = require "keel"

local log = {}
keel.kind{ key = "bt:count", fields = { { "n", "int", default = 0 }, { "fail", "bool", default = false },
  { "spawn", "bool", default = false } },
  start = function(self, e) log[#log + 1] = "start " .. e.name end,
  update = function(self, e, dt)
    log[#log + 1] = e.name
    self.n = self.n + 1
    if self.spawn then e.world:spawn("extra") end
    if self.fail then error("boom " .. e.name) end
  end }
keel.kind{ key = "bt:other", fields = {}, update = function(self, e) log[#log + 1] = "other " .. e.name end }

local function world_of(n, opts)
  opts = opts or {}
  local w = keel.world()
  local list = {}
  for i = 1, n do
    local e = w:spawn("E" .. i)
    list[i] = e:add("bt:count", { fail = opts.fail == i, spawn = opts.fail == i and opts.spawn or false })
    if opts.other == i then w:spawn("O" .. i):add("bt:other") end
  end
  return w, list
end

describe("a stretch of one kind's hooks", function()
  before_each(function() log = {} end)

  it("runs every hook once, in run order, starts first", function()
    local w, cs = world_of(10)
    w:step(0.1)
    assert.are.equal(20, #log)
    assert.are.equal("start E1", log[1])
    assert.are.equal("start E10", log[10])
    for i = 1, 10 do assert.are.equal("E" .. i, log[10 + i]) end
    for i = 1, 10 do assert.are.equal(1, cs[i].n) end
  end)

  it("keeps order around another kind in the middle", function()
    local w = world_of(10, { other = 5 })
    w:step(0.1)
    local upd = {}
    for _, s in ipairs(log) do if not s:match("^start") then upd[#upd + 1] = s end end
    assert.are.same({ "E1", "E2", "E3", "E4", "E5", "other O5", "E6", "E7", "E8", "E9", "E10" }, upd)
  end)

  it("fails one hook alone: rolled back, faulted, recorded once; the rest go on", function()
    local w, cs = world_of(10, { fail = 4, spawn = true })
    w:step(0.1)
    for i = 1, 10 do assert.are.equal(i == 4 and 0 or 1, cs[i].n) end
    assert.are.equal(10, w:count()) -- the failing hook's spawn was rolled back
    local errs = w:errors()
    assert.are.equal(1, #errs)
    assert.are.equal("bt:count", errs[1].kind)
    assert.are.equal("update", errs[1].phase)
    assert.truthy(errs[1].message:match("boom E4"))
    log = {}
    w:step(0.1)
    assert.are.equal(9, #log) -- the faulted one runs no more
    for i = 1, 10 do assert.are.equal(i == 4 and 0 or 2, cs[i].n) end
    assert.are.equal(1, #w:errors())
  end)

  it("survives a failure in the first and in the last hook", function()
    for _, at in ipairs{ 1, 10 } do
      local w, cs = world_of(10, { fail = at })
      w:step(0.1)
      for i = 1, 10 do assert.are.equal(i == at and 0 or 1, cs[i].n) end
      assert.are.equal(1, #w:errors())
    end
  end)

  it("records a keel error object's code", function()
    local w = keel.world()
    keel.kind{ key = "bt:raiser", fields = {}, update = function(self, e)
      if e.name == "R3" then e:get("no:such") .value = 1 end end }
    for i = 1, 6 do w:spawn("R" .. i):add("bt:raiser") end
    w:step(0.1)
    assert.are.equal(1, #w:errors())
    assert.are.equal("bt:raiser", w:errors()[1].kind)
  end)

  it("lets a hook use self's methods, its entity and nested hooks", function()
    local woke = 0
    keel.kind{ key = "bt:woken", fields = { { "v", "float", default = 0 } },
      awake = function(self, e) woke = woke + 1; self.v = 9 end }
    keel.kind{ key = "bt:user", fields = { { "a", "float", default = 0 }, { "b", "float", default = 0 } },
      update = function(self, e, dt)
        self:set{ a = 2 }
        self.b = self.a + 1
        assert(self.entity == e and self.kind == "bt:user" and self.slot == 0)
        e:add("bt:woken")
      end }
    local w = keel.world()
    local cs = {}
    for i = 1, 6 do cs[i] = w:spawn("U" .. i):add("bt:user") end
    w:step(0.1)
    assert.are.same({}, w:errors())
    assert.are.equal(6, woke)
    for i = 1, 6 do
      assert.are.equal(2, cs[i].a)
      assert.are.equal(3, cs[i].b)
      assert.are.equal(9, cs[i].entity:get("bt:woken").v)
    end
  end)

  it("switches to a kind redeclared by one of its hooks for the hooks after it", function()
    local seen = {}
    local function v1(self, e)
      seen[#seen + 1] = "v1 " .. e.name
      if e.name == "H3" then
        keel.kind{ key = "bt:swap", fields = {}, update = function(s2, e2) seen[#seen + 1] = "v2 " .. e2.name end }
      end
    end
    keel.kind{ key = "bt:swap", fields = {}, update = v1 }
    local w = keel.world()
    for i = 1, 8 do w:spawn("H" .. i):add("bt:swap") end
    w:step(0.1)
    assert.are.same({}, w:errors())
    assert.are.equal(8, #seen)
    assert.are.same({ "v1 H1", "v1 H2", "v1 H3", "v2 H4" }, { seen[1], seen[2], seen[3], seen[4] })
    assert.are.equal("v2 H8", seen[8])
  end)

  it("skips components disabled, or of entities destroyed, earlier in the same phase", function()
    local names = {}
    keel.kind{ key = "bt:killer", fields = {}, update = function(self, e)
      names[#names + 1] = e.name
      if e.name == "K2" then
        e.world:find("K4"):destroy()
        e.world:find("K5"):get("bt:killer").enabled = false
      end
    end }
    local w = keel.world()
    for i = 1, 8 do w:spawn("K" .. i):add("bt:killer") end
    w:step(0.1)
    assert.are.same({ "K1", "K2", "K3", "K6", "K7", "K8" }, names)
  end)

  it("stores a kind of plain floats: changed fields only, integers as floats, a bad value fails its hook alone", function()
    local bad = {}
    keel.kind{ key = "bt:mover", fields = { { "x", "float", default = 0 }, { "vx", "float", default = 1 } },
      update = function(self, e, dt)
        self.x = self.x + self.vx * dt
        if bad[e.name] ~= nil then self.vx = bad[e.name] end
      end }
    local w = keel.world()
    local cs = {}
    for i = 1, 8 do cs[i] = w:spawn("M" .. i):add("bt:mover", { vx = i }) end
    bad.M3, bad.M5, bad.M6, bad.M7 = "fast", 0 / 0, 7, math.huge
    local v, r = cs[1].version, w.revision
    w:step(0.5)
    for _, i in ipairs{ 1, 2, 4, 8 } do assert.are.equal(i * 0.5, cs[i].x) end
    assert.are.equal(3, cs[6].x)
    assert.are.equal(7, cs[6].vx)
    assert.are.equal(math.type(cs[6].vx), "float")
    for _, i in ipairs{ 3, 5, 7 } do
      assert.are.equal(0, cs[i].x) -- rolled back: its x too
      assert.are.equal(i, cs[i].vx)
    end
    assert.are.equal(3, #w:errors())
    assert.are.equal(v + 1, cs[1].version) -- x changed, vx did not
    assert.are.equal(r + 6, w.revision) -- 5 hooks wrote x, one vx too
  end)
end)
