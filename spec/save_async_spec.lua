-- save_async_spec.lua — saves off the frame (design/saving.md): w:save_async,
-- keel.persist.save_async and keel.Job. Each `it` names the sentence of the contract it checks.
local keel = require "keel"

local H = require "helper"
local slurp, tmpdir, rmrf = H.slurp, H.tmpdir, H.rmrf
local key = H.key_maker("save_async")

local SCENE = [[
keel: 1
scene:
  uuid: 5a5e0000-0000-4000-8000-0000000000ab
  name: Async
entities:
  - uuid: 00000000-0000-4000-8000-0000000000b1
    name: Player
    components:
      - kind: core:transform
        version: 1
        slot: 0
        body:
          position: [0, 1, 0]
  - uuid: 00000000-0000-4000-8000-0000000000b2
    name: Doomed
    components: []
]]

local function fresh()
  local w, err = keel.parse(SCENE)
  assert(w, err and tostring(err))
  return w
end

-- A world big enough that its worker is still writing when the next call comes (tens of
-- milliseconds of encoding, against microseconds between two calls).
local function big(n)
  local w = fresh()
  for i = 1, n or 20000 do
    w:spawn{ name = "E" .. i, components = { { "core:transform", position = { i, i * 2, 0.5 } } } }
  end
  return w
end

local function churn(w)
  for e in w:entities() do
    if e.name ~= "Player" then e:destroy() end
  end
  for i = 1, 200 do w:spawn{ name = "After" .. i } end
  w:find("Player"):get("core:transform").position = { 9, 9, 9 }
  w.name = "Renamed after the call"
end

