-- editing_watch_spec.lua — w:watch(): the scene file changed on disk reaches the live world
-- in place, merges with live edits, or reports conflicts and errors (design/editing.md).
local keel = require "keel"
local history = require "keel.history"
local H = require "helper"

keel.kind{ key = "ew:hp", fields = {
  { "hp", "int", default = 10 },
  { "armor", "int", default = 0 },
  { "timer", "float", default = 0, runtime = true },
} }

AWAKES = 0
keel.kind{ key = "ew:awake", fields = { { "n", "int" } }, awake = function() AWAKES = AWAKES + 1 end }

local function scene_file()
  local dir = H.tmpdir()
  local path = dir .. "/s.yaml"
  local w = keel.world("S")
  local a = w:spawn{ name = "A", components = { { "ew:hp", hp = 5 } } }
  w:spawn{ name = "B", parent = a, components = { { "ew:hp", hp = 7 } } }
  w:spawn{ name = "C" }
  assert(w:save(path))
  w:close()
  return path
end

-- The file's text with `from` replaced by `to` once (plain text, not a pattern).
local function edit(path, from, to)
  local text = H.slurp(path)
  local i, j = text:find(from, 1, true)
  assert(i, "not in the file: " .. from)
  H.spit(path, text:sub(1, i - 1) .. to .. text:sub(j + 1))
end

-- A field line of one entity's component: "name: X" up to the next entity.
local function edit_in(path, name, from, to)
  local text = H.slurp(path)
  local at = assert(text:find('name: "' .. name .. '"', 1, true) or text:find("name: " .. name, 1, true))
  local i, j = text:find(from, at, true)
  assert(i, "not in " .. name .. ": " .. from)
  H.spit(path, text:sub(1, i - 1) .. to .. text:sub(j + 1))
end

