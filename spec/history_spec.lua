-- history_spec.lua — keel.history: every command undone and redone.
local keel = require "keel"
local history = require "keel.history"

local H = require "helper"
local fails, code_of, joined_names, stack = H.fails, H.code_of, H.joined_names, H.stack

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

  it("runs commands and undoes/redoes them; false when there is nothing to do", function()
    local w = keel.world()
    local h = history.new(w)
    assert.is_false(h:undo())
    assert.is_false(h:redo())
    local e = h:spawn{ name = "E", components = { "core:transform" } }
    local uuid = e.uuid
    h:rename(e, "Renamed")
    local c = h:add(e, "core:audio_source", { volume = 0.3 })
    h:set(c, "volume", 0.7)
    assert.are.equal(0.7, c.volume)
    assert.is_true(h:undo())
    assert.are.equal(0.3, e:get("core:audio_source").volume)
    assert.is_true(h:undo())
    assert.is_false(e:has("core:audio_source"))
    assert.is_true(h:undo())
    assert.are.equal("E", e.name)
    assert.is_true(h:redo())
    assert.are.equal("Renamed", e.name)
    assert.is_true(h:undo())
    assert.is_true(h:undo())
    assert.are.equal(0, w:count())
    assert.is_false(h:undo())
    assert.is_true(h:redo())
    assert.truthy(w:find(uuid))
  end)

  it("raises InvalidArgument error objects on misuse", function()
    assert.are.equal("InvalidArgument", code_of(history.new, nil))
    assert.are.equal("InvalidArgument", code_of(history.new, {}))
    local w = keel.world()
    local h = history.new(w)
    assert.are.equal("InvalidArgument", code_of(function() h:add(nil, "core:transform") end))
    assert.are.equal("InvalidArgument", code_of(function() h:destroy("E") end))
    assert.are.equal("InvalidArgument", code_of(function() h:set(w:spawn("E"), "x", 1) end))
    assert.is_false(h:undo())
  end)

  it("records nothing for a command that fails", function()
    local w = keel.world()
    local h = history.new(w)
    local e = w:spawn("E")
    assert.are.equal("InvalidOperation", code_of(function() h:add(e, "core:camera") end))
    assert.are.equal("NotFound", code_of(function() h:remove(e, "core:transform") end))
    assert.is_false(h:undo())
  end)

  it("undoes a remove in the same slot with the same body", function()
    local w = keel.world()
    local h = history.new(w)
    local e = w:spawn{ name = "E", components = { "core:transform" } }
    for _ = 1, 3 do e:add("core:audio_source") end
    e:get("core:audio_source", 1).volume = 0.125
    h:remove(e, "core:audio_source", 1)
    e:add("core:audio_source")
    assert.is_nil(e:get("core:audio_source", 1))
    assert.is_true(h:undo())
    assert.are.equal(0.125, e:get("core:audio_source", 1).volume)
  end)

  it("undoes destroy and reparent", function()
    local w = keel.world()
    local h = history.new(w)
    local p = w:spawn("P")
    local e = w:spawn{ name = "E", components = { { "core:transform", position = { 1, 2, 3 } } } }
    h:reparent(e, p)
    assert.are.equal(p, e.parent)
    assert.is_true(h:undo())
    assert.is_nil(e.parent)
    local uuid = e.uuid
    h:destroy(e)
    assert.is_nil(w:find(uuid))
    assert.is_true(h:undo())
    local back = w:find(uuid)
    assert.truthy(back)
    assert.are.same({ 1, 2, 3 }, back:get("core:transform").position)
  end)

  it("records inverses; undo/redo walk them; false when empty", function()
    local w = keel.world("H")
    local h = history.new(w)
    assert.is_false(h:undo())
    assert.is_false(h:redo())
    local e = h:spawn{ name = "A", components = { "core:transform" } }
    assert.are.equal("A", e.name)
    assert.are.equal(0, h:add(e, "core:audio_source", { volume = 0.5 }).slot)
    h:add(e, "core:audio_source")
    h:set(e:get("core:audio_source", 0), "volume", 0.25)
    h:rename(e, "B")
    local p = w:spawn("P")
    h:reparent(e, p)
    h:remove(e, "core:audio_source", 0)
    assert.are.equal("core:transform#0,core:audio_source#1", stack(e))
    assert.is_true(h:undo()) -- remove: re-added in the same slot
    assert.are.equal(0.25, e:get("core:audio_source", 0).volume)
    assert.are.equal(0, e:get("core:audio_source", 0).slot)
    assert.is_true(h:undo()); assert.is_nil(e.parent)
    assert.is_true(h:undo()); assert.are.equal("A", e.name)
    assert.is_true(h:undo()); assert.are.equal(0.5, e:get("core:audio_source", 0).volume)
    assert.is_true(h:undo()); assert.is_nil(e:get("core:audio_source", 1))
    assert.is_true(h:undo()); assert.is_nil(e:get("core:audio_source", 0))
    assert.is_true(h:undo()); assert.is_false(e:alive()); assert.are.equal(1, w:count())
    assert.is_false(h:undo())
    assert.is_true(h:redo())
    local a = w:find("A")
    assert.truthy(a)
    for _ = 1, 6 do assert.is_true(h:redo()) end
    assert.is_false(h:redo())
    assert.are.equal("B", a.name)
    assert.are.equal(p, a.parent)
    assert.are.equal("core:transform#0,core:audio_source#1", stack(a))
  end)

  it("undo of destroy restores UUID, components and children", function()
    local w = keel.world("H")
    local h = history.new(w)
    local p = w:spawn{ name = "P", components = { "core:transform", { "core:audio_source", volume = 0.2 } } }
    local c = w:spawn{ name = "C", parent = p }
    local uuid = p.uuid
    h:destroy(p)
    assert.is_nil(c.parent)
    assert.is_true(h:undo())
    local np = w:find(uuid)
    assert.truthy(np)
    assert.are.equal(np, c.parent)
    assert.are.equal(0.2, np:get("core:audio_source", 0).volume)
    assert.are.equal("P,C", joined_names(w.entities, w))
  end)

  it("a refused command raises and records nothing", function()
    local w = keel.world("H")
    local h = history.new(w)
    local e = w:spawn{ name = "E", components = { "core:transform" } }
    fails("InvalidOperation", h.add, h, e, "core:transform")
    fails("InvalidArgument", h.set, h, e:get("core:transform"), "scale", { 1 })
    assert.is_false(h:undo())
  end)
end)

-- keel.history misuse: each case crashed under ASan or misbehaved before its fix.
do

  describe("keel.history misuse", function()
    local history = require "keel.history"

    it("raises InvalidArgument error objects for a wrong self", function()
      local h = history.new(keel.world("H"))
      local e = h:spawn("e")
      for _, call in ipairs{
        function() h.undo() end, function() h.redo(nil) end, function() h.spawn(1, "x") end,
        function() h.destroy("h", e) end, function() h.add({}, e, "x") end, function() h.remove(e, e, "x") end,
        function() h.set(true, nil, "n", 1) end, function() h.reparent(nil, e) end, function() h.rename(nil, e, "n") end,
      } do
        local err = H.fails("InvalidArgument", call)
        assert.truthy(err.message:match("a history expected"), err.message)
      end
    end)

    it("keel.core.errors.invalid raises an error object whatever it is given", function()
      local invalid = require "keel.core.errors".invalid
      H.fails("InvalidArgument", function() invalid("boom") end)
      H.fails("InvalidArgument", function() invalid() end)
      H.fails("InvalidArgument", function() invalid({}) end)
    end)
  end)
end
