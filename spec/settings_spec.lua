-- settings_spec.lua — the scene's grid settings in full (design/registry.md, "Grid and scene
-- settings"): in the file, from Lua, undoable through keel.history, and over the channel.
local keel = require "keel"
local history = require "keel.history"
local channel = require "keel.channel"
local json = require "keel.json"
local H = require "helper"

local DEFAULTS = {
  enabled = true, origin = { 0, 0, 0 }, orientation = { 0, 0, 0, 1 }, base_spacing = 1, major_line_every = 10,
  minor_color = { 0.5, 0.5, 0.5, 0.25 }, major_color = { 0.5, 0.5, 0.5, 0.6 },
  u_color = { 0.9, 0.3, 0.3, 0.9 }, v_color = { 0.3, 0.5, 0.9, 0.9 }, fade = 0, display = "lines",
}

local HEAD = "keel: 1\nscene:\n  uuid: 550e8400-e29b-41d4-a716-446655440000\n  name: S\n"

local function scene(grid_lines)
  return HEAD .. "settings:\n  grid:\n" .. grid_lines .. "root: []\nentities: []\n"
end

local function copy(t)
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  return out
end

describe("settings.grid", function()
  it("has the documented defaults, readable key by key and walked by pairs", function()
    local w = keel.world("S")
    local seen = {}
    for k, v in pairs(w.settings.grid) do seen[k] = v end
    assert.are.same(DEFAULTS, seen)
    assert.are.same(DEFAULTS, w:_settings().grid)
    assert.are.equal("lines", w.settings.grid.display)
    assert.is_nil(w.settings.grid.nothing)
    w:close()
  end)

  it("reads every key from a scene file and writes it back byte for byte", function()
    local text = scene("    enabled: false\n    origin: [1, 0, 2]\n    orientation: [0, 0, 0, 1]\n"
      .. "    base_spacing: 0.25\n    major_line_every: 4\n    minor_color: [0.1, 0.2, 0.3, 0.4]\n"
      .. "    major_color: [1, 1, 1, 1]\n    u_color: [1, 0, 0, 1]\n    v_color: [0, 0, 1, 1]\n"
      .. "    fade: 50\n    display: dots\n")
    local w = assert(keel.parse(text))
    local g = w.settings.grid
    assert.is_false(g.enabled)
    assert.are.same({ 0.1, 0.2, 0.3, 0.4 }, g.minor_color)
    assert.are.equal(50, g.fade)
    assert.are.equal("dots", g.display)
    assert.are.equal(text, w:dump())
    w:close()
  end)

  it("writes the look keys only when they are not the default, so older files keep their bytes", function()
    local demo = H.slurp(H.ROOT .. "/scenes/demo.yaml")
    local w = assert(keel.parse(demo))
    assert.are.equal(demo, w:dump())
    w.settings.grid.fade = 12
    assert.truthy(w:dump():find("\n    fade: 12\n", 1, true))
    w.settings.grid.fade = 0
    assert.are.equal(demo, w:dump())
    w:close()
  end)

  it("refuses an unknown key or a bad value with its path and place, and loads nothing", function()
    local cases = {
      { "    colour: [1, 1, 1, 1]\n", "settings.grid.colour", "ParseError" }, -- as any unknown key of the file's own maps
      { "    u_color: [1.5, 0, 0, 1]\n", "settings.grid.u_color" },
      { "    major_color: [1, 0, 0]\n", "settings.grid.major_color" },
      { "    fade: -1\n", "settings.grid.fade" },
      { "    display: stripes\n", "settings.grid.display" },
    }
    for _, c in ipairs(cases) do
      local dir = H.tmpdir()
      H.spit(dir .. "/bad.yaml", scene("    enabled: true\n" .. c[1]))
      local w, err = keel.load(dir .. "/bad.yaml")
      H.rmrf(dir)
      assert.is_nil(w, c[1])
      local d = err.diagnostics[1]
      assert.are.equal(c[3] or "InvalidArgument", d.code, c[1])
      assert.are.equal(c[2], d.path, c[1])
      assert.truthy(d.file:find("bad.yaml", 1, true), c[1])
      assert.is_true(d.line >= 7, c[1])
    end
  end)

  it("takes writes from Lua with the file's checks, bumping the revision", function()
    local w = keel.world("S")
    local rev = w.revision
    w.settings.grid.major_color = { 1, 0, 0, 1 }
    w.settings.grid.base_spacing = 0.5
    w.settings.grid.display = "none"
    assert.is_true(w.revision > rev)
    assert.are.same({ 1, 0, 0, 1 }, w.settings.grid.major_color)
    assert.are.equal(0.5, w.settings.grid.base_spacing)
    local before = w:dump()
    local bad = {
      { "base_spacing", 0 }, { "base_spacing", "1" }, { "major_line_every", 0 }, { "major_line_every", 1.5 },
      { "minor_color", { 1, 1, 1 } }, { "minor_color", { 1, 1, 1, -0.5 } }, { "fade", -2 }, { "fade", 0 / 0 },
      { "display", "stripes" }, { "enabled", 1 }, { "origin", { 0, 0 } }, { "orientation", { 0, 0, 0, 0 } },
      { "colour", { 1, 1, 1, 1 } },
    }
    for _, b in ipairs(bad) do
      local ok, err = pcall(function() w.settings.grid[b[1]] = b[2] end)
      assert.is_false(ok, b[1])
      assert.are.equal("InvalidArgument", err.code, b[1])
      assert.are.equal("settings.grid." .. b[1], err.diagnostics[1].path, b[1])
    end
    assert.are.equal(before, w:dump())
    local ok, err = pcall(function() w.settings = {} end)
    assert.is_false(ok)
    assert.are.equal("Unsupported", err.code)
    w:close()
  end)

  it("sets several keys at once through w.settings.grid = {...}, all or nothing", function()
    local w = keel.world("S")
    w.settings.grid = { base_spacing = 2, fade = 10 }
    assert.are.equal(2, w.settings.grid.base_spacing)
    assert.are.equal(10, w.settings.grid.fade)
    assert.has_error(function() w.settings.grid = { base_spacing = 3, fade = -1 } end)
    assert.are.equal(2, w.settings.grid.base_spacing)
    w:close()
  end)

  it("is undoable through keel.history's set_setting, each set one entry", function()
    local w = keel.world("S")
    local h = history.new(w)
    local rev = w.revision
    h:set_setting("grid.u_color", { 0, 1, 0, 1 })
    h:set_setting("grid.base_spacing", 4)
    assert.are.same({ 0, 1, 0, 1 }, w.settings.grid.u_color)
    assert.is_true(h:undo())
    assert.are.equal(1, w.settings.grid.base_spacing)
    assert.are.same({ 0, 1, 0, 1 }, w.settings.grid.u_color)
    assert.is_true(h:undo())
    assert.are.same(DEFAULTS.u_color, w.settings.grid.u_color)
    assert.are.equal(rev, w.revision) -- back where it started: clean again
    assert.is_true(h:redo())
    assert.are.same({ 0, 1, 0, 1 }, w.settings.grid.u_color)
    local ok, err = pcall(h.set_setting, h, "grid.fade", -1)
    assert.is_false(ok)
    assert.are.equal("InvalidArgument", err.code)
    ok, err = pcall(h.set_setting, h, "camera.fov", 60)
    assert.is_false(ok)
    assert.are.equal("InvalidArgument", err.code)
    assert.is_true(h:undo())
    assert.is_false(h:undo())
    w:close()
  end)

  it("survives a cooked file, and a cooked file from before the look keys reads as the defaults", function()
    local dir = H.tmpdir()
    local w = keel.world("S")
    w.settings.grid = { minor_color = { 0.1, 0.1, 0.1, 1 }, fade = 7, display = "dots" }
    local yaml = w:dump()
    assert(w:save(dir .. "/s.yaml"))
    local code, _, err = H.run_keel(H.find_keel(), "cook " .. H.shell_quote(dir .. "/s.yaml") .. " -o "
      .. H.shell_quote(dir .. "/s.keelc"))
    assert.are.equal(0, code, err)
    local back = assert(keel.load(dir .. "/s.keelc"))
    assert.are.equal(yaml, back:dump())
    back:close()
    w:close()
    H.rmrf(dir)
  end)
end)

