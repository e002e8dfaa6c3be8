-- editing_keep_spec.lua — keeping changes made in play mode (editing.md, "Keeping changes made in
-- play mode"): w:keep while playing, w:stop() writing the kept state into the restored world as
-- one history entry and returning the refusals; the channel's world.play, world.stop, play.keep.
local keel = require "keel"
local history = require "keel.history"
local channel = require "keel.channel"
local H = require "helper"

local key = H.key_maker("keep")

local TUNE = key("tune")
keel.kind{
  key = TUNE,
  fields = { { "speed", "float", default = 1 }, { "label", "string", default = "" },
             { "timer", "float", default = 0, runtime = true } },
}
local SOLID, GHOST = key("solid"), key("ghost")
keel.kind{ key = SOLID, fields = { { "mass", "int", default = 1 } } }
keel.kind{ key = GHOST, rejects = { SOLID }, fields = { { "fade", "int", default = 0 } } }

local function world()
  local w = keel.world("keep")
  local crate = w:spawn{ name = "Crate", components = { { TUNE, speed = 2, label = "authored" } } }
  w:spawn{ name = "Wall", components = { { SOLID, mass = 5 } } }
  w:spawn{ name = "Lamp", parent = crate }
  return w
end

describe("w:keep", function()
  it("is InvalidOperation outside play mode", function()
    local w = world()
    H.fails("InvalidOperation", w.keep, w, w:find("Crate"))
    H.fails("InvalidOperation", w.keep, w, w:find("Crate"), TUNE)
  end)

  it("refuses a stale handle and an unknown kind while playing", function()
    local w = world()
    w:play()
    local gone = w:spawn("Gone")
    gone:destroy()
    H.fails("NotFound", w.keep, w, gone)
    H.fails("NotFound", w.keep, w, w:find("Crate"), "keep:never_declared")
    w:stop()
  end)
end)

describe("w:stop() with kept state", function()
  it("without anything kept puts the world back and returns an empty list", function()
    local w = world()
    local before = w:dump()
    w:play()
    w:find("Crate"):get(TUNE).speed = 9
    local refused = w:stop()
    assert.are.same({}, refused)
    assert.are.equal(before, w:dump())
  end)

  it("writes a kept component's authored fields into the restored world, not its runtime ones", function()
    local w = world()
    local revision = w.revision
    w:play()
    local t = w:find("Crate"):get(TUNE)
    t.speed, t.label, t.timer = 7.5, "tuned", 42
    w:keep(w:find("Crate"), TUNE)
    assert.are.same({}, w:stop())
    local after = w:find("Crate"):get(TUNE)
    assert.are.equal(7.5, after.speed)
    assert.are.equal("tuned", after.label)
    assert.are.equal(0, after.timer) -- runtime: the restored world's own value
    assert.is_true(w.revision > revision)
  end)

  it("is one history entry: one undo takes all of it back", function()
    local w = world()
    local h = history.new(w)
    local before = w:dump()
    w:play()
    local crate = w:find("Crate")
    crate:get(TUNE).speed = 3
    crate.name = "Box"
    w:find("Wall"):get(SOLID).mass = 50
    w:keep(crate)
    w:keep(w:find("Wall"), SOLID)
    w:stop()
    assert.are.equal(3, w:find("Box"):get(TUNE).speed)
    assert.are.equal(50, w:find("Wall"):get(SOLID).mass)
    assert.are.equal(1, #h.undos)
    assert.is_true(h:undo())
    assert.are.equal(before, w:dump())
    assert.is_false(h:undo())
    assert.is_true(h:redo())
    assert.are.equal(3, w:find("Box"):get(TUNE).speed)
  end)

  it("adds no history entry when nothing changed", function()
    local w = world()
    local h = history.new(w)
    w:play()
    w:keep(w:find("Crate"))
    w:stop()
    assert.are.equal(0, #h.undos)
  end)

  it("spawns a kept entity spawned during play with its UUID, name, parent and components", function()
    local w = world()
    w:play()
    local crate = w:find("Crate")
    local e = w:spawn{ name = "Torch", parent = crate, components = { { TUNE, speed = 4 } } }
    local orphan = w:spawn{ name = "Orphan", parent = w:spawn("Temporary") }
    local uuid, ouuid = e.uuid, orphan.uuid
    w:keep(e)
    w:keep(orphan) -- its parent exists only in play: it comes back at the top level
    assert.are.same({}, w:stop())
    local back = w:find(uuid)
    assert.is_not_nil(back)
    assert.are.equal("Torch", back.name)
    assert.are.equal(w:find("Crate"), back.parent)
    assert.are.equal(4, back:get(TUNE).speed)
    assert.is_nil(w:find("Temporary"))
    local o = w:find(ouuid)
    assert.are.equal("Orphan", o.name)
    assert.is_nil(o.parent)
  end)

  it("destroys a kept entity destroyed during play", function()
    local w = world()
    local h = history.new(w)
    w:play()
    local wall = w:find("Wall")
    w:keep(wall)
    wall:destroy()
    assert.are.same({}, w:stop())
    assert.is_nil(w:find("Wall"))
    h:undo()
    assert.are.equal(5, w:find("Wall"):get(SOLID).mass)
  end)

  it("removes a kept component removed during play, and adds one added", function()
    local w = world()
    w:play()
    local wall = w:find("Wall")
    w:keep(wall, SOLID)
    wall:remove(SOLID)
    local lamp = w:find("Lamp")
    lamp:add(TUNE, { speed = 6 })
    w:keep(lamp, TUNE)
    assert.are.same({}, w:stop())
    assert.is_false(w:find("Wall"):has(SOLID))
    assert.are.equal(6, w:find("Lamp"):get(TUNE).speed)
  end)

  it("refuses, entry by entry, kept state that breaks a kind rule in the restored world, and applies the rest", function()
    local w = world()
    w:play()
    local wall = w:find("Wall")
    wall:remove(SOLID)
    wall:add(GHOST, { fade = 3 }) -- fine in play: the solid is gone
    w:keep(wall, GHOST)           -- but the solid is kept away from this keep: it is back at stop
    w:find("Crate"):get(TUNE).speed = 11
    w:keep(w:find("Crate"), TUNE)
    local refused = w:stop()
    assert.are.equal(1, #refused)
    assert.are.equal("InvalidOperation", refused[1].code)
    assert.truthy(refused[1].path:find(GHOST, 1, true))
    assert.is_false(w:find("Wall"):has(GHOST))
    assert.are.equal(5, w:find("Wall"):get(SOLID).mass)
    assert.are.equal(11, w:find("Crate"):get(TUNE).speed) -- the rest applied
  end)

  it("refuses a kept component of an entity that exists only in play", function()
    local w = world()
    w:play()
    local e = w:spawn{ name = "New", components = { TUNE } }
    w:keep(e, TUNE)
    local refused = w:stop()
    assert.are.equal(1, #refused)
    assert.are.equal("InvalidOperation", refused[1].code)
    assert.is_nil(w:find("New"))
  end)

  it("forgets what was kept once stopped", function()
    local w = world()
    w:play()
    w:find("Crate"):get(TUNE).speed = 5
    w:keep(w:find("Crate"), TUNE)
    w:stop()
    w:play()
    w:find("Crate"):get(TUNE).speed = 8
    w:stop()
    assert.are.equal(5, w:find("Crate"):get(TUNE).speed)
  end)

  it("w:_unkeep takes a keep back", function()
    local w = world()
    w:play()
    w:find("Crate"):get(TUNE).speed = 5
    w:keep(w:find("Crate"), TUNE)
    w:_unkeep(w:find("Crate"), TUNE)
    w:stop()
    assert.are.equal(2, w:find("Crate"):get(TUNE).speed)
  end)
end)

describe("the channel's play mode", function()
  local json = require "keel.json"

  local function rpc(ch, method, params)
    local res = json.decode(ch:handle(json.encode{ jsonrpc = "2.0", id = 1, method = method, params = params or {} }))
    return res.result, res.error
  end

  it("world.play, play.keep and world.stop carry a kept component back, as one undoable edit", function()
    local w = world()
    local ch = channel.new(w)
    local uuid = w:find("Crate").uuid
    assert.is_true(rpc(ch, "world.play").playing)
    assert.is_true(w.playing)
    rpc(ch, "component.set", { object = uuid, kind = TUNE, fields = { speed = 6.5 } })
    local kept = rpc(ch, "play.keep", { object = uuid, kind = TUNE })
    assert.are.equal(uuid, kept.object)
    assert.is_true(kept.keep)
    local stopped = rpc(ch, "world.stop")
    assert.is_false(stopped.playing)
    assert.are.same({}, stopped.refused)
    assert.are.equal(6.5, w:find(uuid):get(TUNE).speed)
    assert.are.equal("keep play changes", rpc(ch, "history.undo"))
    assert.are.equal(2, w:find(uuid):get(TUNE).speed)
  end)

  it("play.keep with keep = false takes the keep back", function()
    local w = world()
    local ch = channel.new(w)
    local uuid = w:find("Crate").uuid
    rpc(ch, "world.play")
    w:find(uuid):get(TUNE).speed = 4
    rpc(ch, "play.keep", { object = uuid, kind = TUNE })
    assert.is_false(rpc(ch, "play.keep", { object = uuid, kind = TUNE, keep = false }).keep)
    rpc(ch, "world.stop")
    assert.are.equal(2, w:find(uuid):get(TUNE).speed)
  end)

  it("world.stop lists the refusals", function()
    local w = world()
    local ch = channel.new(w)
    local wall = w:find("Wall").uuid
    rpc(ch, "world.play")
    w:find(wall):remove(SOLID)
    w:find(wall):add(GHOST)
    rpc(ch, "play.keep", { object = wall, kind = GHOST })
    local refused = rpc(ch, "world.stop").refused
    assert.are.equal(1, #refused)
    assert.are.equal("InvalidOperation", refused[1].code)
    assert.is_string(refused[1].message)
  end)

  it("play.keep outside play mode, and world.stop when not playing, are InvalidOperation", function()
    local ch = channel.new(world())
    local _, err = rpc(ch, "play.keep", { object = "Crate" })
    assert.are.equal("InvalidOperation", err.data.code)
    _, err = rpc(ch, "world.stop")
    assert.are.equal("InvalidOperation", err.data.code)
  end)

  it("are MCP tools", function()
    local srv = require("keel.mcp").new(channel.new(world()))
    local names = {}
    srv:handle(json.encode{ jsonrpc = "2.0", id = 0, method = "initialize",
      params = { protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "t", version = "1" } } })
    local list = json.decode(srv:handle(json.encode{ jsonrpc = "2.0", id = 1, method = "tools/list" }))
    for _, t in ipairs(list.result.tools) do names[t.name] = t end
    for _, n in ipairs{ "world_play", "world_stop", "play_keep" } do
      assert.is_not_nil(names[n], n)
      assert.are_not.equal(n:gsub("_", "."), names[n].description)
    end
  end)
end)

describe("the REPL's stop()", function()
  it("says what keep() wrote back and shows each refusal", function()
    local repl = require "keel.repl"
    local w = world()
    local saved = rawget(_G, "world")
    _G.world = w
    repl.play()
    local wall = w:find("Wall")
    local uuid = wall.uuid
    wall:remove(SOLID)
    wall:add(GHOST)
    w:keep(wall, GHOST)
    w:find("Crate"):get(TUNE).speed = 12
    w:keep(w:find("Crate"), TUNE)
    local text = repl.stop()
    _G.world = saved
    assert.truthy(text:find("written in", 1, true))
    assert.truthy(text:find("not kept: " .. uuid .. "." .. GHOST, 1, true))
  end)
end)
