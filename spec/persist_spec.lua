-- persist_spec.lua — keel.persist: baseline, save, load and info from Lua.
local keel = require "keel"

local H = require "helper"
local ROOT, slurp, spit, tmpdir, rmrf = H.ROOT, H.slurp, H.spit, H.tmpdir, H.rmrf
local raises, assert_error = H.raises, H.assert_error
local doc, entity_text, comp_text, U1 = H.doc, H.entity_text, H.comp_text, H.U1
local SCENES = ROOT .. "/scenes"
local key = H.key_maker("persist")

local SCENE = H.persist_scene("a", "Spec")

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

  -- ---------------------------------------------------------------------------
  describe("with the DESIGN.md example scene", function()
    local DESIGN_SCENE = ROOT .. "/tests/fixtures/good_design_example.yaml"

    -- Loads DESIGN_SCENE, moves the Player to `position` and saves that to `path`; returns the world and its baseline.
    local function save_moved(path, position)
      local w = assert(keel.load(DESIGN_SCENE))
      local base = keel.persist.baseline(w)
      w:find("Player"):get("core:transform").position = position
      assert(keel.persist.save(w, base, path))
      return w, base
    end

    it("saves a difference from the baseline and restores it over a freshly loaded scene", function()
      local d = tmpdir()
      local w = assert(keel.load(DESIGN_SCENE))
      local base = keel.persist.baseline(w)
      local p = w:find("Player")
      p:get("core:transform").position = { 5, 6, 7 }
      p:remove("core:audio_source", 2)
      p:add("core:camera", { fov = 90 })
      local s = w:spawn{ name = "Spawned", components = { "core:transform" } }
      local gone = w:spawn("Gone")
      gone:destroy()
      local child_uuid
      for e in w:entities() do if e.name ~= "Player" and e.name ~= "Spawned" then child_uuid = child_uuid or e.uuid end end
      if child_uuid then w:find(child_uuid):destroy() end
      assert.is_true(keel.persist.save(w, base, d .. "/slot1.sav", { title = "Chapter 2", play_seconds = 310 }))
      local info = keel.persist.info(d .. "/slot1.sav")
      assert.are.equal("Chapter 2", info.title)
      assert.are.equal(310, info.play_seconds)
      local fresh = assert(keel.load(DESIGN_SCENE))
      assert.is_true(keel.persist.load(fresh, d .. "/slot1.sav"))
      local fp = fresh:find("Player")
      assert.are.same({ 5, 6, 7 }, fp:get("core:transform").position)
      assert.is_nil(fp:get("core:audio_source", 2))
      assert.are.equal(90, fp:get("core:camera").fov)
      assert.truthy(fresh:find(s.uuid))
      assert.is_true(fresh:find(s.uuid):has("core:transform"))
      if child_uuid then assert.is_nil(fresh:find(child_uuid)) end
      assert.are.equal(w:count(), fresh:count())
      -- the baseline is a value usable with any world loaded from that scene
      local other = assert(keel.load(DESIGN_SCENE))
      assert.is_true(keel.persist.save(other, base, d .. "/slot2.sav"))
      rmrf(d)
    end)

    it("writes neither nosave components nor transient fields to a save game", function()
      local d = tmpdir()
      local ns, tr = key("ns"), key("tr")
      keel.kind{ key = ns, nosave = true, fields = { { "x", "int" } } }
      keel.kind{ key = tr, fields = { { "x", "int" }, { "t", "int", transient = true } } }
      local w = assert(keel.load(DESIGN_SCENE))
      local base = keel.persist.baseline(w)
      local p = w:find("Player")
      p:add(ns, { x = 5 })
      p:add(tr, { x = 1, t = 9 })
      assert(keel.persist.save(w, base, d .. "/n.sav"))
      local fresh = assert(keel.load(DESIGN_SCENE))
      assert.is_true(keel.persist.load(fresh, d .. "/n.sav"))
      local fp = fresh:find("Player")
      assert.is_false(fp:has(ns))
      assert.are.equal(1, fp:get(tr).x)
      assert.are.equal(0, fp:get(tr).t)
      rmrf(d)
    end)

    it("keeps game fields in the slot details and migrates saved components as for scenes", function()
      local d = tmpdir()
      local k = key("saved")
      keel.kind{ key = k, fields = { { "kmh", "float" } } }
      local w = assert(keel.parse(doc(entity_text(U1, "E", comp_text(k, 1, 0, "          kmh: 1")))))
      local text = w:dump()
      local base = keel.persist.baseline(w)
      w:find(U1):get(k).kmh = 36
      assert(keel.persist.save(w, base, d .. "/g.sav", { title = "T", play_seconds = 5, chapter = 2, hero = "Ann" }))
      local info = keel.persist.info(d .. "/g.sav")
      assert.are.equal("T", info.title)
      assert.are.equal(2, info.chapter)
      assert.are.equal("Ann", info.hero)
      local woke = key("woke")
      keel.kind{ key = woke, fields = { { "n", "int" } } }
      w:spawn{ name = "New", components = { { woke, n = 4 } } }
      assert(keel.persist.save(w, base, d .. "/g2.sav"))
      keel.kind{ key = k, version = 2, fields = { { "ms", "float" } },
        migrate = { [2] = function(body) body.ms = body.kmh / 3.6; body.kmh = nil; return body end } }
      local fresh = assert(keel.parse(text))
      assert.is_true(keel.persist.load(fresh, d .. "/g.sav"))
      assert.are.equal(10, fresh:find(U1):get(k).ms)
      local awoken = {}
      keel.kind{ key = woke, fields = { { "n", "int" } }, awake = function(self) awoken[#awoken + 1] = self.n end }
      local fresh2 = assert(keel.parse(text))
      local ok, err = keel.persist.load(fresh2, d .. "/g2.sav")
      assert.is_true(ok, tostring(err))
      assert.are.same({ 4 }, awoken)
      rmrf(d)
    end)

    it("refuses a save of another scene, a missing slot file and an unwritable path", function()
      local d = tmpdir()
      local w, base = save_moved(d .. "/x.sav", { 1, 1, 1 })
      local other = assert(keel.load(ROOT .. "/scenes/demo.yaml"))
      local before = other:dump()
      local ok, err = keel.persist.load(other, d .. "/x.sav")
      assert.is_nil(ok)
      assert.truthy(err.code)
      assert.are.equal(before, other:dump())
      local none, err2 = keel.persist.info(d .. "/absent.sav")
      assert.is_nil(none)
      assert.are.equal("IOError", err2.code)
      assert.truthy(err2.message:find(d .. "/absent.sav", 1, true))
      local no, err3 = keel.persist.save(w, base, d .. "/missing/x.sav")
      assert.is_nil(no)
      assert.are.equal("IOError", err3.code)
      rmrf(d)
    end)

    it("refuses a damaged file with an error, never half-applied", function()
      local d = tmpdir()
      save_moved(d .. "/s.sav", { 9, 9, 9 })
      local bytes = slurp(d .. "/s.sav")
      spit(d .. "/bad.sav", bytes:sub(1, #bytes - 10) .. string.rep("\0", 10))
      local fresh = assert(keel.load(DESIGN_SCENE))
      local r = fresh.revision
      local ok, err = keel.persist.load(fresh, d .. "/bad.sav")
      assert.is_nil(ok)
      assert.truthy(err.code)
      assert.are.equal(r, fresh.revision)
      assert.are.same({ 0, 1.5, 0 }, fresh:find("Player"):get("core:transform").position)
      local none, err2 = keel.persist.load(fresh, d .. "/absent.sav")
      assert.is_nil(none)
      assert.truthy(err2.code)
      rmrf(d)
    end)
  end)

  describe("save games of the bundled scenes", function()
    local dir
    before_each(function() dir = tmpdir() end)
    after_each(function() rmrf(dir) end)

    it("save, info and load over a fresh baseline restore the state", function()
      local src = SCENES .. "/unknown_kind.yaml"
      local w = assert(keel.load(src))
      local base = keel.persist.baseline(w)
      local dock, crane = w:find("Dock"), w:find("Crane")
      w:find("Boat"):destroy()
      w:spawn{ name = "New", parent = dock, components = { { "core:transform", position = { 1, 2, 3 } }, "core:audio_source" } }
      crane:remove("mod:winch", 2)
      dock:add("core:audio_source", { volume = 0.3 })
      dock:get("core:transform").position = { 7, 8, 9 }
      crane.name = "Crane2"
      crane.enabled = false
      w.root:get("core:world_settings").exposure = 2
      local path = dir .. "/slot.save"
      assert.is_true(keel.persist.save(w, base, path, { title = "Chapter 2", play_seconds = 310, chapter = 2 }))
      local info = keel.persist.info(path)
      assert.are.equal("Chapter 2", info.title)
      assert.are.equal(310, info.play_seconds)
      assert.are.equal(2, info.chapter)
      local w2 = assert(keel.load(src))
      assert.is_true(keel.persist.load(w2, path))
      assert.are.equal(w:dump(), w2:dump())
    end)

    it("the baseline is a value usable with any world loaded from that scene", function()
      local src = SCENES .. "/demo.yaml"
      local base = keel.persist.baseline(assert(keel.load(src)))
      local w = assert(keel.load(src))
      w:run(30, 1 / 60)
      assert.is_true(keel.persist.save(w, base, dir .. "/s", {}))
      local w2 = assert(keel.load(src))
      assert.is_true(keel.persist.load(w2, dir .. "/s"))
      assert.are.equal(w:dump(), w2:dump())
    end)

    it("missing, damaged and truncated files are nil, err and change nothing", function()
      local src = SCENES .. "/demo.yaml"
      local w = assert(keel.load(src))
      local base = keel.persist.baseline(w)
      w:run(30, 1 / 60)
      local path = dir .. "/s"
      assert.is_true(keel.persist.save(w, base, path, { title = "x" }))
      local ok, err = keel.persist.load(w, dir .. "/none")
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
      ok, err = keel.persist.info(dir .. "/none")
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
      ok, err = keel.persist.save(w, base, "/nonexistent/dir/s", {})
      assert.is_nil(ok)
      assert.are.equal("IOError", err.code)
      local s = slurp(path)
      local k = #s - 10
      spit(dir .. "/dmg", s:sub(1, k - 1) .. string.char((s:byte(k) + 1) % 256) .. s:sub(k + 1))
      spit(dir .. "/trunc", s:sub(1, #s // 2))
      for _, bad in ipairs { "dmg", "trunc" } do
        local fresh = assert(keel.load(src))
        local before = fresh:dump()
        ok, err = keel.persist.load(fresh, dir .. "/" .. bad)
        assert.is_nil(ok)
        assert.are.equal("table", type(err))
        assert.are.equal("string", type(err.code))
        assert.are.equal(before, fresh:dump())
      end
      assert.are.equal("KEELSAVE", s:sub(1, 8))
      -- the slot details stay readable without the (damaged) state
      assert.are.equal("x", keel.persist.info(dir .. "/dmg").title)
    end)
  end)

  describe("argument errors", function()
    local w, base, path
    before_each(function()
      w = keel.world("P")
      base = keel.persist.baseline(w)
      path = os.tmpname() .. ".sav"
    end)
    after_each(function() os.remove(path) end)

    it("are InvalidArgument error objects, as baseline's are", function()
      assert_error("InvalidArgument", raises(keel.persist.baseline, nil))
      assert_error("InvalidArgument", raises(keel.persist.save, w, nil, "x"))
      assert_error("InvalidArgument", raises(keel.persist.save, w, {}, "x"))
      assert_error("InvalidArgument", raises(keel.persist.save, nil, base, "x"))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, nil))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, "p", 5))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, "p", { title = 5 }))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, "p", { play_seconds = "x" }))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, "p", { saved_at = 1.5 }))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, "p", { [1] = "x" }))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, "p", { nested = {} }))
      assert_error("InvalidArgument", raises(keel.persist.save, w, base, "p", { speed = 0 / 0 }))
      assert_error("InvalidArgument", raises(keel.persist.load, w, nil))
      assert_error("InvalidArgument", raises(keel.persist.load, nil, path))
      assert_error("InvalidArgument", raises(keel.persist.info, nil))
      assert_error("InvalidArgument", raises(keel.persist.info, {}))
    end)

    it("name the argument in the message", function()
      local err = raises(keel.persist.save, w, nil, "x")
      assert.truthy(err.message:find("#2", 1, true), err.message)
      assert.truthy(err.message:find("keel.Baseline", 1, true), err.message)
      err = raises(keel.persist.save, w, base, "p", { title = 5 })
      assert.truthy(err.message:find("title", 1, true), err.message)
    end)

    it("refuse a freed baseline with an error object", function()
      base:free()
      local err = raises(keel.persist.save, w, base, path)
      assert.are.equal("table", type(err))
      assert.truthy(err.message:find("freed", 1, true), err.message)
      assert_error("InvalidArgument", raises(base.free, 5))
    end)

    it("leave the good calls working", function()
      assert.is_true(keel.persist.save(w, base, path, { title = "T", play_seconds = 3, lives = 2 }))
      local info = keel.persist.info(path)
      assert.are.equal("T", info.title)
      assert.are.equal(2, info.lives)
      assert.is_true(keel.persist.load(w, path))
    end)
  end)

  describe("inside a callback transaction of the world", function()
    it("save and baseline refuse with InvalidOperation, and nothing is written", function()
      local w = fresh()
      local base = keel.persist.baseline(w)
      local errs = {}
      local k = key("refuse")
      keel.kind{ key = k, fields = {}, update = function(self, e)
        w:find("Crate").name = "Rolled back"
        for _, f in ipairs{ function() return keel.persist.save(w, base, path) end,
          function() return keel.persist.baseline(w) end } do
          local ok, err = pcall(f)
          errs[#errs + 1] = not ok and err or "no error"
        end
        error("then it fails")
      end }
      w:find("Player"):add(k)
      w:step(1 / 60)
      assert.are.equal(2, #errs)
      assert.are.equal("InvalidOperation", errs[1].code)
      assert.are.equal("keel.persist.save refuses while a callback transaction is open", errs[1].message)
      assert.are.equal("InvalidOperation", errs[2].code)
      assert.are.equal("keel.persist.baseline refuses while a callback transaction is open", errs[2].message)
      assert.is_nil(io.open(path, "rb"))
      assert.truthy(w:find("Crate"))
      assert.is_true(keel.persist.save(w, keel.persist.baseline(w), path)) -- committed state: fine
    end)
  end)
end)
