-- editing_checkpoint_spec.lua — design/editing.md, "The saved checkpoint" and "Copy and paste":
-- w.path, w.saved_revision, w.dirty, w:save's checkpoint, e:dump / w:paste, the history's
-- duplicate / enable / paste, and the channel's world.info, world.save, object.copy, object.paste.
local keel = require "keel"
local history = require "keel.history"
local channel = require "keel.channel"
local H = require "helper"

local fails, spit, slurp, tmpdir, rmrf = H.fails, H.spit, H.slurp, H.tmpdir, H.rmrf
local key = H.key_maker("ckpt")

-- link: an entity field; awake notes each component that wakes
local LOG = {}
local LINK = key("link")
keel.kind{
  key = LINK,
  fields = { { "target", "entity" }, { "hp", "int", default = 1 } },
  awake = function(_, e) LOG[#LOG + 1] = "awake:" .. e.name end,
  validate = function(self) if self.hp < 0 then return false, "hp must not be negative" end end,
}

local SCENE = "keel: 1\nscene: {uuid: " .. H.SCENE_UUID .. ", name: level}\nentities:\n"
  .. "- uuid: a0000000-0000-4000-8000-000000000001\n  name: Crate\n  components: []\n"

local function names(list)
  local out = {}
  for i, e in ipairs(list) do out[i] = e.name end
  return table.concat(out, ",")
end

describe("the saved checkpoint", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmrf(dir) end)

  it("a new world starts clean with no path, and is dirty once anything changed", function()
    local w = keel.world("fresh")
    assert.is_nil(w.path)
    assert.are.equal(w.revision, w.saved_revision)
    assert.is_false(w.dirty)
    w:spawn{ name = "A" }
    assert.is_true(w.dirty)
    assert.are_not.equal(w.revision, w.saved_revision)
  end)

  it("keel.load sets w.path and starts clean; keel.parse leaves w.path nil", function()
    local path = dir .. "/level.yaml"
    spit(path, SCENE)
    local w = assert(keel.load(path))
    assert.are.equal(path, w.path)
    assert.is_false(w.dirty)
    assert.are.equal(w.revision, w.saved_revision)
    local p = assert(keel.parse(SCENE))
    assert.is_nil(p.path)
    assert.is_false(p.dirty)
  end)

  it("w:save() saves to w.path and makes the world clean", function()
    local path = dir .. "/level.yaml"
    spit(path, SCENE)
    local w = assert(keel.load(path))
    w:find("Crate").name = "Box"
    assert.is_true(w.dirty)
    assert.is_true(w:save())
    assert.is_false(w.dirty)
    assert.are.equal(w.revision, w.saved_revision)
    assert.truthy(slurp(path):find("name: Box", 1, true))
  end)

  it("w:save() with no path is InvalidArgument when w.path is nil", function()
    local w = keel.world("nowhere")
    w:spawn{ name = "A" }
    fails("InvalidArgument", w.save, w)
    assert.is_true(w.dirty)
  end)

  it("saving to another path is a copy: w.path and the checkpoint stay", function()
    local path, copy = dir .. "/level.yaml", dir .. "/copy.yaml"
    spit(path, SCENE)
    local w = assert(keel.load(path))
    local saved = w.saved_revision
    w:spawn{ name = "New" }
    assert.is_true(w:save(copy))
    assert.are.equal(path, w.path)
    assert.are.equal(saved, w.saved_revision)
    assert.is_true(w.dirty)
    assert.truthy(slurp(copy):find("name: New", 1, true))
    assert.falsy(slurp(path):find("name: New", 1, true))
  end)

  it("w:save(path, { adopt = true }) takes the path and the checkpoint", function()
    local w = keel.world("adopted")
    w:spawn{ name = "A" }
    local path = dir .. "/mine.yaml"
    assert.is_true(w:save(path, { adopt = true }))
    assert.are.equal(path, w.path)
    assert.is_false(w.dirty)
    w:spawn{ name = "B" }
    assert.is_true(w:save())
    assert.is_false(w.dirty)
    assert.truthy(slurp(path):find("name: B", 1, true))
  end)

  it("refuses bad save options and read-only properties", function()
    local w = keel.world("opts")
    fails("InvalidArgument", w.save, w, dir .. "/x.yaml", { adpot = true })
    fails("InvalidArgument", w.save, w, dir .. "/x.yaml", { adopt = "yes" })
    fails("InvalidArgument", w.save, w, dir .. "/x.yaml", 3)
    fails("InvalidArgument", w.save, w, 42)
    assert.is_nil(w.path) -- nothing was adopted by the refusals
    fails("Unsupported", function() w.dirty = false end)
    fails("Unsupported", function() w.saved_revision = 0 end)
    fails("Unsupported", function() w.path = "x" end)
  end)

  it("a failed save changes neither w.path nor the checkpoint", function()
    local w = keel.world("fail")
    w:spawn{ name = "A" }
    local ok, err = w:save(dir .. "/no/such/dir/x.yaml", { adopt = true })
    assert.is_nil(ok)
    assert.is_table(err)
    assert.is_nil(w.path)
    assert.is_true(w.dirty)
  end)

  it("undo back to the saved revision makes the world clean again; redo dirties it", function()
    local w = keel.world("undo")
    local h = history.new(w)
    local e = h:spawn{ name = "A" }
    h:rename(e, "B")
    assert.is_true(w.dirty)
    h:undo()
    h:undo()
    assert.is_false(w.dirty)
    h:redo()
    assert.is_true(w.dirty)
    h:undo()
    assert.is_false(w.dirty)
  end)

  it("undo after a save to the saved revision: clean at the save, dirty on either side", function()
    local path = dir .. "/level.yaml"
    spit(path, SCENE)
    local w = assert(keel.load(path))
    local h = history.new(w)
    h:rename(w:find("Crate"), "One")
    assert.is_true(w:save())
    h:rename(w:find("One"), "Two")
    assert.is_true(w.dirty)
    h:undo()
    assert.is_false(w.dirty)
    h:undo()
    assert.is_true(w.dirty) -- before the save: the file holds "One"
  end)

  it("a change made outside the history keeps the world dirty through an undo", function()
    local w = keel.world("outside")
    local h = history.new(w)
    h:spawn{ name = "A" }
    w:spawn{ name = "Other" } -- not in the history
    h:undo()
    assert.is_true(w.dirty)
  end)
end)

