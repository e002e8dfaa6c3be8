-- play_spec.lua — play mode: w:play() remembers the world, w:stop() puts it back exactly as a
-- new epoch (worlds.md, "Play mode").
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("play")

local HP = key("hp")
keel.kind{
  key = HP, multiplicity = "many",
  fields = { { "hp", "int", default = 10 }, { "label", "string", default = "" }, { "target", "entity" } },
  update = function(self) self.hp = self.hp - 1 end,
}
local NOTE = key("note")
keel.kind{ key = NOTE, editor_only = true, fields = { { "text", "string", default = "" } } }

-- a world with a hierarchy, slots, a disabled entity, an unknown component and settings
local function authored()
  local text = H.doc_of(
    H.ent(H.U1, "Crate", nil, H.comp("mod:never_declared", "{ weight: 12 }")),
    H.ent(H.U2, "Door", "    parent: " .. H.U1 .. "\n    enabled: false\n"))
  local w = assert(keel.parse(text))
  local crate = w:find("Crate")
  crate:add(HP, { hp = 5, label = "crate", target = w:find("Door") }, 2)
  crate:add(HP, { hp = 7 }, 4)
  crate:add(NOTE, { text = "authored" })
  w:step(1 / 60)
  return w
end

describe("w:play() and w:stop()", function()
  it("put back entities, components, slots, names, hierarchy, fields, unknowns, settings and the revision", function()
    local w = authored()
    local before, revision = w:dump(), w.revision
    w:play()
    assert.is_true(w.playing)
    w:run(10, 1 / 60)
    local crate = w:find("Crate")
    crate:get(HP, 2).label = "smashed"
    crate:remove(HP, 4)
    crate.name = "Debris"
    w:find("Door"):destroy()
    w:spawn{ name = "Spawned", components = { HP } }
    w.root:add("core:world_settings", { exposure = 2 })
    w:stop()
    assert.is_false(w.playing)
    assert.are.equal(before, w:dump())
    assert.are.equal(revision, w.revision)
    assert.are.equal("authored", w:find("Crate"):get(NOTE).text) -- editor_only too
    assert.are.equal(w:find("Door"), w:find("Crate"):get(HP, 2).target)
  end)

  it("makes every handle taken before stop refuse, the root's included; w.root is fresh", function()
    local w = authored()
    local crate, root, comp = w:find("Crate"), w.root, w:find("Crate"):get(HP, 2)
    w:play()
    local spawned = w:spawn("DuringPlay")
    local during = w:find("Crate")
    w:stop()
    for _, h in ipairs({ crate, during, spawned, root }) do
      local err = H.fails("NotFound", function() return h.name end)
      assert.truthy(tostring(err):find("stale", 1, true))
    end
    H.fails("NotFound", function() return comp.hp end)
    assert.are.equal("Crate", w:find("Crate").name)
    assert.is_nil(w.root.parent)
    assert.are_not.equal(root, w.root)
  end)

  it("does not let a handle taken during play alias an entity after stop", function()
    local w = authored()
    w:play()
    local made = {}
    for i = 1, 20 do made[i] = w:spawn("n" .. i) end
    for i = 1, 20 do made[i]:destroy() end
    local reused = w:spawn("reused") -- an index a restored entity may hold again
    w:stop()
    for i = 1, 40 do w:spawn("after" .. i) end
    H.fails("NotFound", function() return reused.name end)
  end)

  it("can play again after a stop, and steps run on the restored world", function()
    local w = authored()
    local before = w:dump()
    w:play()
    w:run(3, 1 / 60)
    w:stop()
    w:play()
    w:run(3, 1 / 60)
    w:stop()
    assert.are.equal(before, w:dump())
    w:step(1 / 60)
    assert.are.equal(3, w:find("Crate"):get(HP, 2).hp) -- 5, a step in authored(), one now
  end)

  it("keeps the records of a kind redeclared while playing in the new layout", function()
    local K = key("grows")
    keel.kind{ key = K, fields = { { "a", "int", default = 1 }, { "s", "string", default = "x" } } }
    local w = keel.world("W")
    w:spawn("E"):add(K, { a = 5, s = "kept" })
    w:play()
    keel.kind{ key = K, fields = { { "z", "float", default = 0.5 }, { "s", "string", default = "x" }, { "a", "int", default = 1 } } }
    w:stop()
    local c = w:find("E"):get(K)
    assert.are.equal(5, c.a)
    assert.are.equal("kept", c.s)
    assert.are.equal(0.5, c.z)
  end)

  it("refuses to play twice, to stop when not playing, and inside a callback", function()
    local w = authored()
    H.fails("InvalidOperation", function() w:stop() end)
    w:play()
    H.fails("InvalidOperation", function() w:play() end)
    w:stop()
    local K = key("player")
    local err
    keel.kind{ key = K, update = function(self, e)
      local ok, e2 = pcall(e.world.play, e.world)
      if not ok then err = e2 end
    end }
    w:find("Crate"):add(K)
    w:step(1 / 60)
    H.assert_error("InvalidOperation", err)
    assert.truthy(tostring(err):find("refuses while a callback transaction is open", 1, true))
    assert.is_false(w.playing)
  end)

  it("closing a playing world frees what it remembered", function()
    local w = authored()
    w:play()
    w:close()
  end)
end)

describe("keel run --play", function()
  it("says whether stop put the world back identical", function()
    local code, out, err = H.run_keel(H.find_keel(), "run " .. H.shell_quote(H.ROOT .. "/scenes/demo.yaml") .. " --frames 30 --play")
    assert.are.equal(0, code, err)
    assert.truthy(out:find("play: stop put the world back identical to the scene as loaded", 1, true))
  end)
end)
