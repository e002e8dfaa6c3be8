-- lift_spec.lua — w:lift(e): a subtree out of play without being destroyed; lift:restore() puts it
-- back exactly, lift:discard() removes it for good (worlds.md, "Lift").
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("lift")

local LOG = {}
local function note(s) LOG[#LOG + 1] = s end

local HP = key("hp")
keel.kind{
  key = HP, multiplicity = "many",
  fields = { { "hp", "int", default = 10 }, { "label", "string", default = "" } },
  awake = function(self, e) note("awake:" .. e.name) end,
  update = function(self, e) note("update:" .. e.name); self.hp = self.hp - 1 end,
  on_destroy = function(self, e) note("on_destroy:" .. e.name) end,
}

-- Top > (Boss > Minion), Other
local function level()
  local w = keel.world("L")
  local top = w:spawn("Top")
  local boss = w:spawn{ name = "Boss", parent = top }
  boss:add(HP, { hp = 50, label = "boss" }, 3)
  local minion = w:spawn{ name = "Minion", parent = boss }
  minion:add(HP, { hp = 5 })
  local other = w:spawn("Other")
  other:add(HP, { hp = 1 })
  w:step(1 / 60)
  LOG = {}
  return w, top, boss, minion, other
end

local function names(w)
  local t = {}
  for e in w:entities() do t[#t + 1] = e.name end
  return table.concat(t, ",")
end

describe("w:lift()", function()
  it("takes the subtree out of lookups, queries, steps and dumps, running no hook", function()
    local w, _, boss, minion = level()
    local uuid = boss.uuid
    local lift = w:lift(boss)
    assert.are.same({}, LOG)
    assert.is_false(boss:alive())
    assert.is_false(minion:alive())
    assert.is_nil(w:find(uuid))
    assert.is_nil(w:find("Minion"))
    assert.are.equal("Top,Other", names(w))
    assert.are.equal(2, w:count())
    assert.are.equal(1, w:count(HP))
    for e in w:each(HP) do assert.are.equal("Other", e.name) end
    for e in w:query(HP) do assert.are.equal("Other", e.name) end
    assert.is_nil(w:dump():find(uuid, 1, true))
    w:step(1 / 60)
    assert.are.same({ "update:Other" }, LOG)
    H.fails("NotFound", function() return boss.name end)
    lift:restore()
  end)

  it("restore puts it back exactly: same handles, same place in run order, fields and versions kept", function()
    local w, top, boss, minion = level()
    local before = w:dump()
    local comp = boss:get(HP, 3)
    local version = comp.version
    local lift = w:lift(boss)
    w:step(1 / 60)
    LOG = {}
    lift:restore()
    assert.are.same({}, LOG) -- no hook on restore
    assert.is_true(boss:alive())
    assert.are.equal(top, boss.parent)
    assert.are.equal(boss, minion.parent)
    assert.are.equal(49, comp.hp) -- the same component handle, its value as lifted
    assert.are.equal(version, comp.version)
    assert.are.equal("boss", comp.label)
    assert.are.equal("Top,Boss,Minion,Other", names(w))
    assert.are.equal((before:gsub("hp: %-?%d+", "")), (w:dump():gsub("hp: %-?%d+", ""))) -- only Other's hp moved
    w:step(1 / 60)
    assert.are.same({ "update:Boss", "update:Minion", "update:Other" }, LOG)
  end)

  it("discard removes it for good, on_destroy once for each", function()
    local w, _, boss, minion = level()
    local lift = w:lift(boss)
    lift:discard()
    table.sort(LOG)
    assert.are.same({ "on_destroy:Boss", "on_destroy:Minion" }, LOG)
    assert.is_false(boss:alive())
    assert.is_false(minion:alive())
    assert.are.equal("Top,Other", names(w))
    H.fails("InvalidOperation", function() lift:restore() end)
  end)

  it("while anything is lifted, w:save, keel.persist.save and w:transfer refuse", function()
    local w, _, boss = level()
    local base = keel.persist.baseline(w)
    local lift = w:lift(boss)
    local dir = H.tmpdir()
    local ok, err = w:save(dir .. "/x.yaml")
    assert.is_nil(ok)
    H.assert_error("InvalidOperation", err)
    assert.is_false(H.file_exists(dir .. "/x.yaml"))
    local saved, err2 = keel.persist.save(w, base, dir .. "/s.save")
    assert.is_nil(saved)
    H.assert_error("InvalidOperation", err2)
    assert.truthy(tostring(err2):find("lifted", 1, true))
    assert.is_false(H.file_exists(dir .. "/s.save"))
    H.fails("InvalidOperation", function() w:transfer(w:find("Other"), keel.world("B")) end)
    lift:restore()
    assert(w:save(dir .. "/x.yaml"))
    H.rmrf(dir)
  end)

  it("puts the subtree at the top level when its parent went away meanwhile", function()
    local w, top, boss = level()
    local lift = w:lift(boss)
    top:destroy()
    lift:restore()
    assert.is_nil(boss.parent)
    assert.are.equal("Other,Boss,Minion", names(w))
  end)

  it("refuses inside a callback", function()
    local w, _, boss = level()
    local K = key("lifter")
    local err
    keel.kind{ key = K, update = function(self, e)
      local ok, e2 = pcall(e.world.lift, e.world, e)
      if not ok then err = e2 end
    end }
    w:find("Other"):add(K)
    w:step(1 / 60)
    H.assert_error("InvalidOperation", err)
    assert.truthy(tostring(err):find("refuses while a callback transaction is open", 1, true))
    assert.is_true(boss:alive())
  end)

  it("closing a world with lifts open discards them; the lift then refuses", function()
    local w, _, boss = level()
    local lift = w:lift(boss)
    w:close()
    H.fails("NotFound", function() lift:restore() end)
  end)
end)
