-- handle_spec.lua — component handles: a stale one raises NotFound and never reaches another
-- component, even one in the same slot; a rolled-back removal gives the handle back.
local keel = require "keel"

keel.kind{ key = "hs:one", fields = { { "v", "float", default = 1 } } }
keel.kind{ key = "hs:many", multiplicity = "many", fields = { { "v", "float", default = 1 } } }
keel.kind{ key = "hs:remover", fields = { { "what", "string" } },
  update = function(self, e, dt)
    if self.what == "destroy" then e:children()[1]:destroy() else e:remove("hs:one") end
    error("remover failed")
  end }

local H = require "helper"
local code_of = H.code_of

-- An entity handle that names nothing any more: reading through it raises NotFound.
local function gone(e)
  assert.are.equal("NotFound", code_of(function() return e.name end))
end

describe("component handles", function()
  it("to a removed one-kind component stay stale when the kind is added again", function()
    local w = keel.world()
    local e = w:spawn("E")
    local c = e:add("hs:one", { v = 5 })
    e:remove("hs:one")
    local c2 = e:add("hs:one", { v = 7 })
    assert.are.equal(0, c2.slot)
    assert.are.equal("NotFound", code_of(function() return c.v end))
    assert.are.equal("NotFound", code_of(function() c.v = 3 end))
    assert.are.equal("NotFound", code_of(function() return c:body() end))
    assert.are_not.equal(c, c2)
    assert.are.equal(7, c2.v)
    assert.are.equal(c2, e:get("hs:one"))
  end)

  it("to the highest slot of a many kind stay stale when a new one takes that slot", function()
    local w = keel.world()
    local e = w:spawn("E")
    e:add("hs:many", { v = 1 })
    local top = e:add("hs:many", { v = 2 })
    assert.are.equal(1, top.slot)
    e:remove("hs:many", 1)
    assert.are.equal(2, e:add("hs:many").slot) -- a new add never takes it
    local again = e:add("hs:many", { v = 3 }, 1) -- asked for by number, as undo does
    assert.are.equal(1, again.slot)
    assert.are.equal("NotFound", code_of(function() return top.v end))
    assert.are_not.equal(top, again)
    assert.are.equal(3, again.v)
  end)

  it("raise NotFound with the stale-handle message", function()
    local w = keel.world()
    local e = w:spawn("E")
    local c = e:add("hs:one")
    e:remove("hs:one")
    e:add("hs:one")
    local ok, err = pcall(function() return c.v end)
    assert.is_false(ok)
    assert.are.equal("NotFound", err.code)
    assert.truthy(err.message:match("stale handle"))
  end)

  it("survive a removal rolled back by a failing hook", function()
    local w = keel.world()
    local e = w:spawn("E")
    local c = e:add("hs:one", { v = 4 })
    e:add("hs:remover", { what = "remove" })
    w:step(0.1)
    assert.are.equal(1, #w:errors())
    assert.are.equal(4, c.v)
    assert.are.equal(c, e:get("hs:one"))
  end)

  it("survive a destroy rolled back by a failing hook", function()
    local w = keel.world()
    local p = w:spawn("P")
    local child = w:spawn{ name = "C", parent = p }
    local c = child:add("hs:one", { v = 6 })
    p:add("hs:remover", { what = "destroy" })
    w:step(0.1)
    assert.are.equal(1, #w:errors())
    assert.are.equal(6, c.v)
    assert.are.equal(c, child:get("hs:one"))
  end)

  it("to a component removed then brought back by undo stay stale (undo re-adds it anew)", function()
    local w = keel.world()
    local e = w:spawn("E")
    local c = e:add("hs:one", { v = 2 })
    local h = require("keel.history").new(w)
    h:remove(e, "hs:one")
    assert.is_true(h:undo())
    assert.are.equal(2, e:get("hs:one").v)
    assert.are.equal("NotFound", code_of(function() return c.v end))
  end)

  it("makes a handle to a removed component raise NotFound", function()
    local e = keel.world():spawn{ name = "E", components = { "core:transform" } }
    local c = e:add("core:audio_source", { volume = 0.1 })
    e:remove("core:audio_source", 0)
    assert.are.equal("NotFound", code_of(function() return c.volume end))
    assert.are.equal("NotFound", code_of(function() c.volume = 0.5 end))
  end)

  it("does not bind a removed component's handle to a new one in the same slot", function()
    local e = keel.world():spawn{ name = "E", components = { "core:transform" } }
    local c = e:add("core:audio_source", { volume = 0.1 })
    e:remove("core:audio_source", 0)
    e:add("core:audio_source")
    assert.are.equal("NotFound", code_of(function() return c.volume end))
  end)

  it("makes stale component handles raise NotFound and never reach another component", function()
    local e = keel.world():spawn{ name = "E", components = { "core:transform" } }
    local c = e:add("core:audio_source", { volume = 0.1 })
    e:remove("core:audio_source", 0)
    e:add("core:audio_source", { volume = 0.9 }, 0)
    assert.are.equal("NotFound", code_of(function() return c.volume end))
  end)
end)

describe("entity handles", function()
  it("are one object per live entity: spawn, find, root, children and hooks hand out the same", function()
    local w = keel.world("eh")
    local a = w:spawn("A")
    local b = w:spawn { name = "B", parent = a }
    assert.is_true(rawequal(a, w:find("A")))
    assert.is_true(rawequal(a, w:find(a.uuid)))
    assert.is_true(rawequal(b, a:children()[1]))
    assert.is_true(rawequal(a, b.parent))
    assert.is_true(rawequal(w.root, w.root))
    local seen = {}
    for e in w:entities() do seen[e] = true end
    assert.is_true(seen[a] and seen[b])
  end)

  it("to a destroyed entity stay stale when its index is reused; the new entity gets its own", function()
    local w = keel.world("eh")
    local old = w:spawn("Old")
    old:add("hs:one")
    old:destroy()
    local new = w:spawn("New") -- takes the freed index
    assert.is_false(rawequal(old, new))
    assert.are_not.equal(old, new)
    gone(old)
    assert.are.equal("New", new.name)
    assert.is_true(rawequal(new, w:find("New")))
    assert.is_nil(w:find("Old"))
  end)

  it("stay right across many destroyed entities (the cache drops their handles)", function()
    local w = keel.world("eh")
    local keep = {}
    for i = 1, 10000 do
      local e = w:spawn("e" .. i)
      if i % 100 == 0 then keep[#keep + 1] = e else e:destroy() end
    end
    for i = 1, 10000 do w:spawn("f" .. i):destroy() end
    for _, e in ipairs(keep) do
      assert.is_true(e:alive())
      assert.is_true(rawequal(e, w:find(e.name)))
    end
    assert.are.equal(#keep, w:count())
  end)

  it("are told apart from other userdata and tables by their metatable", function()
    local w = keel.world("eh")
    local e = w:spawn("E")
    local c = e:add("hs:one")
    local fake = setmetatable({}, getmetatable(e))
    assert.are.equal("InvalidArgument", code_of(e.add, fake, "hs:one"))
    assert.are.equal("InvalidArgument", code_of(e.add, w, "hs:one"))
    assert.are.equal("InvalidArgument", code_of(e.add, c, "hs:one"))
    assert.are.equal("InvalidArgument", code_of(w.spawn, e, "X"))
    assert.are.equal("InvalidArgument", code_of(w.spawn, c, "X"))
    assert.are.equal("InvalidArgument", code_of(c.set, e, "v", 2))
    assert.are.equal("E", e.name)
    assert.are.equal(w, e.world)
    assert.are.equal("eh", w.name)
    assert.are.equal("hs:one", c.kind)
  end)
end)

describe("handles and their world", function()
  it("keep the world alive: an entity or component handle alone is enough", function()
    local e = keel.world("kept"):spawn("E")
    local c = e:add("hs:one", { v = 3 })
    local u = keel.world("kept2"):spawn("U"):add("hs:one")
    collectgarbage()
    collectgarbage()
    assert.are.equal("E", e.name)
    assert.are.equal("kept", e.world.name)
    assert.are.equal(3, c.v)
    assert.are.equal(e, c.entity)
    assert.are.equal("kept2", u.entity.world.name)
    assert.truthy(tostring(e):find("keel.Entity", 1, true))
    assert.truthy(tostring(c):find("keel.Component", 1, true))
  end)

  it("of two worlds are never equal, and both type-check as handles", function()
    local w1, w2 = keel.world("a"), keel.world("b")
    local e1, e2 = w1:spawn("E"), w2:spawn("E")
    local c1, c2 = e1:add("hs:one"), e2:add("hs:one")
    assert.are_not.equal(e1, e2)
    assert.are_not.equal(c1, c2)
    assert.are.equal(c1, e1:get("hs:one"))
    assert.are.equal("keel.Entity", getmetatable(e1).__name)
    assert.are.equal("keel.Component", getmetatable(c2).__name)
    -- a handle of one world passed to another works on its own world
    local child = w2:spawn { name = "C", parent = e2 }
    assert.are.equal(e2, child.parent)
    -- worlds.md: a handle of another world is NotFound ("stale handle")
    assert.are.equal("NotFound", code_of(function() return w1:spawn { name = "X", parent = e2 } end))
    assert.are.equal("NotFound", code_of(function() return e1:duplicate(e2) end))
  end)
end)

-- Component handles are kept per world (one per component while it lives) and read and write
-- their fields straight at the record while the world's structure holds: none of that may let
-- a handle outlive its component or reach another.
describe("kept component handles", function()
  keel.kind{ key = "hs:pos", fields = { { "x", "float", default = 0 } } }
  keel.kind{ key = "hs:vel", fields = { { "vx", "float", default = 1 }, { "n", "int", default = 0, min = 0, max = 9 },
    { "ro", "int", default = 4, readonly = true }, { "s", "string", default = "a" }, { "who", "entity" } } }

  it("are the same object from e:get, w:each and w:query while the component lives", function()
    local w = keel.world()
    local e = w:spawn("E")
    e:add("hs:pos")
    e:add("hs:vel")
    local c = e:get("hs:pos")
    assert.is_true(rawequal(c, e:get("hs:pos")))
    for _, p, v in w:query("hs:pos", "hs:vel") do
      assert.is_true(rawequal(c, p))
      assert.is_true(rawequal(v, e:get("hs:vel")))
    end
    for _, p in w:each("hs:pos") do assert.is_true(rawequal(c, p)) end
    assert.are.equal(c, e:add("hs:one") and e:get("hs:pos")) -- a structural change keeps it
  end)

  it("go stale when the entity's index is reused, and the new component gets its own", function()
    local w = keel.world()
    local old = w:spawn("Old")
    old:add("hs:pos", { x = 5 })
    local c = old:get("hs:pos")
    assert.are.equal(5, c.x)
    old:destroy()
    local new = w:spawn("New") -- takes the freed index
    new:add("hs:pos", { x = 7 })
    assert.are.equal("NotFound", code_of(function() return c.x end))
    assert.are.equal("NotFound", code_of(function() c.x = 1 end))
    local c2 = new:get("hs:pos")
    assert.is_false(rawequal(c, c2))
    assert.are_not.equal(c, c2)
    assert.are.equal(7, c2.x)
    for _, p in w:query("hs:pos") do assert.is_true(rawequal(c2, p)) end
    assert.are.equal("NotFound", code_of(function() return c.x end))
  end)

  it("go stale when removed in the middle of a loop that read them", function()
    local w = keel.world()
    local es = {}
    for i = 1, 4 do
      es[i] = w:spawn("E" .. i)
      es[i]:add("hs:pos", { x = i })
      es[i]:add("hs:vel")
    end
    local second = es[2]:get("hs:pos")
    local seen = {}
    for e, p in w:query("hs:pos", "hs:vel") do
      seen[#seen + 1] = p
      p.x = p.x + 10
      if e == es[1] then es[2]:remove("hs:pos") end
    end
    assert.are.equal(3, #seen) -- es[2] no longer matched
    assert.are.equal("NotFound", code_of(function() return second.x end))
    assert.are.equal("NotFound", code_of(function() second.x = 1 end))
    assert.is_nil(es[2]:get("hs:pos"))
    assert.are.equal(11, es[1]:get("hs:pos").x)
    assert.are.equal(14, es[4]:get("hs:pos").x)
    local c = es[3]:get("hs:pos")
    es[3]:remove("hs:pos")
    assert.are.equal("NotFound", code_of(function() return c.x end))
    es[3]:add("hs:pos", { x = 1 })
    assert.are.equal("NotFound", code_of(function() return c.x end))
    assert.are.equal(1, es[3]:get("hs:pos").x)
  end)

  it("write through the same checks: range, readonly, type, entity fields, strings", function()
    local w = keel.world()
    local e = w:spawn("E")
    local other = w:spawn("O")
    e:add("hs:vel")
    local v = e:get("hs:vel")
    local r0 = w.revision
    local n0 = v.version
    v.vx = 2.5
    v.n = 3
    assert.are.equal(2.5, v.vx)
    assert.are.equal(3, v.n)
    assert.is_true(w.revision > r0)
    assert.are.equal(n0 + 2, v.version)
    assert.are.equal("InvalidArgument", code_of(function() v.n = 10 end))
    assert.are.equal("InvalidArgument", code_of(function() v.vx = 0 / 0 end))
    assert.are.equal("InvalidArgument", code_of(function() v.vx = "1" end))
    assert.are.equal("Unsupported", code_of(function() v.ro = 1 end))
    assert.are.equal(3, v.n)
    assert.are.equal(4, v.ro)
    v.n = 2.0 -- an integral float into an int field
    assert.are.equal(2, v.n)
    assert.are.equal("integer", math.type(v.n))
    v.s = "b"
    assert.are.equal("b", v.s)
    v.who = other
    assert.is_true(rawequal(other, v.who))
    other:destroy()
    assert.is_nil(v.who)
    assert.are.equal("NotFound", code_of(function() return v.nope end))
    assert.are.equal("NotFound", code_of(function() v.nope = 1 end))
    assert.are.equal("hs:vel", v.kind)
  end)

  it("read a redeclared kind's fields by their new places", function()
    keel.kind{ key = "hs:hot", fields = { { "a", "float", default = 1 }, { "b", "float", default = 2 } } }
    local w = keel.world()
    local e = w:spawn("E")
    e:add("hs:hot", { a = 10, b = 20 })
    local c = e:get("hs:hot")
    assert.are.equal(10, c.a)
    assert.are.equal(20, c.b)
    keel.kind{ key = "hs:hot", fields = { { "z", "float", default = 3 }, { "b", "float", default = 0 } } }
    local c2 = e:get("hs:hot")
    assert.are.equal(20, c2.b)
    assert.are.equal(3, c2.z)
    assert.are.equal("NotFound", code_of(function() return c2.a end))
    c2.b = 21
    assert.are.equal(21, e:get("hs:hot"):body().b)
  end)

  it("are told from a table or another world's handle given their metatable", function()
    local w1, w2 = keel.world("a"), keel.world("b")
    local c1 = w1:spawn("E"):add("hs:pos")
    local c2 = w2:spawn("E"):add("hs:pos", { x = 2 })
    local mt = getmetatable(c1)
    local fake = setmetatable({}, mt)
    assert.are.equal("InvalidArgument", code_of(function() return mt.__index(fake, "x") end))
    assert.are.equal("InvalidArgument", code_of(function() mt.__newindex(fake, "x", 1) end))
    assert.are.equal(2, mt.__index(c2, "x")) -- another world's handle: checked in full, still its own
  end)

  it("keep the loop's values in step with a hook's own view of its component", function()
    local seen = {}
    keel.kind{ key = "hs:selfish", fields = { { "x", "float", default = 0 } },
      update = function(self, e)
        self.x = 5 -- not yet written back: the handle must see it
        seen[#seen + 1] = e:get("hs:selfish").x
        e:get("hs:selfish").x = 6
        seen[#seen + 1] = self.x
      end }
    local w = keel.world()
    local e = w:spawn("E")
    e:add("hs:selfish")
    w:step(0.1)
    assert.are.same({ 5, 6 }, seen)
    assert.are.equal(6, e:get("hs:selfish").x)
  end)

  it("are swept from the cache once their components are gone", function()
    local w = keel.world()
    for i = 1, 6000 do
      local e = w:spawn("E")
      e:add("hs:pos", { x = i })
      local _ = e:get("hs:pos").x
      e:destroy()
    end
    local e = w:spawn("K")
    e:add("hs:pos", { x = 1 })
    assert.are.equal(1, e:get("hs:pos").x)
    assert.are.equal(1, w:count("hs:pos"))
  end)
end)

-- w:spawn's handle is kept weakly until someone asks for the entity again (lua_spawn.c spawn_put):
-- one that is held is the one handed out; one that was dropped and collected is remade, still a
-- live and working handle, and from then on one object again.
describe("spawned entity handles", function()
  local function full_gc() collectgarbage(); collectgarbage() end

  it("held across collections are the ones find, children, parent and queries hand out", function()
    local w = keel.world("sh")
    local a = w:spawn("A")
    local b = w:spawn { name = "B", parent = a }
    b:add("hs:one")
    full_gc()
    assert.is_true(rawequal(a, w:find("A")))
    assert.is_true(rawequal(b, a:children()[1]))
    assert.is_true(rawequal(a, b.parent))
    for e in w:each("hs:one") do assert.is_true(rawequal(b, e)) end
    local seen = {}
    for e in w:entities() do seen[e] = true end
    assert.is_true(seen[a] and seen[b])
    full_gc()
    assert.is_true(rawequal(a, w:find("A")))
    assert.is_true(rawequal(b, w:find("B")))
  end)

  it("dropped and collected are remade: live, one object again, equal to every other handle", function()
    local w = keel.world("sh")
    for i = 1, 50 do w:spawn("E" .. i):add("hs:one", { v = i }) end
    full_gc()
    local e = w:find("E7")
    assert.are.equal("E7", e.name)
    assert.are.equal(7, e:get("hs:one").v)
    full_gc()
    assert.is_true(rawequal(e, w:find("E7")))
    assert.is_true(rawequal(e, w:find(e.uuid)))
    assert.are.equal(e, e:get("hs:one").entity)
    local n = 0
    for x in w:each("hs:one") do
      n = n + 1
      assert.is_true(rawequal(x, w:find(x.name)))
    end
    assert.are.equal(50, n)
  end)

  it("held but destroyed stay stale when the index is reused, whoever reuses it", function()
    local w = keel.world("sh")
    local src = w:spawn("Src")
    local old = w:spawn("Old")
    old:destroy()
    local dup = src:duplicate() -- takes the freed index without w:spawn
    dup.name = "Dup"
    assert.is_false(rawequal(old, dup))
    assert.is_true(rawequal(dup, w:find("Dup")))
    gone(old)
    assert.is_false(old:alive())
    dup:destroy()
    local new = w:spawn("New")
    full_gc()
    assert.is_true(rawequal(new, w:find("New")))
    gone(dup)
    gone(old)
  end)

  it("held only by an object being finalized stay working there, and equal (==) to the entity's", function()
    local w = keel.world("sh")
    local seen = {}
    do
      local e = w:spawn("F")
      e:add("hs:one", { v = 3 })
      setmetatable({}, { __gc = function()
        seen.alive = e:alive()
        seen.v = e:get("hs:one").v
        local found = w:find("F")
        seen.same = found == e
        seen.name = found and found.name
      end })
    end
    full_gc()
    assert.are.same({ alive = true, v = 3, same = true, name = "F" }, seen)
    local f = w:find("F")
    full_gc()
    assert.is_true(rawequal(f, w:find("F")))
    w:close()
  end)

  it("held while thousands more are spawned and dropped stay the ones handed out", function()
    local w = keel.world("sh")
    local held = {}
    for i = 1, 9000 do
      local e = w:spawn("S" .. i)
      if i % 97 == 1 then held[#held + 1] = e end
      if i % 1000 == 0 then collectgarbage() end
    end
    collectgarbage(); collectgarbage()
    for _, e in ipairs(held) do assert.is_true(rawequal(e, w:find(e.name)), e.name) end
    local all = {}
    for i = 1, 9000 do all[i] = w:spawn("T" .. i) end
    collectgarbage(); collectgarbage()
    local n = 0
    for e in w:entities() do
      if e.name:sub(1, 1) == "T" then
        n = n + 1
        assert.is_true(rawequal(e, all[tonumber(e.name:sub(2))]))
      end
    end
    assert.are.equal(9000, n)
  end)

  it("of a closed world go stale, held or remade", function()
    local w = keel.world("sh")
    local a = w:spawn("A")
    w:spawn("B")
    full_gc()
    local b = w:find("B")
    w:close()
    gone(a)
    gone(b)
    assert.is_false(a:alive())
  end)
end)

-- A World's methods are found by a table lookup (each World's own copy of the methods table),
-- its properties behind them: everything reads and refuses as before.
describe("world method lookup", function()
  it("finds methods and properties, and nil for anything else", function()
    local w = keel.world("ml")
    assert.are.equal("function", type(w.spawn))
    assert.are.equal("table", type(getmetatable(w).__index))
    assert.is_true(rawequal(w.spawn, keel.world("other").spawn))
    assert.are.equal("ml", w.name)
    assert.are.equal(36, #w.uuid)
    assert.are.equal("number", type(w.revision))
    assert.is_true(rawequal(w.root, w.root))
    assert.is_false(w.playing)
    assert.is_nil(w.nope)
    assert.is_nil(w[1])
    assert.is_nil(w[true])
    local e = w:spawn("E")
    assert.is_true(rawequal(e, w:find("E")))
    w.name = "renamed"
    assert.are.equal("renamed", w.name)
  end)

  it("refuses writes as before", function()
    local w = keel.world("ml")
    local err = H.fails("NotFound", function() w.foo = 1 end)
    assert.are.equal("a world has no field 'foo'", err.message)
    err = H.fails("Unsupported", function() w.uuid = "x" end)
    assert.are.equal("w.uuid is read-only", err.message)
    err = H.fails("InvalidArgument", function() w.name = 3 end)
    assert.are.equal("w.name must be a string, got number", err.message)
    assert.is_nil(rawget(getmetatable(w).__index, "name")) -- properties are not stored
  end)

  it("calls a method on the wrong receiver with the same errors", function()
    local w = keel.world("ml")
    local e = w:spawn("E")
    local err = H.fails("InvalidArgument", function() return w.spawn(e, "x") end)
    assert.are.equal("bad argument #1 (keel.World expected, got userdata)", err.message)
    err = H.fails("InvalidArgument", function() return w.find({}, "x") end)
    assert.are.equal("bad argument #1 (keel.World expected, got table)", err.message)
  end)

  it("of a closed world: methods still found, properties nil, calls refused", function()
    local w = keel.world("ml")
    w:close()
    assert.are.equal("function", type(w.spawn))
    assert.is_nil(w.name)
    assert.is_nil(w.root)
    assert.are.equal("NotFound", code_of(function() return w:spawn("x") end))
  end)

  it("lets a World be collected with the cycle through its own metatable", function()
    local closed = setmetatable({}, { __mode = "v" })
    do
      local w = keel.world("gone")
      w:spawn("E")
      closed[1] = w
    end
    collectgarbage(); collectgarbage()
    assert.is_nil(closed[1])
  end)
end)

-- The Entity and Component handles keep their C __index (their properties need the handle
-- itself); what they answer for unknown keys and wrong receivers is pinned here beside the World's.
describe("entity and component lookup", function()
  it("answers unknown keys and refuses writes and wrong receivers as before", function()
    local w = keel.world("lk")
    local e = w:spawn("E")
    local c = e:add("hs:one")
    assert.is_nil(e.foo)
    assert.is_nil(e[1])
    assert.are.equal("function", type(e.add))
    assert.are.equal("function", type(c.set))
    local function msg(code, f)
      return H.fails(code, f).message
    end
    assert.are.equal("an entity has no field 'foo'", msg("NotFound", function() e.foo = 1 end))
    assert.are.equal("hs:one has no field 'foo'", msg("NotFound", function() return c.foo end))
    assert.are.equal("hs:one has no field 'foo'", msg("NotFound", function() c.foo = 1 end))
    assert.are.equal("hs:one has no field '1'", msg("NotFound", function() return c[1] end))
    assert.are.equal("e.uuid is read-only", msg("Unsupported", function() e.uuid = "x" end))
    assert.are.equal("c.kind is read-only", msg("Unsupported", function() c.kind = "x" end))
    assert.are.equal("bad argument #1 (keel.Entity expected, got userdata)",
      msg("InvalidArgument", function() return e.add(w, "hs:one") end))
    assert.are.equal("bad argument #1 (keel.Component expected, got userdata)",
      msg("InvalidArgument", function() return c.set(e, {}) end))
  end)
end)

describe("spawned entity handles and finalizers", function()
  it("stay one object per entity when finalizers spawn into the same world meanwhile", function()
    local w = keel.world("fz")
    local held, fired = {}, 0
    local function bomb(n)
      setmetatable({}, { __gc = function()
        fired = fired + 1
        local g = w:spawn("G" .. n)
        if n % 3 == 0 then held[#held + 1] = g end
      end })
    end
    for i = 1, 6000 do
      local e = w:spawn("M" .. i)
      if i % 13 == 0 then held[#held + 1] = e end
      bomb(i)
      local _ = { i } -- garbage: the collector runs (and the finalizers) inside later spawns
    end
    collectgarbage(); collectgarbage()
    assert.is_true(fired > 0)
    local by_name = {}
    for _, e in ipairs(held) do by_name[e.name] = e end
    local n = 0
    for e in w:entities() do
      local want = by_name[e.name]
      if want then
        n = n + 1
        assert.is_true(rawequal(want, e), e.name)
      end
    end
    assert.are.equal(#held, n)
    w:close()
  end)
end)

-- worlds.md "One answer for another world's handle": an entity handle of another world, of an
-- earlier epoch, of a destroyed entity or of a closed world is NotFound ("stale handle") wherever
-- it is passed.
describe("a stale entity handle, wherever it is passed", function()
  keel.kind{ key = "hs:ref", fields = { { "to", "entity" } } }
  keel.kind{ key = "hs:holder", multiplicity = "many", fields = { { "to", "entity" } } }
  local prefab = keel.prefab("scenes/prefabs/enemy.yaml")
  local writers = 0 -- kinds declared by the write-back place, one per case

  -- Each place takes (w, h): w is the world acted on, h the handle passed; `self` places take
  -- h as the handle acted on (of its own world, so "another world's live handle" is no case).
  local places = {
    { "self: an entity method", self = true, function(_, h) h:add("hs:one") end },
    { "self: e:get", self = true, function(_, h) return h:get("hs:one") end },
    { "self: a message target (e:send)", self = true, function(_, h) h:send("ping") end },
    { "the parent of e.parent =", function(w) return w:spawn("E") end, function(e, h) e.parent = h end },
    { "the parent of e:duplicate", function(w) return w:spawn("E") end, function(e, h) e:duplicate(h) end },
    { "the parent option of w:spawn", function(w, h) w:spawn { name = "S", parent = h } end },
    { "the parent option of w:instantiate", function(w, h) w:instantiate(prefab, { parent = h }) end },
    { "an entity field in e:add's body", function(w, h) w:spawn("E"):add("hs:ref", { to = h }) end },
    { "an entity field in w:spawn's components", function(w, h)
        w:spawn { name = "S", components = { { "hs:ref", to = h } } } end },
    { "an entity field set through a handle", function(w) return w:spawn("E"):add("hs:ref") end,
      function(c, h) c.to = h end },
    { "an entity field in c:set{}", function(w) return w:spawn("E"):add("hs:ref") end,
      function(c, h) c:set { to = h } end },
    -- a hook's failure is recorded, not raised: w:errors() carries its message (no code)
    { "an entity field written back from a hook's self", recorded = true, function(w, h)
        writers = writers + 1
        local k = "hs:writer_" .. writers
        keel.kind{ key = k, fields = { { "to", "entity" } }, update = function(self) self.to = h end }
        w:spawn("E"):add(k)
        w:step(1 / 60)
        local errs = w:errors()
        error(#errs > 0 and { message = errs[#errs].message } or "no error recorded", 0)
      end },
    { "an entity field in w:instantiate's set", function(w, h)
        w:instantiate(prefab, { set = { ["hs:ref"] = { to = h } } }) end },
    { "the entity of w:transfer", function(w, h) w:transfer(h, keel.world("Dst")) end },
    { "the parent of w:transfer", function(w, h)
        local src = keel.world("Src")
        src:transfer(src:spawn("M"), w, h)
      end },
    { "the entity of w:lift", function(w, h) w:lift(h) end },
  }

  -- the stale handles, for a world w
  local cases = {
    { "another world's live handle", why = "another world", function() return keel.world("Other"):spawn("X") end },
    { "a destroyed entity's handle", why = "was destroyed", function(w)
        local x = w:spawn("X")
        x:destroy()
        return x
      end },
    { "an earlier epoch's handle", why = "earlier epoch", function(w)
        local x = w:spawn("X")
        w:play()
        w:stop()
        return x
      end },
    { "a closed world's handle", why = "a closed world", function()
        local o = keel.world("Closed")
        local x = o:spawn("X")
        o:close()
        return x
      end },
  }

  for _, place in ipairs(places) do
    local name, prep, act = place[1], place[2], place[3]
    if not act then act, prep = prep, nil end
    for _, case in ipairs(cases) do
      local self_of_other = place.self and case[1] == "another world's live handle"
      if not self_of_other then
        it(name .. ": " .. case[1] .. " is NotFound (stale handle)", function()
          local w = keel.world("W")
          local h = case[2](w)
          local target = prep and prep(w, h) or w
          local ok, err = pcall(act, target, h)
          assert.is_false(ok, "no error")
          if not place.recorded then
            assert.are.equal("NotFound", type(err) == "table" and err.code or tostring(err))
          end
          assert.truthy(tostring(err.message):find("stale handle", 1, true), err.message)
          assert.truthy(err.message:find(case.why, 1, true), err.message) -- and says which
        end)
      end
    end
  end
end)