describe("w:watch()", function()
  local path, w, h, watcher
  before_each(function()
    path = scene_file()
    w = assert(keel.load(path))
    h = history.new(w)
    watcher = w:watch{ interval = 0 }
  end)
  after_each(function()
    watcher:close()
    w:close()
  end)

  it("reports nothing while the file is unchanged", function()
    assert.is_nil(watcher:poll())
    assert.is_nil(watcher:poll())
  end)

  it("brings a clean world to the file in place, keeping the handles scripts hold", function()
    local a = w:find("A")
    local c = a:get("ew:hp")
    local rev = w.revision
    edit_in(path, "A", "hp: 5", "hp: 50")
    local ev = watcher:poll()
    assert.is_true(ev.reloaded)
    assert.is_true(a:alive()) -- the handle a script held
    assert.are.equal(50, c.hp) -- and its component handle
    assert.are.equal(7, w:find("B"):get("ew:hp").hp)
    assert.is_true(w.revision > rev)
    assert.is_false(w.dirty) -- the checkpoint moved to the reloaded revision
    assert.are.equal(w.revision, w.saved_revision)
    assert.are.equal(H.slurp(path), w:dump())
    assert.is_nil(watcher:poll())
  end)

  it("keeps a runtime field's live value across a reload", function()
    local a = w:find("A")
    a:get("ew:hp").timer = 3.5 -- a change too (the revision moves): the reload merges with it
    edit_in(path, "A", "hp: 5", "hp: 50")
    local ev = watcher:poll()
    assert.is_true(ev.reloaded or ev.merged)
    assert.are.equal(50, a:get("ew:hp").hp)
    assert.are.equal(3.5, a:get("ew:hp").timer)
  end)

  it("spawns, destroys, renames and reparents as the file says", function()
    local b = w:find("B")
    local text = H.slurp(path)
    -- B moves to the top level and is renamed; C goes
    local c_uuid = w:find("C").uuid
    text = text:gsub("\n  parent: [%x%-]+", "", 1):gsub('name: "?B"?', "name: Bee", 1)
    text = text:gsub("%- uuid: " .. c_uuid:gsub("%-", "%%-") .. "\n  name: \"?C\"?\n  components: %[%]\n", "")
    H.spit(path, text)
    local ev = watcher:poll()
    assert.is_true(ev.reloaded, require "keel.json".encode(ev))
    assert.is_true(b:alive())
    assert.are.equal("Bee", b.name)
    assert.is_nil(b.parent)
    assert.is_nil(w:find(c_uuid))
    assert.are.equal(H.slurp(path), w:dump())
  end)

  it("spawns, adds and removes components, and reorders as another world saved the file", function()
    local other = assert(keel.load(path))
    local oa = other:find("A")
    other:spawn{ name = "D", parent = oa, components = { { "ew:hp", hp = 1 } } }
    other:find("C"):add("ew:awake")
    oa:remove("ew:hp")
    other:find("C").parent = oa -- A's children: B, D, C
    assert(other:save(path))
    other:close()
    local awakes = AWAKES
    local a, c = w:find("A"), w:find("C")
    local ev = watcher:poll()
    assert.is_true(ev.reloaded)
    assert.are.equal(H.slurp(path), w:dump())
    assert.is_true(a:alive() and c:alive())
    assert.is_nil(a:get("ew:hp"))
    assert.are.equal(awakes + 1, AWAKES) -- awake ran for the component the file added
    assert.are.equal(1, w:find("D"):get("ew:hp").hp)
  end)

  it("makes the reload from disk one history entry that one undo reverts", function()
    edit_in(path, "A", "hp: 5", "hp: 51")
    edit_in(path, "B", "hp: 7", "hp: 71")
    assert.is_true(watcher:poll().reloaded)
    assert.are.equal(51, w:find("A"):get("ew:hp").hp)
    assert.is_true(h:undo())
    assert.are.equal(5, w:find("A"):get("ew:hp").hp)
    assert.are.equal(7, w:find("B"):get("ew:hp").hp)
    assert.is_false(h:undo())
  end)

  it("brings the scene's name and grid settings to the file in place, undone as one entry", function()
    local a = w:find("A")
    edit(path, "name: S\n", "name: Renamed\n")
    edit(path, "base_spacing: 1\n", "base_spacing: 0.5\n")
    edit(path, "major_line_every: 10\n", "major_line_every: 10\n    major_color: [1, 0, 0, 1]\n    display: dots\n")
    edit_in(path, "A", "hp: 5", "hp: 52")
    local ev = watcher:poll()
    assert.is_true(ev.reloaded)
    assert.are.equal("Renamed", w.name)
    assert.are.equal(0.5, w.settings.grid.base_spacing)
    assert.are.same({ 1, 0, 0, 1 }, w.settings.grid.major_color)
    assert.are.equal("dots", w.settings.grid.display)
    assert.is_true(a:alive())
    assert.are.equal(H.slurp(path), w:dump())
    assert.is_false(w.dirty)
    assert.is_true(h:undo())
    assert.are.equal("S", w.name)
    assert.are.equal(1, w.settings.grid.base_spacing)
    assert.are.equal("lines", w.settings.grid.display)
    assert.are.equal(5, a:get("ew:hp").hp)
  end)

  it("merges a grid edit on disk with a live component edit", function()
    w:find("B"):get("ew:hp").hp = 70 -- ours
    edit(path, "major_line_every: 10", "major_line_every: 4") -- theirs
    assert.is_true(watcher:poll().merged)
    assert.are.equal(4, w.settings.grid.major_line_every)
    assert.are.equal(70, w:find("B"):get("ew:hp").hp)
  end)

  it("reports a grid setting changed on both sides as a conflict and applies nothing", function()
    w.settings.grid.base_spacing = 2 -- ours
    edit(path, "base_spacing: 1", "base_spacing: 3") -- theirs
    local ev = watcher:poll()
    assert.are.equal(1, #ev.conflicts)
    assert.matches("base_spacing", ev.conflicts[1].path)
    assert.are.equal(2, w.settings.grid.base_spacing)
    assert.is_true(watcher:resolve("theirs").merged)
    assert.are.equal(3, w.settings.grid.base_spacing)
  end)

  it("refuses a bad grid value in the file whole, with its place", function()
    edit(path, "major_line_every: 10", "major_line_every: 10\n    u_color: [2, 0, 0, 1]")
    local ev = watcher:poll()
    assert.is_table(ev.errors)
    assert.are.equal("settings.grid.u_color", ev.errors[1].path)
    assert.is_number(ev.errors[1].line)
    assert.are.same({ 0.9, 0.3, 0.3, 0.9 }, w.settings.grid.u_color)
  end)

  it("merges a file change with live edits when they do not meet (the world stays dirty)", function()
    w:find("B"):get("ew:hp").hp = 70 -- ours
    edit_in(path, "A", "hp: 5", "hp: 55") -- theirs
    local ev = watcher:poll()
    assert.is_true(ev.merged)
    assert.are.equal(55, w:find("A"):get("ew:hp").hp)
    assert.are.equal(70, w:find("B"):get("ew:hp").hp)
    assert.are_not.equal(H.slurp(path), w:dump())
  end)

  it("applies nothing on a conflict and reports the merge's entries", function()
    local a = w:find("A")
    a:get("ew:hp").hp = 6 -- ours
    edit_in(path, "A", "hp: 5", "hp: 9") -- theirs
    local before = w:dump()
    local ev = watcher:poll()
    assert.are.equal(1, #ev.conflicts)
    local c = ev.conflicts[1]
    assert.are.equal(a.uuid .. "/ew:hp[0]/hp", c.path)
    assert.are.equal("5", tostring(c.base))
    assert.are.equal("6", tostring(c.ours))
    assert.are.equal("9", tostring(c.theirs))
    assert.are.equal(before, w:dump())
  end)

  it("resolves with theirs at one path and ours elsewhere", function()
    local a, b = w:find("A"), w:find("B")
    a:get("ew:hp").hp = 6
    b:get("ew:hp").hp = 8
    edit_in(path, "A", "hp: 5", "hp: 9")
    edit_in(path, "B", "hp: 7", "hp: 3")
    edit_in(path, "A", "armor: 0", "armor: 2") -- a clean edit of theirs
    local ev = watcher:poll()
    assert.are.equal(2, #ev.conflicts)
    local left = watcher:resolve("theirs", { a.uuid .. "/ew:hp[0]/hp" })
    assert.are.equal(1, #left.conflicts)
    assert.are.equal(6, a:get("ew:hp").hp) -- nothing applied until all are settled
    assert.is_true(watcher:resolve("ours").merged)
    assert.are.equal(9, a:get("ew:hp").hp)
    assert.are.equal(8, b:get("ew:hp").hp)
    assert.are.equal(2, a:get("ew:hp").armor)
    assert.is_true(h:undo())
    assert.are.equal(6, a:get("ew:hp").hp)
  end)

  it("applies nothing on a parse error, reports it, and tries again on the next change", function()
    local text = H.slurp(path)
    H.spit(path, text .. "\n  : [broken\n")
    local before = w:dump()
    local ev = watcher:poll()
    assert.is_true(#ev.errors > 0)
    assert.is_string(ev.errors[1].code)
    assert.are.equal(before, w:dump())
    H.spit(path, (text:gsub("hp: 5", "hp: 15", 1)))
    assert.is_true(watcher:poll().reloaded)
    assert.are.equal(15, w:find("A"):get("ew:hp").hp)
  end)

  it("reports a deleted file and applies nothing", function()
    os.remove(path)
    local ev = watcher:poll()
    assert.is_true(#ev.errors > 0)
    assert.is_nil(watcher:poll()) -- once per change
  end)

  it("does not take keel's own save for a change", function()
    w:find("A"):get("ew:hp").hp = 12
    assert(w:save(path))
    assert.is_nil(watcher:poll())
    edit_in(path, "A", "hp: 12", "hp: 13") -- clean again: reloaded, not merged
    assert.is_true(watcher:poll().reloaded)
  end)

  it("refuses a bad resolve", function()
    assert.has_error(function() watcher:resolve("mine") end)
    assert.has_error(function() watcher:resolve("ours") end) -- nothing pending
  end)
end)

describe("w:watch() and kind files", function()
  it("reloads a changed kind file as reload() does, and keeps the old declaration when it fails", function()
    local kindfiles = require "keel.kindfiles"
    local dir = H.tmpdir()
    os.execute("mkdir -p " .. H.shell_quote(dir .. "/kinds"))
    local file = dir .. "/kinds/thing.lua"
    H.spit(file, 'require "keel".kind{ key = "ewk:thing", fields = { { "a", "int" } } }\n')
    local quiet = kindfiles.stderr
    kindfiles.stderr = { write = function() end }
    kindfiles.load(dir .. "/kinds")
    kindfiles.stderr = quiet
    assert.are.equal("a", keel.kind_info("ewk:thing").fields[1].key)
    local path = scene_file()
    local w = assert(keel.load(path))
    local watcher = w:watch{ interval = 0 }
    H.spit(file, 'require "keel".kind{ key = "ewk:thing", fields = { { "b", "int" }, { "c", "int" } } }\n')
    local ev = watcher:poll()
    assert.are.same({ file }, ev.kinds.reloaded)
    assert.are.equal("b", keel.kind_info("ewk:thing").fields[1].key)
    H.spit(file, 'require "keel".kind{ key = "ewk:thing", fields = { { "b", "int" } } -- broken\n')
    ev = watcher:poll()
    assert.are.equal(1, #ev.kinds.errors)
    assert.matches("thing.lua", ev.kinds.errors[1])
    assert.are.equal(2, #keel.kind_info("ewk:thing").fields) -- the old declaration stays
    w:close()
    H.rmrf(dir)
  end)
end)

describe("the channel's world.resolve", function()
  local channel = require "keel.channel"
  it("resolves the watcher's conflicts, and is InvalidOperation with none", function()
    local path = scene_file()
    local w = assert(keel.load(path))
    local ch = channel.new(w)
    local watcher = w:watch{ interval = 0 }
    assert.are.equal("InvalidOperation", H.code_of(ch.call, ch, "world.resolve", { take = "ours" }))
    ch:watch_file(watcher)
    assert.are.equal("InvalidOperation", H.code_of(ch.call, ch, "world.resolve", { take = "ours" }))
    local a = w:find("A")
    a:get("ew:hp").hp = 6
    edit_in(path, "A", "hp: 5", "hp: 9")
    assert.are.equal(1, #watcher:poll().conflicts)
    assert.are.equal(1, #ch:call("world.info").conflicts)
    local r = ch:call("world.resolve", { take = "theirs" })
    assert.is_true(r.merged)
    assert.are.equal(9, a:get("ew:hp").hp)
    assert.is_nil(ch:call("world.info").conflicts)
    ch:call("history.undo") -- the resolve is an entry of the channel's history too
    assert.are.equal(6, a:get("ew:hp").hp)
    w:close()
  end)
end)

describe("keel run SCENE --watch", function()
  local keel_bin = H.find_keel()
  local dir
  -- A kind whose update rewrites the scene file at frame 3 (`from` -> `to`), and sets its own
  -- field x to `live` at frame 1 when given (a live edit).
  local function project(from, to, live)
    dir = H.tmpdir()
    os.execute("mkdir -p " .. H.shell_quote(dir .. "/kinds"))
    H.spit(dir .. "/kinds/editor.lua", ([[
local keel = require "keel"
local n = 0
keel.kind{ key = "ew:editor", fields = { { "x", "int" } },
  update = function(self)
    n = n + 1
    if n == 1 and %s then self.x = %s end
    if n == 3 then
      local f = io.open("s.yaml"); local t = f:read("a"); f:close()
      f = io.open("s.yaml", "w"); f:write((t:gsub(%q, %q))); f:close()
    end
  end }
]]):format(tostring(live ~= nil), tostring(live), from, to))
    H.spit(dir .. "/make.lua", [[
local keel = require "keel"
local w = keel.world("S")
w:spawn{ name = "Ed", components = { "ew:editor" } }
assert(w:save("s.yaml"))
]])
    local code = H.run_keel(keel_bin, "make.lua", nil, dir)
    assert.are.equal(0, code)
  end
  after_each(function() H.rmrf(dir) end)

  it("applies an edit of the scene file made while it runs", function()
    project("x: 0", "x: 7")
    local code, out, err = H.run_keel(keel_bin, "run s.yaml --watch --frames 10 --save out.yaml", nil, dir)
    assert.are.equal(0, code, err)
    assert.matches("s.yaml: reloaded from disk %(1 change%)", out)
    assert.matches("x: 7", H.slurp(dir .. "/out.yaml"))
  end)

  it("prints one line per conflict and applies nothing", function()
    project("x: 0", "x: 9", 1)
    local code, out, err = H.run_keel(keel_bin, "run s.yaml --watch --frames 10 --save out.yaml", nil, dir)
    assert.are.equal(0, code, err)
    assert.matches("s.yaml: conflict: [%x%-]+/ew:editor%[0%]/x: base 0, ours 1, theirs 9\n", out)
    assert.matches("x: 1", H.slurp(dir .. "/out.yaml"))
  end)
end)

describe("the REPL's watch()", function()
  it("applies an edit on disk between lines, prints each conflict, and resolve() settles it", function()
    local dir = H.tmpdir()
    local scene = dir .. "/demo.yaml"
    H.spit(scene, H.slurp(H.ROOT .. "/scenes/demo.yaml"))
    local input = table.concat({
      "print(watch())",
      "os.execute([[sed -i 's/name: Floor/name: Ground/' demo.yaml]])",
      "x = 1",
      "print('found', world:find('Ground') ~= nil, world.dirty)",
      "world:find('Ground').name = 'Mine'",
      "os.execute([[sed -i 's/name: Ground/name: Theirs/' demo.yaml]])",
      "x = 2",
      "print(resolve('theirs'))",
      "print('after', world:find('Theirs') ~= nil)",
    }, "\n") .. "\n"
    local code, out, err = H.run_keel(H.find_keel(), "repl demo.yaml", input, dir)
    assert.are.equal(0, code, err)
    assert.matches("watching demo%.yaml", out)
    assert.matches("demo%.yaml: reloaded from disk", out)
    assert.matches("found\ttrue\tfalse", out)
    assert.matches("demo%.yaml: conflict: [%x-]+/name: base Ground, ours Mine, theirs Theirs", out)
    assert.matches("resolved", out)
    assert.matches("after\ttrue", out)
    H.rmrf(dir)
  end)
end)
