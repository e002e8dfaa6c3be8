-- save_text_spec.lua — save games as text (design/saving.md): keel.persist.dump / load_text,
-- `keel dump SLOT.save`, `keel cook` of the text back to the same bytes, `keel fmt --check`, and
-- hand edits refused whole with file:line:col.
local keel = require "keel"

local H = require "helper"
local slurp, spit, tmpdir, rmrf = H.slurp, H.spit, H.tmpdir, H.rmrf
local q = H.shell_quote
local key = H.key_maker("save_text")

local SCENE = H.persist_scene("c", "Text")

local function fresh()
  local w, err = keel.parse(SCENE)
  assert(w, err and tostring(err))
  return w
end

local INFO = { title = "Chapter 2", play_seconds = 310.5, saved_at = 1700000000, level = 3, hero = "Bob" }

local function play(w)
  local player = w:find("Player")
  local s = w:spawn{ name = "Spawned", parent = player, components = { { "core:transform", position = { 1, 2, 3 } } } }
  w:find("Doomed"):destroy()
  player:get("core:transform").position = { 5, 6, 7 }
  player:remove("core:audio_source", 0)
  local crate = w:find("Crate")
  crate.parent = s
  crate.name = "Crate (moved)"
  crate.enabled = false
  return s
end

describe("save games as text", function()
  local dir, bin
  before_each(function() dir = tmpdir(); bin = H.find_keel() end)
  after_each(function() rmrf(dir) end)

  it("keel.persist.dump: keel_save, details, spawned, destroyed, changed (only what differs)", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    local s = play(w)
    local text = assert(keel.persist.dump(w, base, INFO))
    assert.are.equal("keel_save: 1\n", text:sub(1, 13))
    assert.truthy(text:find("\ndetails:\n  title: Chapter 2\n  saved_at: 1700000000\n  play_seconds: 310.5\n" ..
      "  scene: 5a5e0000-0000-4000-8000-0000000000ac\n  fields:\n", 1, true), text)
    assert.truthy(text:find("    level: 3\n", 1, true))
    assert.truthy(text:find('    hero: "Bob"\n', 1, true))
    assert.truthy(text:find("\nspawned:\n- uuid: " .. tostring(s.uuid) .. "\n  name: Spawned\n  parent: " ..
      "00000000-0000-4000-8000-0000000000c1\n  components:\n  - kind: core:transform\n", 1, true), text)
    assert.truthy(text:find("\ndestroyed:\n- 00000000-0000-4000-8000-0000000000c2\n", 1, true))
    assert.truthy(text:find("\nchanged:\n  00000000-0000-4000-8000-0000000000c1:\n    removed:\n    - core:audio_source[0]\n" ..
      "    components:\n      core:transform[0]:\n        version: 1\n        fields:\n          position: [5, 6, 7]\n", 1, true), text)
    assert.truthy(text:find("  00000000-0000-4000-8000-0000000000c3:\n    name: Crate (moved)\n    enabled: false\n" ..
      "    parent: " .. tostring(s.uuid) .. "\n", 1, true), text)
    assert.is_nil(text:find("rotation: [0, 0, 0, 1]\n        ", 1, true)) -- unchanged fields are not listed
  end)

  it("runtime fields are part of changed", function()
    local k = key("rt")
    keel.kind{ key = k, fields = { { "hp", "int", default = 5 }, { "countdown", "float", default = 0, runtime = true } } }
    local w = keel.world("RT")
    local e = w:spawn{ name = "E", components = { { k } } }
    local base = keel.persist.baseline(w)
    e:get(k).countdown = 2.5
    local text = assert(keel.persist.dump(w, base))
    assert.truthy(text:find("fields:\n          countdown: 2.5\n", 1, true), text)
  end)

  it("a slot dumped to text and cooked back is byte-identical; the text is what persist.dump gives", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    play(w)
    local slot, txt, back = dir .. "/a.save", dir .. "/a.yaml", dir .. "/back.save"
    assert.is_true(keel.persist.save(w, base, slot, INFO))
    local code, out, err = H.run_keel(bin, "dump " .. q(slot))
    assert.are.equal(0, code, err)
    assert.are.equal(keel.persist.dump(w, base, INFO), out)
    spit(txt, out)
    code, _, err = H.run_keel(bin, "cook " .. q(txt) .. " -o " .. q(back))
    assert.are.equal(0, code, err)
    assert.are.equal(slurp(slot), slurp(back))
    code, _, err = H.run_keel(bin, "fmt --check " .. q(txt))
    assert.are.equal(0, code, err) -- canonical like a scene
  end)

  it("an unknown component keeps its body as written through the text and back", function()
    local text = SCENE .. [[
  - uuid: 00000000-0000-4000-8000-0000000000c8
    name: Mod
    components:
      - kind: mod:winch
        version: 3
        slot: 0
        body:
          rope: {length: 12, 'knots': [1, 2]}
]]
    local w = assert(keel.parse(text))
    local base = keel.persist.baseline(w)
    w:find("Mod"):duplicate()
    local slot, txt, back = dir .. "/m.save", dir .. "/m.yaml", dir .. "/m2.save"
    assert.is_true(keel.persist.save(w, base, slot, INFO))
    local code, out, err = H.run_keel(bin, "dump " .. q(slot))
    assert.are.equal(0, code, err)
    assert.truthy(out:find("unknown: true\n    body:\n      rope: {length: 12, 'knots': [1, 2]}\n", 1, true), out)
    spit(txt, out)
    code, _, err = H.run_keel(bin, "cook " .. q(txt) .. " -o " .. q(back))
    assert.are.equal(0, code, err)
    assert.are.equal(slurp(slot), slurp(back))
    local w2 = assert(keel.parse(text))
    assert.is_true(keel.persist.load_text(w2, out))
    assert.are.equal(w:dump(), w2:dump())
  end)

  it("keel.persist.load_text applies as keel.persist.load does", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    play(w)
    local text = keel.persist.dump(w, base, INFO)
    local w2 = fresh()
    assert.is_true(keel.persist.load_text(w2, text))
    assert.are.equal(w:dump(), w2:dump())
  end)

  it("a hand edit loads (a changed field value), and fmt puts an edited layout back to canonical", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    play(w)
    local text = keel.persist.dump(w, base, INFO):gsub("position: %[5, 6, 7%]", "position: [8, 8, 8]")
    local w2 = fresh()
    assert.is_true(keel.persist.load_text(w2, text))
    assert.are.same({ 8, 8, 8 }, w2:find("Player"):get("core:transform").position)
    local txt = dir .. "/edited.yaml"
    spit(txt, (text:gsub("title: Chapter 2", "title: 'Chapter 2'")))
    local code, out = H.run_keel(bin, "fmt --check " .. q(txt))
    assert.are.equal(1, code)
    assert.truthy(out:find("title", 1, true), out)
    code = H.run_keel(bin, "fmt " .. q(txt))
    assert.are.equal(0, code)
    assert.are.equal(text, slurp(txt))
  end)

  it("a bad edit is refused whole, with file:line:col and the path", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    play(w)
    local text = keel.persist.dump(w, base, INFO)
    local bad = text:gsub("\ndestroyed:\n%- 00000000%-0000%-4000%-8000%-0000000000c2\n", "\ndestroyed:\n- not-a-uuid\n")
    local line = 0
    for l in (bad .. "\n"):gmatch("(.-)\n") do
      line = line + 1
      if l == "- not-a-uuid" then break end
    end
    local w2 = fresh()
    local before = w2:dump()
    local ok, err = keel.persist.load_text(w2, bad, "slot.yaml")
    assert.is_nil(ok)
    H.assert_error("ParseError", err)
    local d = err.diagnostics[1]
    assert.are.equal("slot.yaml", d.file)
    assert.are.equal(line, d.line)
    assert.are.equal(3, d.col)
    assert.are.equal("destroyed[0]", d.path)
    assert.are.equal(before, w2:dump()) -- nothing applied
    -- the program: FILE:LINE:COL, exit 1, nothing written
    local txt, out = dir .. "/bad.yaml", dir .. "/bad.save"
    spit(txt, bad)
    local code, _, stderr = H.run_keel(bin, "cook " .. q(txt) .. " -o " .. q(out))
    assert.are.equal(1, code)
    assert.truthy(stderr:find(txt .. ":" .. line .. ":3: error: ParseError", 1, true), stderr)
    assert.is_false(H.file_exists(out))
  end)

  it("misspelt keys and malformed kind[slot] are refused; so is a save that does not fit the world", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    play(w)
    local text = keel.persist.dump(w, base, INFO)
    for _, edit in ipairs{
      { "    removed:\n", "    remvoed:\n" },
      { "core:audio_source%[0%]", "core:audio_source" },
      { "keel_save: 1", "keel_save: 7" },
      { "play_seconds: 310.5", "play_seconds: -1" },
    } do
      local bad = text:gsub(edit[1], edit[2], 1)
      assert.are_not.equal(text, bad, edit[1])
      local w2 = fresh()
      local ok, err = keel.persist.load_text(w2, bad)
      assert.is_nil(ok, edit[2])
      assert.are.equal("ParseError", err.code, edit[2])
      assert.truthy(err.diagnostics[1].line > 0)
    end
    -- well-formed, but of a world that lacks what it names: refused as persist.load refuses
    local other = fresh()
    other:find("Crate"):destroy()
    local before = other:dump()
    local ok, err = keel.persist.load_text(other, text)
    assert.is_nil(ok)
    assert.are.equal("NotFound", err.code)
    assert.are.equal(before, other:dump())
  end)

  it("two save games of the same baseline diff line by line", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    play(w)
    local a = keel.persist.dump(w, base, INFO)
    w:find("Player"):get("core:transform").position = { 5, 6, 9 }
    local b = keel.persist.dump(w, base, INFO)
    local la, lb = {}, {}
    for l in a:gmatch("[^\n]*\n") do la[#la + 1] = l end
    for l in b:gmatch("[^\n]*\n") do lb[#lb + 1] = l end
    assert.are.equal(#la, #lb)
    local differ = {}
    for i = 1, #la do if la[i] ~= lb[i] then differ[#differ + 1] = lb[i] end end
    assert.are.same({ "          position: [5, 6, 9]\n" }, differ)
  end)

  it("keel dump of a damaged slot is refused", function()
    local slot = dir .. "/x.save"
    local w = fresh()
    assert.is_true(keel.persist.save(w, keel.persist.baseline(w), slot))
    local bytes = slurp(slot)
    spit(slot, bytes:sub(1, #bytes - 3) .. "zzz")
    local code, out, err = H.run_keel(bin, "dump " .. q(slot))
    assert.are.equal(1, code)
    assert.are.equal("", out)
    assert.truthy(err:find("ParseError", 1, true), err)
  end)
end)
