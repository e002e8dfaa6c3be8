-- persist_spec.lua — keel.persist: baseline, save, load and info from Lua.
local keel = require "keel"

local SCENE = [[
keel: 1
scene:
  uuid: 5a5e0000-0000-4000-8000-0000000000aa
  name: Spec
entities:
  - uuid: 00000000-0000-4000-8000-0000000000a1
    name: Player
    components:
      - kind: core:transform
        version: 1
        slot: 0
        body:
          position: [0, 1, 0]
      - kind: core:audio_source
        version: 1
        slot: 0
        body: {}
  - uuid: 00000000-0000-4000-8000-0000000000a2
    name: Doomed
    components: []
  - uuid: 00000000-0000-4000-8000-0000000000a3
    name: Crate
    components:
      - kind: core:transform
        version: 1
        slot: 0
        body: {}
]]

local function tmpname()
  return os.tmpname() .. ".sav"
end

local function fresh()
  local w, err = keel.parse(SCENE)
  assert(w, err and tostring(err))
  return w
end

local function play(w)
  local player = w:find("Player")
  local s = w:spawn{ name = "Spawned", parent = player, components = { { "core:transform", position = { 1, 2, 3 } } } }
  w:find("Doomed"):destroy()
  player:get("core:transform").position = { 5, 6, 7 }
  player:add("core:audio_source", { volume = 0.25 })
  player:remove("core:audio_source", 0)
  local crate = w:find("Crate")
  crate.parent = s
  crate.name = "Crate (moved)"
  crate.enabled = false
  return s
end

describe("keel.persist", function()
  local path
  before_each(function() path = tmpname() end)
  after_each(function() os.remove(path) end)

  describe(".baseline()", function()
    it("returns a userdata value", function()
      local base = keel.persist.baseline(fresh())
      assert.are.equal("userdata", type(base))
      assert.truthy(tostring(base):match("^keel.Baseline"))
    end)

    it("raises when not given a world", function()
      assert.has_error(function() keel.persist.baseline({}) end)
    end)
  end)

  describe(".save() and .load()", function()
    it("restore a played scene over a freshly loaded one", function()
      local w = fresh()
      local base = keel.persist.baseline(w)
      play(w)
      assert.is_true(keel.persist.save(w, base, path, { title = "Chapter 2", play_seconds = 310 }))
      local w2 = fresh()
      assert.is_true(keel.persist.load(w2, path))
      assert.are.equal(w:dump(), w2:dump())
      assert.is_nil(w2:find("Doomed"))
      local crate = w2:find("Crate (moved)")
      assert.is_false(crate.enabled)
      assert.are.equal(w2:find("Spawned"), crate.parent)
      assert.are.same({ 5, 6, 7 }, w2:find("Player"):get("core:transform").position)
    end)

    it("works with a baseline taken from another world of the same scene", function()
      local base = keel.persist.baseline(fresh())
      local w = fresh()
      play(w)
      assert.is_true(keel.persist.save(w, base, path))
      local w2 = fresh()
      assert.is_true(keel.persist.load(w2, path))
      assert.are.equal(w:dump(), w2:dump())
    end)

    it("gives the same result over many cycles", function()
      local w = fresh()
      local base = keel.persist.baseline(w)
      play(w)
      local want = w:dump()
      for _ = 1, 20 do
        assert.is_true(keel.persist.save(w, base, path, { saved_at = 1 }))
        w = fresh()
        assert.is_true(keel.persist.load(w, path))
        assert.are.equal(want, w:dump())
      end
    end)

    it("returns nil, err for a damaged file and leaves the world untouched", function()
      local w = fresh()
      local base = keel.persist.baseline(w)
      play(w)
      assert.is_true(keel.persist.save(w, base, path))
      local f = assert(io.open(path, "rb"))
      local data = f:read("a")
      f:close()
      f = assert(io.open(path, "wb"))
      f:write(data:sub(1, 40) .. string.char((data:byte(41) + 1) % 256) .. data:sub(42))
      f:close()
      local w2 = fresh()
      local before = w2:dump()
      local ok, err = keel.persist.load(w2, path)
      assert.is_nil(ok)
      assert.are.equal("ParseError", err.code)
      assert.truthy(tostring(err):match("CRC"))
      assert.are.equal(before, w2:dump())
    end)

    it("returns nil, err for a missing file", function()
      local ok, err = keel.persist.load(fresh(), "/nonexistent/dir/slot.sav")
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
    end)

    it("returns nil, err when the directory cannot be written", function()
      local w = fresh()
      local ok, err = keel.persist.save(w, keel.persist.baseline(w), "/nonexistent/dir/slot.sav")
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
    end)

    it("refuses a save of another scene", function()
      local w = fresh()
      local base = keel.persist.baseline(w)
      play(w)
      assert.is_true(keel.persist.save(w, base, path))
      local other = assert(keel.parse((SCENE:gsub("5a5e0000", "6b6f0000"))))
      local ok, err = keel.persist.load(other, path)
      assert.is_nil(ok)
      assert.are.equal("InvalidArgument", err.code)
    end)

    it("raises on misuse of its arguments", function()
      local w = fresh()
      local base = keel.persist.baseline(w)
      assert.has_error(function() keel.persist.save(w, {}, path) end)
      assert.has_error(function() keel.persist.save(w, base, path, { title = 3 }) end)
      assert.has_error(function() keel.persist.save(w, base, path, { nested = {} }) end)
      assert.has_error(function() keel.persist.load(w) end)
    end)
  end)

  describe(".info()", function()
    it("reads the slot details with the game's own fields", function()
      local w = fresh()
      local base = keel.persist.baseline(w)
      assert.is_true(keel.persist.save(w, base, path, {
        title = "Chapter \"2\"", play_seconds = 310.5, level = 3, hard = true, code = "0042", ratio = 0.5,
      }))
      local info = keel.persist.info(path)
      assert.are.equal("Chapter \"2\"", info.title)
      assert.are.equal(310.5, info.play_seconds)
      assert.is_true(info.saved_at > 1600000000)
      assert.are.equal(3, info.level)
      assert.is_true(math.type(info.level) == "integer")
      assert.is_true(info.hard)
      assert.are.equal("0042", info.code)
      assert.are.equal(0.5, info.ratio)
    end)

    it("returns nil, err for a file that is not a save", function()
      local f = assert(io.open(path, "wb"))
      f:write("not a save at all")
      f:close()
      local info, err = keel.persist.info(path)
      assert.is_nil(info)
      assert.are.equal("ParseError", err.code)
    end)
  end)
end)
