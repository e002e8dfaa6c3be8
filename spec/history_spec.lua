-- history_spec.lua — keel.history: every command undone and redone.
local keel = require "keel"
local history = require "keel.history"

keel.kind{ key = "sh:tag", fields = { { "n", "int", default = 1 } } }
keel.kind{ key = "sh:many", multiplicity = "many", fields = { { "v", "float" } } }

local function names(w)
  local out = {}
  for e in w:entities() do out[#out + 1] = e.name end
  return out
end

describe("history", function()
  local w, h
  before_each(function()
    w = keel.world("H")
    h = history.new(w)
  end)

  it("has nothing to undo or redo at first", function()
    assert.is_false(h:undo())
    assert.is_false(h:redo())
  end)

  describe(":spawn()", function()
    it("undoes and redoes a spawn with its components", function()
      local e = h:spawn{ name = "P", components = { { "sh:tag", n = 5 } } }
      local uuid = e.uuid
      assert.is_true(h:undo())
      assert.are.equal(0, w:count())
      assert.is_false(e:alive())
      assert.is_true(h:redo())
      local again = w:find(uuid)
      assert.are.equal("P", again.name)
      assert.are.equal(5, again:get("sh:tag").n)
      assert.is_false(h:redo())
    end)
  end)

  describe(":destroy()", function()
    it("restores the entity with its UUID, components and children", function()
      local p = w:spawn{ name = "P", components = { { "sh:tag", n = 3 } } }
      local c = w:spawn{ name = "C", parent = p }
      local uuid = p.uuid
      h:destroy(p)
      assert.are.same({ "C" }, names(w))
      assert.is_true(h:undo())
      local back = w:find(uuid)
      assert.is_false(p:alive()) -- old handles stay stale
      assert.are.equal(3, back:get("sh:tag").n)
      assert.are.same({ c }, back:children())
      assert.are.same({ "P", "C" }, names(w))
      assert.is_true(h:redo())
      assert.is_nil(w:find(uuid))
    end)
  end)

  describe(":add() and :remove()", function()
    it("undoes an add", function()
      local e = w:spawn("E")
      local c = h:add(e, "sh:tag", { n = 9 })
      assert.are.equal(9, c.n)
      h:undo()
      assert.is_false(e:has("sh:tag"))
      h:redo()
      assert.are.equal(9, e:get("sh:tag").n)
    end)
    it("undo of a remove restores the same slot and body", function()
      local e = w:spawn("E")
      e:add("sh:many", { v = 1 })
      e:add("sh:many", { v = 2 })
      e:add("sh:many", { v = 3 })
      local body = h:remove(e, "sh:many", 1)
      assert.are.same({ v = 2 }, body)
      assert.is_nil(e:get("sh:many", 1))
      h:undo()
      assert.are.equal(2, e:get("sh:many", 1).v)
      local slots = {}
      for _, c in ipairs(e:components()) do slots[#slots + 1] = c.slot end
      assert.are.same({ 0, 1, 2 }, slots)
      h:redo()
      assert.is_nil(e:get("sh:many", 1))
    end)
  end)

  describe(":set()", function()
    it("undoes and redoes a field write", function()
      local c = w:spawn("E"):add("sh:tag")
      h:set(c, "n", 7)
      h:set(c, "n", 8)
      assert.are.equal(8, c.n)
      h:undo()
      assert.are.equal(7, c.n)
      h:undo()
      assert.are.equal(1, c.n)
      h:redo()
      assert.are.equal(7, c.n)
      local ok, err = pcall(h.set, h, c, "n", "x")
      assert.is_false(ok)
      assert.are.equal("InvalidArgument", err.code)
    end)
  end)

  describe(":reparent() and :rename()", function()
    it("undoes both", function()
      local a = w:spawn("a")
      local b = w:spawn("b")
      local x = w:spawn("x")
      h:reparent(a, b)
      assert.are.equal(b, a.parent)
      h:rename(x, "y")
      assert.are.equal("y", x.name)
      h:undo()
      assert.are.equal("x", x.name)
      h:undo()
      assert.is_nil(a.parent)
      assert.are.same({ "a", "b", "x" }, names(w))
      h:redo()
      assert.are.equal(b, a.parent)
    end)
  end)

  it("a new command clears the redo stack", function()
    local e = w:spawn("e")
    h:rename(e, "one")
    h:undo()
    h:rename(e, "two")
    assert.is_false(h:redo())
    assert.are.equal("two", e.name)
  end)
end)