describe("w:save_async", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmrf(dir) end)

  it("returns a keel.Job whose path is the path given, and writes what w:save writes", function()
    local w = fresh()
    local job = w:save_async(dir .. "/a.yaml")
    assert.are.equal("userdata", type(job))
    assert.truthy(tostring(job):match("^keel.Job"))
    assert.are.equal(dir .. "/a.yaml", job.path)
    assert.is_true(job:wait())
    assert.is_true(w:save(dir .. "/b.yaml"))
    assert.are.equal(slurp(dir .. "/b.yaml"), slurp(dir .. "/a.yaml"))
  end)

  it("done() is nil while writing, then true, and wait() returns what done() returns", function()
    local w = big()
    local job = w:save_async(dir .. "/big.yaml")
    local first = job:done()
    assert.is_true(first == nil or first == true)
    assert.is_true(job:wait())
    assert.is_true(job:done())
    assert.is_true(job:done()) -- the outcome stays
    assert.is_true(job:wait())
  end)

  it("the file holds the world as it was at the call, though the world changes heavily right after", function()
    local w = big(2000)
    local want = w:dump()
    local job = w:save_async(dir .. "/at_call.yaml")
    churn(w)
    w:step(1 / 60)
    assert.is_true(job:wait())
    assert.are.equal(want, slurp(dir .. "/at_call.yaml"))
    assert.are_not.equal(want, w:dump())
    local back = assert(keel.load(dir .. "/at_call.yaml"))
    assert.are.equal(2002, #H.entities(back))
  end)

  it("saves after the first (the world's capture memory reused) hold the world at their own call", function()
    local w = big(2000)
    for round = 1, 3 do
      local want = w:dump()
      local job = w:save_async(dir .. "/again.yaml")
      churn(w)
      for i = 1, 3000 * round do -- each capture bigger than the last: the kept memory grows
        w:spawn{ name = "More" .. i, components = { { "core:transform", position = { i, round, 0 } } } }
      end
      assert.is_true(job:wait())
      assert.are.equal(want, slurp(dir .. "/again.yaml"))
    end
  end)

  it("an unwritable folder: the call returns a job, and the error comes from done() and wait()", function()
    local w = fresh()
    local path = dir .. "/no/such/folder/x.yaml"
    local _, sync_err = w:save(path)
    local job = w:save_async(path)
    assert.are.equal("userdata", type(job))
    local ok, err = job:wait()
    assert.is_false(ok)
    H.assert_error("IOError", err)
    assert.are.equal(sync_err.code, err.code)
    assert.are.equal(sync_err.message, err.message) -- the error object w:save returns
    local ok2, err2 = job:done()
    assert.is_false(ok2)
    assert.are.equal(err.message, err2.message)
  end)

  it("a job's errors never raise in another call", function()
    local w = fresh()
    local job = w:save_async(dir .. "/missing/x.yaml")
    -- other calls go on, before and after the failure is done
    w:step(1 / 60)
    assert.is_true(w:save(dir .. "/fine.yaml"))
    local other = w:save_async(dir .. "/fine2.yaml")
    assert.is_true(other:wait())
    assert.is_false((job:wait()))
    w:step(1 / 60)
    assert.is_true(w:save_async(dir .. "/fine3.yaml"):wait())
    assert.is_true(w:close())
  end)

  it("jobs on different paths run at once", function()
    local w = big(2000)
    local want = w:dump()
    local a = w:save_async(dir .. "/one.yaml")
    local b = w:save_async(dir .. "/two.yaml")
    assert.truthy(a, "the second path is not refused")
    assert.truthy(b)
    assert.is_true(a:wait())
    assert.is_true(b:wait())
    assert.are.equal(want, slurp(dir .. "/one.yaml"))
    assert.are.equal(want, slurp(dir .. "/two.yaml"))
  end)

  it("a second save to a path with a job still pending is InvalidOperation, and writes nothing", function()
    local w = big()
    local path = dir .. "/pending.yaml"
    local base = keel.persist.baseline(fresh()) -- the same scene, small: quick to take
    local job = w:save_async(path)
    local still = job:done()
    local again, err = w:save_async(path)
    local sync, err2 = w:save(path)
    local p, err3 = keel.persist.save_async(w, base, path)
    assert.is_nil(still, "the first job is still writing (the world is big)")
    assert.is_nil(again)
    H.assert_error("InvalidOperation", err)
    assert.truthy(err.message:find("pending", 1, true))
    assert.is_nil(sync)
    H.assert_error("InvalidOperation", err2)
    assert.is_nil(p)
    H.assert_error("InvalidOperation", err3)
    -- the same file by another spelling is the same path
    local again2, err4 = w:save_async(dir .. "/../" .. dir:match("[^/]+$") .. "/pending.yaml")
    assert.is_nil(again2)
    H.assert_error("InvalidOperation", err4)
    assert.is_true(job:wait())
    assert.is_true(w:save_async(path):wait()) -- free again once done
  end)

  it("w:close() waits for the world's pending jobs", function()
    local w = big()
    local want = w:dump()
    local job = w:save_async(dir .. "/closing.yaml")
    assert.is_true(w:close())
    assert.is_true(job:done()) -- done already: close waited
    assert.are.equal(want, slurp(dir .. "/closing.yaml"))
  end)

  it("a job collected while writing still finishes its file", function()
    local w = big(2000)
    local want = w:dump()
    w:save_async(dir .. "/dropped.yaml")
    collectgarbage()
    collectgarbage()
    assert.is_true(w:close()) -- waits for it
    assert.are.equal(want, slurp(dir .. "/dropped.yaml"))
  end)

  it("refuses inside a callback transaction, as w:save does (raised, nothing written)", function()
    local w = fresh()
    local k = key("cb")
    local seen
    keel.kind{ key = k, fields = {}, update = function()
      local ok, err = pcall(function() return w:save_async(dir .. "/cb.yaml") end)
      seen = not ok and err or "no error"
    end }
    w:find("Player"):add(k)
    w:step(1 / 60)
    assert.are.equal("table", type(seen))
    assert.are.equal("InvalidOperation", seen.code)
    assert.are.equal("w:save_async refuses while a callback transaction is open", seen.message)
    assert.is_false(H.file_exists(dir .. "/cb.yaml"))
  end)

  it("refuses while entities are lifted, as w:save does (nil, err; no job)", function()
    local w = fresh()
    local lift = w:lift(w:find("Doomed"))
    local job, err = w:save_async(dir .. "/lifted.yaml")
    assert.is_nil(job)
    H.assert_error("InvalidOperation", err)
    assert.truthy(err.message:find("lifted", 1, true))
    lift:restore()
    assert.is_true(w:save_async(dir .. "/lifted.yaml"):wait())
  end)

  it("argument errors raise at the call, as w:save's do", function()
    local w = fresh()
    H.fails("InvalidArgument", function() w:save_async(42) end)
    H.fails("InvalidArgument", function() w:save_async() end) -- no w.path
    H.fails("InvalidArgument", function() w:save_async(dir .. "/x.yaml", { bogus = true }) end)
  end)

  it("without a path saves to w.path and moves the checkpoint to the revision of the call", function()
    local path = dir .. "/own.yaml"
    assert(fresh():save(path))
    local w = assert(keel.load(path))
    w:find("Player").name = "Hero"
    local at_call = w.revision
    local job = w:save_async()
    assert.is_true(w.dirty) -- not before the job is seen done
    w:find("Hero").name = "Hero again" -- after the call: not in the file
    assert.is_true(job:wait())
    assert.are.equal(at_call, w.saved_revision)
    assert.is_true(w.dirty)
    assert.truthy(slurp(path):find("name: Hero\n", 1, true))
  end)
end)