describe("the channel's settings.get and settings.set", function()
  local function rpc(ch, method, params)
    return json.decode(ch:handle(json.encode { jsonrpc = "2.0", id = 1, method = method, params = params }))
  end

  it("reads the tree and writes one path as one undoable edit", function()
    local w = keel.world("S")
    local ch = channel.new(w)
    local got = rpc(ch, "settings.get", {}).result
    assert.are.equal(1, got.grid.base_spacing)
    assert.are.equal("lines", got.grid.display)
    assert.are.same({ 0.5, 0.5, 0.5, 0.6 }, got.grid.major_color)
    local set = rpc(ch, "settings.set", { path = "grid.major_color", value = { 0, 0, 1, 1 } }).result
    assert.are.same({ 0, 0, 1, 1 }, set.grid.major_color)
    assert.are.same({ 0, 0, 1, 1 }, w.settings.grid.major_color)
    assert.are.equal(5, rpc(ch, "settings.set", { path = "grid.major_line_every", value = 5 }).result.grid.major_line_every)
    assert.are.equal("settings.set", ch:call("history.undo", {}))
    assert.are.equal(10, w.settings.grid.major_line_every)
    assert.are.equal("settings.set", ch:call("history.undo", {}))
    assert.are.same({ 0.5, 0.5, 0.5, 0.6 }, w.settings.grid.major_color)
    w:close()
  end)

  it("refuses a bad path or value as a keel error and changes nothing", function()
    local w = keel.world("S")
    local ch = channel.new(w)
    local rev = w.revision
    local r = rpc(ch, "settings.set", { path = "grid.fade", value = -3 })
    assert.are.equal(channel.KEEL_ERROR, r.error.code)
    r = rpc(ch, "settings.set", { path = "grid.bogus", value = 1 })
    assert.are.equal(channel.KEEL_ERROR, r.error.code)
    r = rpc(ch, "settings.set", { value = 1 })
    assert.are.equal(channel.INVALID_PARAMS, r.error.code)
    assert.are.equal(rev, w.revision)
    assert.is_false(ch:call("history.undo", {}))
    w:close()
  end)

  it("are MCP tools", function()
    local mcp = require "keel.mcp"
    local srv = mcp.new(channel.new(keel.world("mcp")))
    srv:handle(json.encode { jsonrpc = "2.0", id = 0, method = "initialize",
      params = { protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "t", version = "1" } } })
    local r = json.decode(srv:handle(json.encode { jsonrpc = "2.0", id = 1, method = "tools/list" }))
    local by = {}
    for _, t in ipairs(r.result.tools) do by[t.name] = t end
    assert.is_true(by.settings_get.annotations.readOnlyHint)
    assert.is_false(by.settings_set.annotations.readOnlyHint)
    assert.truthy(by.settings_set.inputSchema.properties.path.description:find("grid", 1, true))
  end)
end)