describe("copy and paste", function()
  before_each(function() LOG = {} end)

  -- Root > Child (link -> Root) with an unknown component, Root links to Far (outside).
  local function scene()
    local w = keel.world("src")
    local far = w:spawn{ name = "Far" }
    local root = w:spawn{ name = "Root", components = { { LINK, target = far } } }
    local child = w:spawn{ name = "Child", parent = root, components = { { LINK, hp = 7 } } }
    child:get(LINK).target = root
    local leaf = w:spawn{ name = "Leaf", parent = child }
    leaf.enabled = false
    return w, root, child, far
  end

  it("e:dump is canonical scene YAML: keel: 1, entities in pre-order, parents as UUIDs, the top's left out", function()
    local w, root, child = scene()
    local text = root:dump()
    assert.truthy(text:find("^keel: 1\n"))
    assert.truthy(text:find("\nentities:\n", 1, true))
    local r, c, l = text:find("name: Root", 1, true), text:find("name: Child", 1, true), text:find("name: Leaf", 1, true)
    assert.truthy(r and c and l and r < c and c < l)
    assert.falsy(text:find("name: Far", 1, true))
    assert.truthy(text:find("parent: " .. root.uuid, 1, true))
    assert.truthy(text:find("parent: " .. child.uuid, 1, true))
    local count = select(2, text:gsub("\n  parent: ", ""))
    assert.are.equal(2, count) -- Child's and Leaf's; Root's own parent is left out
    assert.are.equal(text, root:dump()) -- the same world dumps the same text
    -- it reads back in the same shape (Root's link to Far names an entity outside the fragment:
    -- a paste keeps or clears it, so the fragment alone is read with w:paste, not keel.parse)
    local p = keel.world("read")
    p:paste(text)
    assert.are.equal("Root,Child,Leaf", names(H.entities(p)))
    assert.is_nil(p:find("Root").parent)
    -- a subtree with no outside reference loads as a scene on its own
    local leaf = assert(keel.parse(child:children()[1]:dump()))
    assert.are.equal("Leaf", names(H.entities(leaf)))
    local rev = w.revision
    root:dump()
    assert.are.equal(rev, w.revision) -- dumping changes nothing
  end)

  it("e:dump keeps unknown components", function()
    local text = "keel: 1\nscene: {uuid: " .. H.SCENE_UUID .. ", name: s}\nentities:\n"
      .. "- uuid: a0000000-0000-4000-8000-000000000001\n  name: Winch\n  components:\n"
      .. "  - kind: mod:winch_unknown\n    version: 3\n    slot: 0\n    body: {rope_length: 12.5}\n"
    local w = assert(keel.parse(text))
    local dump = w:find("Winch"):dump()
    assert.truthy(dump:find("mod:winch_unknown", 1, true))
    assert.truthy(dump:find("rope_length: 12.5", 1, true))
    local roots = w:paste(dump)
    assert.truthy(roots[1]:dump():find("rope_length: 12.5", 1, true))
  end)

  it("e:dump refuses the scene root and stale handles", function()
    local w, root = scene()
    fails("ProtectedEntity", function() return w.root:dump() end)
    root:destroy()
    fails("NotFound", function() return root:dump() end)
  end)

  it("w:paste copies with fresh UUIDs, remaps inside references, keeps outside ones w holds", function()
    local w, root, child, far = scene()
    local before = w:count()
    local roots = w:paste(root:dump())
    assert.are.equal(1, #roots)
    local copy = roots[1]
    assert.are.equal(before + 3, w:count())
    assert.are.equal("Root", copy.name)
    assert.are_not.equal(root.uuid, copy.uuid)
    assert.is_nil(copy.parent)
    local kids = copy:children()
    assert.are.equal(1, #kids)
    assert.are_not.equal(child.uuid, kids[1].uuid)
    assert.are.equal(copy, kids[1]:get(LINK).target) -- inside: the copy of Root
    assert.are.equal(7, kids[1]:get(LINK).hp)
    assert.are.equal(far, copy:get(LINK).target)     -- outside, held by w: kept
    assert.is_false(kids[1]:children()[1].enabled)
  end)

  it("w:paste into another world clears references to entities it lacks, runs awake, takes a parent", function()
    local _, root = scene()
    local other = keel.world("dst")
    local holder = other:spawn{ name = "Holder" }
    LOG = {}
    local roots = other:paste(root:dump(), holder)
    local copy = roots[1]
    assert.are.equal(holder, copy.parent)
    assert.is_nil(copy:get(LINK).target) -- Far is not in `other`
    assert.are.equal(copy, copy:children()[1]:get(LINK).target)
    assert.are.same({ "awake:Root", "awake:Child" }, LOG)
    -- another process: the text alone is enough
    local third = keel.world("third")
    assert.are.equal(1, #third:paste(root:dump()))
    assert.are.equal(3, third:count())
  end)

  it("a fragment that would not load is refused whole: the load's diagnostics, nothing spawned", function()
    local w = keel.world("dst")
    w:spawn{ name = "Keep" }
    local rev = w.revision
    LOG = {}
    local err = fails("ParseError", w.paste, w, "keel: 1\nentities: [ {name: x")
    assert.is_table(err.diagnostics)
    -- the second entity's body breaks its kind's rule: the first is not spawned either
    local bad = "keel: 1\nscene: {uuid: " .. H.SCENE_UUID .. ", name: s}\nentities:\n"
      .. "- uuid: a0000000-0000-4000-8000-000000000001\n  name: Good\n  components: []\n"
      .. "- uuid: a0000000-0000-4000-8000-000000000002\n  name: Bad\n  components:\n"
      .. "  - kind: " .. LINK .. "\n    version: 1\n    slot: 0\n    body: {hp: -1}\n"
    err = fails("InvalidArgument", w.paste, w, bad)
    assert.truthy(#err.diagnostics >= 1)
    assert.are.equal(1, w:count())
    assert.are.equal(rev, w.revision)
    assert.are.same({}, LOG)
  end)

  it("w:paste refuses a non-string fragment and a parent of another world", function()
    local w = keel.world("a")
    local other = keel.world("b"):spawn{ name = "P" }
    fails("InvalidArgument", w.paste, w, 42)
    fails("NotFound", w.paste, w, w:spawn{ name = "X" }:dump(), other)
  end)

  it("h:paste is one history entry: one undo removes every copy, redo brings them back", function()
    local w, root = scene()
    local h = history.new(w)
    local n = w:count()
    local roots = h:paste(root:dump())
    assert.are.equal(n + 3, w:count())
    local uuid = roots[1].uuid
    assert.is_true(h:undo())
    assert.are.equal(n, w:count())
    assert.is_true(h:redo())
    assert.are.equal(n + 3, w:count())
    assert.are.equal("Root", w:find(uuid).name)
  end)

  it("h:duplicate and h:enable (an entity or a component) are undoable entries", function()
    local w, root, child = scene()
    local h = history.new(w)
    local n = w:count()
    local copy = h:duplicate(root)
    assert.are.equal(n + 3, w:count())
    assert.are.equal(copy, copy:children()[1]:get(LINK).target)
    h:undo()
    assert.are.equal(n, w:count())
    h:enable(child, false)
    assert.is_false(child.enabled)
    h:undo()
    assert.is_true(child.enabled)
    local c = child:get(LINK)
    h:enable(c, false)
    assert.is_false(c.enabled)
    h:undo()
    assert.is_true(c.enabled)
    h:redo()
    assert.is_false(c.enabled)
    fails("InvalidArgument", h.enable, h, "x", true)
    fails("InvalidArgument", h.enable, h, child, "no")
    fails("InvalidArgument", h.duplicate, h, "x")
    fails("ProtectedEntity", h.duplicate, h, w.root)
  end)
end)

describe("the channel", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmrf(dir) end)

  it("world.info has dirty and saved_revision; world.save to the scene makes it clean, to another path not", function()
    local path = dir .. "/level.yaml"
    spit(path, SCENE)
    local w = assert(keel.load(path))
    local ch = channel.new(w, { scene = path })
    local info = ch:call("world.info", {})
    assert.is_false(info.dirty)
    assert.are.equal(w.saved_revision, info.saved_revision)
    ch:call("object.rename", { object = "Crate", name = "Box" })
    assert.is_true(ch:call("world.info", {}).dirty)
    ch:call("world.save", { path = dir .. "/copy.yaml" })
    assert.is_true(ch:call("world.info", {}).dirty)
    ch:call("world.save", {})
    info = ch:call("world.info", {})
    assert.is_false(info.dirty)
    assert.are.equal(info.revision, info.saved_revision)
    -- undo through the channel back to the save, and past it
    ch:call("object.rename", { object = "Box", name = "Bin" })
    assert.is_true(ch:call("world.info", {}).dirty)
    ch:call("history.undo", {})
    assert.is_false(ch:call("world.info", {}).dirty)
    ch:call("history.undo", {})
    assert.is_true(ch:call("world.info", {}).dirty)
  end)

  it("object.copy gives text; object.paste makes copies, one undoable edit", function()
    local w = keel.world("ch")
    local a = w:spawn{ name = "A" }
    w:spawn{ name = "B", parent = a }
    local dst = w:spawn{ name = "Dst" }
    local ch = channel.new(w)
    local text = ch:call("object.copy", { object = a.uuid }).text
    assert.are.equal(a:dump(), text)
    local r = ch:call("object.paste", { text = text, parent = dst.uuid })
    assert.are.equal(1, #r.uuids)
    local copy = w:find(r.uuids[1])
    assert.are.equal(dst, copy.parent)
    assert.are.equal("B", copy:children()[1].name)
    assert.are.equal(5, w:count())
    assert.are.equal("object.paste", ch:call("history.undo", {}))
    assert.are.equal(3, w:count())
    ch:call("history.redo", {})
    assert.are.equal(5, w:count())
    -- over JSON-RPC: a bad fragment is a keel error, a missing text a params error
    local res = require "keel.json".decode(ch:handle('{"jsonrpc":"2.0","id":1,"method":"object.paste","params":{"text":"keel: 1\\n"}}'))
    assert.are.equal(channel.KEEL_ERROR, res.error.code)
    assert.are.equal(5, w:count())
    res = require "keel.json".decode(ch:handle('{"jsonrpc":"2.0","id":2,"method":"object.paste","params":{}}'))
    assert.are.equal(channel.INVALID_PARAMS, res.error.code)
    res = require "keel.json".decode(ch:handle('{"jsonrpc":"2.0","id":3,"method":"object.copy","params":{"object":"nobody"}}'))
    assert.are.equal(channel.KEEL_ERROR, res.error.code)
  end)
end)

describe("the MCP tools", function()
  it("object_copy and object_paste are tools; object_copy only reads", function()
    local mcp = require "keel.mcp"
    local json = require "keel.json"
    local srv = mcp.new(channel.new(keel.world("mcp")))
    srv:handle(json.encode { jsonrpc = "2.0", id = 0, method = "initialize",
      params = { protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "t", version = "1" } } })
    local r = json.decode(srv:handle(json.encode { jsonrpc = "2.0", id = 1, method = "tools/list" }))
    local by = {}
    for _, t in ipairs(r.result.tools) do by[t.name] = t end
    assert.is_table(by.object_copy)
    assert.is_table(by.object_paste)
    assert.is_true(by.object_copy.annotations.readOnlyHint)
    assert.is_false(by.object_paste.annotations.readOnlyHint)
    assert.is_table(by.object_paste.inputSchema.properties.text)
  end)
end)
