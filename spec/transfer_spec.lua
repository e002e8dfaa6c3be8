-- transfer_spec.lua — w:transfer(e, other [, parent]): a subtree moved into another world as one
-- (worlds.md, "Several worlds and transfer").
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("transfer")

local LOG = {}
local function note(s) LOG[#LOG + 1] = s end

-- hp: counts its hooks; target: an entity field; tag: a second kind, many per entity
local HP = key("hp")
keel.kind{
  key = HP,
  fields = { { "hp", "int", default = 10 }, { "label", "string", default = "" }, { "target", "entity" } },
  awake = function(self, e) note("awake:" .. e.name) end,
  update = function(self, e) note("update:" .. e.name .. ":" .. e.world.name) end,
  on_destroy = function(self, e) note("on_destroy:" .. e.name) end,
  on_transfer = function(self, e, from)
    note(("on_transfer:%s:%s->%s"):format(e.name, from.name, e.world.name))
    self.hp = self.hp + 1 -- a hook's write lands in the destination
  end,
}
local TAG = key("tag")
keel.kind{ key = TAG, multiplicity = "many", fields = { { "n", "int", default = 0 } } }

-- A: Root > (Child, Child2 > Grand), Outside; Child.target = Root, Grand.target = Outside
local function level()
  local a = keel.world("A")
  local root = a:spawn("Root")
  root:add(HP, { hp = 1, label = "root" })
  local child = a:spawn{ name = "Child", parent = root }
  child:add(HP, { hp = 2, target = root })
  child:add(TAG, { n = 7 }, 3)
  local child2 = a:spawn{ name = "Child2", parent = root, enabled = false }
  local grand = a:spawn{ name = "Grand", parent = child2 }
  local outside = a:spawn("Outside")
  grand:add(HP, { hp = 3, target = outside })
  return a, root, child, child2, grand, outside
end

local function uuids(w)
  local t = {}
  for _, e in ipairs(H.entities(w)) do t[#t + 1] = e.uuid end
  table.sort(t)
  return table.concat(t, ",")
end

before_each(function() LOG = {} end)

describe("w:transfer()", function()
  it("moves the subtree as one: UUIDs, names, hierarchy, bodies, slots, versions and flags kept", function()
    local a, root, child, child2 = level()
    local b = keel.world("B")
    local before = { root.uuid, child.uuid, child2.uuid }
    local version = child:get(TAG, 3).version
    local moved = a:transfer(root, b)
    assert.are.equal(before[1], moved.uuid)
    assert.are.equal("Root", moved.name)
    assert.are.equal(b, moved.world)
    local kids = moved:children()
    assert.are.equal(2, #kids)
    assert.are.equal(before[2], kids[1].uuid)
    assert.are.equal("Child2", kids[2].name)
    assert.is_false(kids[2].enabled)
    assert.are.equal("Grand", kids[2]:children()[1].name)
    assert.are.equal(3, kids[1]:get(HP).hp) -- 2, and on_transfer's + 1
    assert.are.equal("root", moved:get(HP).label)
    assert.are.equal(version, kids[1]:get(TAG, 3).version)
    assert.are.equal(7, kids[1]:get(TAG, 3).n)
    assert.are.equal(1, a:count())
    assert.are.equal(4, b:count())
  end)

  it("runs no awake and no on_destroy, then on_transfer(self, entity, from_world) in the destination", function()
    local a, root = level()
    local b = keel.world("B")
    LOG = {}
    a:transfer(root, b)
    assert.are.same({ "on_transfer:Root:A->B", "on_transfer:Child:A->B", "on_transfer:Grand:A->B" }, LOG)
    assert.are.equal(2, b:find("Root"):get(HP).hp) -- on_transfer's write landed in b
  end)

  it("makes the source's handles refuse (NotFound, stale handle) and returns the new handle", function()
    local a, root, child = level()
    local b = keel.world("B")
    local comp = child:get(HP)
    local moved = a:transfer(root, b)
    local err = H.fails("NotFound", function() return root.name end)
    assert.truthy(tostring(err):find("stale handle", 1, true))
    H.fails("NotFound", function() return child:get(HP) end)
    H.fails("NotFound", function() return comp.hp end)
    assert.is_nil(a:find(moved.uuid))
    assert.are.equal(moved, b:find(moved.uuid))
  end)

  it("moved components first run in the destination's next step, never again in the source", function()
    local a, root = level()
    local b = keel.world("B")
    a:step(1 / 60)
    a:transfer(root, b)
    LOG = {}
    a:step(1 / 60)
    assert.are.same({}, LOG)
    b:step(1 / 60)
    table.sort(LOG)
    assert.are.same({ "update:Child:B", "update:Root:B" }, LOG) -- Grand is under the disabled Child2
  end)

  it("keeps entity fields pointing inside the subtree; ones outside read nil unless the UUID lives there", function()
    local a, root, _, _, _, outside = level()
    local b = keel.world("B")
    local moved = a:transfer(root, b)
    local child = moved:children()[1]
    local grand = moved:children()[2]:children()[1]
    assert.are.equal(moved, child:get(HP).target)
    assert.is_nil(grand:get(HP).target)
    -- the outside entity follows: the field finds it again by UUID
    a:transfer(outside, b)
    assert.are.equal(b:find("Outside"), grand:get(HP).target)
  end)

  it("puts the subtree under a parent of the destination", function()
    local a, root = level()
    local b = keel.world("B")
    local holder = b:spawn("Holder")
    local moved = a:transfer(root, b, holder)
    assert.are.equal(holder, moved.parent)
  end)

  it("keeps unknown components byte for byte", function()
    local text = H.doc_of(H.ent(H.U1, "Crate", nil, H.comp("mod:never_declared", "{ weight: 12, tags: [a, b] }")))
    local a = assert(keel.parse(text))
    local at = "\n(%- uuid: " .. H.U1:gsub("%-", "%%-") .. ".*)$"
    local entry = a:dump():match(at) -- the entity as a writes it
    local b = keel.world("B")
    a:transfer(a:find(H.U1), b)
    assert.truthy(entry:find("mod:never_declared", 1, true))
    assert.are.equal(entry, b:dump():match(at))
    assert.is_nil(a:dump():find("mod:never_declared", 1, true))
  end)

  describe("refusals change nothing in either world", function()
    it("a UUID already alive in the destination: InvalidOperation naming it", function()
      local a, root = level()
      local b = assert(keel.parse(H.doc_of(H.ent(root.uuid, "Clash"))))
      local da, db = uuids(a), uuids(b)
      local err = H.fails("InvalidOperation", function() a:transfer(root, b) end)
      assert.truthy(tostring(err):find(root.uuid, 1, true))
      assert.are.equal(da, uuids(a))
      assert.are.equal(db, uuids(b))
      assert.are.equal("Root", root.name)
    end)

    it("a clash deep in the subtree refuses the whole move", function()
      local a, root, _, _, grand = level()
      local b = assert(keel.parse(H.doc_of(H.ent(grand.uuid, "Clash"))))
      local da = uuids(a)
      H.fails("InvalidOperation", function() a:transfer(root, b) end)
      assert.are.equal(da, uuids(a))
      assert.are.equal(1, b:count())
    end)

    it("a parent that is not alive in the destination: NotFound", function()
      local a, root = level()
      local b = keel.world("B")
      local gone = b:spawn("Gone")
      gone:destroy()
      H.fails("NotFound", function() a:transfer(root, b, gone) end)
      local c = keel.world("C")
      H.fails("NotFound", function() a:transfer(root, b, c:spawn("Elsewhere")) end)
      assert.are.equal(5, a:count())
      assert.are.equal(0, b:count())
    end)

    it("an entity of another world: NotFound (stale handle)", function()
      local a = level()
      local b = keel.world("B")
      local e = b:spawn("OfB")
      local err = H.fails("NotFound", function() a:transfer(e, b) end)
      assert.truthy(tostring(err):find("stale handle", 1, true))
    end)

    it("the same world twice: InvalidArgument; the root: ProtectedEntity", function()
      local a, root = level()
      H.fails("InvalidArgument", function() a:transfer(root, a) end)
      H.fails("ProtectedEntity", function() a:transfer(a.root, keel.world("B")) end)
    end)

    it("inside a callback of either world: InvalidOperation", function()
      local K = key("mover")
      local b = keel.world("B")
      local err
      keel.kind{ key = K, update = function(self, e)
        local ok, e2 = pcall(e.world.transfer, e.world, e, b)
        if not ok then err = e2 end
      end }
      local a = keel.world("A")
      a:spawn("M"):add(K)
      a:step(1 / 60)
      H.assert_error("InvalidOperation", err)
      assert.truthy(tostring(err):find("refuses while a callback transaction is open", 1, true))
      assert.are.equal(1, a:count())
      assert.are.equal(0, b:count())
    end)

    it("past the destination's depth limit: LimitExceeded", function()
      local a = keel.world("A")
      local top = a:spawn("T0")
      local last = top
      for i = 1, 9 do last = a:spawn{ name = "T" .. i, parent = last } end
      local b = keel.world("B")
      local deep = b:spawn("D0")
      for i = 1, 250 do deep = b:spawn{ name = "D" .. i, parent = deep } end
      H.fails("LimitExceeded", function() a:transfer(top, b, deep) end)
      assert.are.equal(10, a:count())
    end)
  end)
end)