describe("keel.persist.save_async", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmrf(dir) end)

  it("writes the slot keel.persist.save writes, byte for byte", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    w:find("Doomed"):destroy()
    w:spawn{ name = "New", components = { { "core:transform", position = { 1, 2, 3 } } } }
    local info = { title = "T", play_seconds = 12.5, saved_at = 1700000000, level = 3 }
    local job = keel.persist.save_async(w, base, dir .. "/a.save", info)
    assert.are.equal(dir .. "/a.save", job.path)
    assert.is_true(job:wait())
    assert.is_true(keel.persist.save(w, base, dir .. "/b.save", info))
    assert.are.equal(slurp(dir .. "/b.save"), slurp(dir .. "/a.save"))
    assert.are.equal(3, keel.persist.info(dir .. "/a.save").level)
  end)

  it("the slot holds the world at the call, though 20% of it moves right after", function()
    local text = big(2000):dump()
    local w = assert(keel.parse(text))
    local base = keel.persist.baseline(w)
    local n = 0
    for e in w:entities() do
      n = n + 1
      if n % 5 == 0 then e:get("core:transform").position = { -1, -1, -1 } end
    end
    local want = w:dump()
    local job = keel.persist.save_async(w, base, dir .. "/moved.save")
    churn(w)
    assert.is_true(job:wait())
    local back = assert(keel.parse(text))
    assert.is_true(keel.persist.load(back, dir .. "/moved.save"))
    assert.are.equal(want, back:dump())
  end)

  it("the baseline may be freed right after the call", function()
    local w = fresh()
    local base = keel.persist.baseline(w)
    w:find("Doomed"):destroy()
    local job = keel.persist.save_async(w, base, dir .. "/freed.save")
    base:free()
    collectgarbage()
    assert.is_true(job:wait())
    local back = fresh()
    assert.is_true(keel.persist.load(back, dir .. "/freed.save"))
    assert.is_nil(back:find("Doomed"))
  end)

  it("refuses at the call as keel.persist.save does", function()
    local w = fresh()
    local other = keel.world("Other")
    local base = keel.persist.baseline(other)
    local job, err = keel.persist.save_async(w, base, dir .. "/x.save")
    assert.is_nil(job)
    H.assert_error("InvalidArgument", err)
    local lift = w:lift(w:find("Doomed"))
    local job2, err2 = keel.persist.save_async(w, keel.persist.baseline(fresh()), dir .. "/x.save")
    assert.is_nil(job2)
    H.assert_error("InvalidOperation", err2)
    lift:restore()
    H.fails("InvalidArgument", function() keel.persist.save_async(w, keel.persist.baseline(w), dir .. "/x.save", { title = 1 }) end)
    assert.is_false(H.file_exists(dir .. "/x.save"))
  end)

  it("an unwritable folder's error comes from done()", function()
    local w = fresh()
    local job = keel.persist.save_async(w, keel.persist.baseline(w), dir .. "/none/x.save")
    local ok, err
    repeat ok, err = job:done() until ok ~= nil
    assert.is_false(ok)
    H.assert_error("IOError", err)
  end)

  it("a kind declared while a job writes waits for it, and the file is whole", function()
    local w = big()
    local want = w:dump()
    local job = w:save_async(dir .. "/decl.yaml")
    keel.kind{ key = key("late"), fields = { { "hp", "int", default = 1 } } }
    assert.is_true(job:done()) -- the declaration waited for the worker
    assert.are.equal(want, slurp(dir .. "/decl.yaml"))
  end)
end)

describe("keel run --autosave SECONDS PATH", function()
  local dir, bin
  before_each(function() dir = tmpdir(); bin = H.find_keel() end)
  after_each(function() rmrf(dir) end)
  local q = H.shell_quote

  it("writes a slot with keel.persist.save_async every SECONDS of world time", function()
    local scene = dir .. "/s.yaml"
    H.spit(scene, SCENE)
    local slot = dir .. "/auto.save"
    local code, out, err = H.run_keel(bin, "run " .. q(scene) .. " --frames 240 --autosave 1 " .. q(slot))
    assert.are.equal(0, code, err)
    local n = tonumber(out:match("autosave: (%d+) saves? to"))
    assert.truthy(n and n >= 1 and n <= 4, out)
    local info = keel.persist.info(slot)
    assert.are.equal(scene, info.title)
    assert.truthy(info.play_seconds >= 1 and info.play_seconds <= 4)
    assert.is_true(keel.persist.load(fresh(), slot)) -- a whole slot of this scene
  end)

  it("prints the last job's failure and the run goes on", function()
    local scene = dir .. "/s.yaml"
    H.spit(scene, SCENE)
    local code, out, err = H.run_keel(bin, "run " .. q(scene) .. " --frames 120 --autosave 0.5 " .. q(dir .. "/no/x.save"))
    assert.are.equal(0, code)
    assert.truthy(err:find("autosave " .. dir .. "/no/x.save failed: IOError", 1, true), err)
    assert.truthy(out:find("120 frames", 1, true), out) -- the run went on to its end
  end)

  it("refuses a bad SECONDS, a missing PATH and --serve", function()
    for _, args in ipairs{ "--autosave 0 x.save", "--autosave abc x.save", "--autosave 1", "--serve --autosave 1 x.save" } do
      local code, _, err = H.run_keel(bin, "run " .. args)
      assert.are.equal(2, code, args)
      assert.truthy(err:find("autosave", 1, true), err)
    end
  end)
end)
