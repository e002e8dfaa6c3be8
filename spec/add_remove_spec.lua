-- add_remove_spec.lua — e:add and e:remove on their short paths: a body-less add, a remove whose
-- kind comes from the binding's memo, argument checks, refusals, undo and rollback.
local keel = require "keel"
local history = require "keel.history"

local H = require "helper"
local fails, raises = H.fails, H.raises

local AWOKE = {}
keel.kind{ key = "ar:tag", fields = { { "n", "float", default = 4 }, { "s", "string", default = "d" } } }
keel.kind{ key = "ar:base", fields = { { "n", "int", default = 1 } } }
keel.kind{ key = "ar:needs", requires = { "ar:base" }, fields = { { "n", "int", default = 2 } } }
keel.kind{ key = "ar:many", multiplicity = "many", fields = { { "n", "int", default = 5 } } }
keel.kind{ key = "ar:awake", fields = { { "n", "int", default = 6 } },
  awake = function(self, e) AWOKE[#AWOKE + 1] = self.n end }
keel.kind{ key = "ar:checked", fields = { { "n", "int", default = 7, min = 0, max = 10 } },
  validate = function(self, field) if self.n == 9 then return false, "nine is refused" end end }

describe("e:add and e:remove", function()
  before_each(function() AWOKE = {} end)

  it("add without a body gives the defaults, and remove returns them as a plain table", function()
    local w = keel.world("AR")
    local e = w:spawn("e")
    local c = e:add("ar:tag")
    assert.are.equal(4, c.n)
    assert.are.equal("d", c.s)
    local body = e:remove("ar:tag")
    assert.are.same({ n = 4, s = "d" }, body)
    assert.is_nil(getmetatable(body))
    assert.is_false(e:has("ar:tag"))
    -- added again at once: a new component, the old handle stays stale
    local c2 = e:add("ar:tag", { n = 8 })
    assert.are.equal(8, c2.n)
    fails("NotFound", function() return c.n end)
    assert.are.same({ n = 8, s = "d" }, e:remove("ar:tag"))
  end)

  it("add without a body runs awake once and validate on nothing", function()
    local w = keel.world("AR")
    local e = w:spawn("e")
    e:add("ar:awake")
    assert.are.same({ 6 }, AWOKE)
    local c = e:add("ar:checked")
    assert.are.equal(7, c.n)
    fails("InvalidOperation", function() e:add("ar:checked", { n = 9 }) end) -- one kind: already there...
    e:remove("ar:checked")
    local err = raises(function() e:add("ar:checked", { n = 9 }) end) -- ...and refused by validate
    assert.are.equal("table", type(err))
    assert.truthy(tostring(err.message):find("nine is refused", 1, true))
    assert.is_false(e:has("ar:checked"))
    fails("InvalidArgument", function() e:add("ar:checked", { n = 11 }) end)
    assert.is_false(e:has("ar:checked"))
  end)

  it("remove checks its arguments as before, and changes nothing when it refuses", function()
    local w = keel.world("AR")
    local e = w:spawn("e")
    e:add("ar:tag", { n = 2 })
    fails("InvalidArgument", function() e:remove() end)
    fails("InvalidArgument", function() e:remove(5) end)
    fails("InvalidArgument", function() e:remove("ar:tag\0x") end)
    fails("InvalidArgument", function() e.remove(w, "ar:tag") end)
    fails("InvalidArgument", function() e:remove("ar:tag", -1) end)
    fails("InvalidArgument", function() e:remove("ar:tag", 1.5) end)
    fails("InvalidOperation", function() e:remove("ar:tag", 2) end) -- a one kind's only slot is 0
    fails("NotFound", function() e:remove("ar:nothing") end)
    fails("NotFound", function() e:remove("ar:base") end)
    assert.are.equal(2, e:get("ar:tag").n)
    e:destroy()
    local err = fails("NotFound", function() e:remove("ar:tag") end)
    assert.truthy(tostring(err.message):find("stale handle", 1, true))
  end)

  it("remove refuses a kind another requires, and a many kind without its slot", function()
    local w = keel.world("AR")
    local e = w:spawn("e")
    e:add("ar:base")
    e:add("ar:needs")
    fails("InvalidOperation", function() e:remove("ar:base") end)
    assert.is_true(e:has("ar:base"))
    e:add("ar:many", { n = 1 })
    e:add("ar:many", { n = 2 })
    fails("InvalidOperation", function() e:remove("ar:many") end)
    assert.are.same({ n = 2 }, e:remove("ar:many", 1))
    assert.are.same({ n = 1 }, e:remove("ar:many", 0))
    assert.are.same({ n = 2 }, e:remove("ar:needs"))
    assert.are.same({ n = 1 }, e:remove("ar:base"))
  end)

  it("remove finds the kind again after it is redeclared (the memo follows declarations)", function()
    local w = keel.world("AR")
    local e = w:spawn("e")
    keel.kind{ key = "ar:redeclared", fields = { { "n", "int", default = 1 } } }
    e:add("ar:redeclared")
    keel.kind{ key = "ar:redeclared", fields = { { "n", "int", default = 1 }, { "m", "int", default = 3 } } }
    assert.are.same({ n = 1, m = 3 }, e:remove("ar:redeclared"))
    fails("NotFound", function() e:remove("ar:redeclared") end)
  end)

  it("a body-less add and a remove undo and redo through keel.history", function()
    local w = keel.world("AR")
    local h = history.new(w)
    local e = w:spawn("e")
    h:add(e, "ar:tag")
    assert.is_true(e:has("ar:tag"))
    e:get("ar:tag").n = 12
    h:remove(e, "ar:tag")
    assert.is_false(e:has("ar:tag"))
    assert.is_true(h:undo())
    assert.are.equal(12, e:get("ar:tag").n)
    assert.is_true(h:undo())
    assert.is_false(e:has("ar:tag"))
    assert.is_true(h:redo()) -- the add again, with what its undo took away
    assert.are.equal(12, e:get("ar:tag").n)
  end)

  it("an add and a remove in a hook that then fails are rolled back", function()
    local w = keel.world("AR")
    local e = w:spawn("e")
    e:add("ar:base", { n = 3 })
    keel.kind{ key = "ar:failing", fields = {}, update = function(self, me)
      me:add("ar:tag")
      me:remove("ar:base")
      error("after both")
    end }
    e:add("ar:failing")
    w:step(1 / 60)
    w:step(1 / 60)
    assert.is_false(e:has("ar:tag"))
    assert.are.equal(3, e:get("ar:base").n)
  end)
end)
