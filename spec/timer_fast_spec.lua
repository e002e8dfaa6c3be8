-- timer_fast_spec.lua — what w:after's shorter paths (bindings/lua_timer.c) must keep as it was:
-- the World check that trusts the udata it checked last, the Timer's metatable by integer ref,
-- the trampoline reading the World and the owner's handle from w:step's frame, and a one-shot
-- timer's function let go at its call rather than at its release.
local keel = require "keel"
local H = require "helper"

local function msg(f)
  local ok, err = pcall(f)
  assert.is_false(ok)
  return tostring(err.message or err)
end

describe("w:after's fast paths", function()
  it("still refuse what is not an open World of this epoch, after a World passed", function()
    local w = keel.world("Fast")
    local after = w.after
    assert.is_not_nil(after(w, 1, function() end)) -- w is now the one checked last
    local e = w:spawn("E")
    H.fails("InvalidArgument", function() after(e, 1, function() end) end)
    H.fails("InvalidArgument", function() after({}, 1, function() end) end)
    H.fails("InvalidArgument", function() after(nil, 1, function() end) end)
    assert.matches("keel.World expected", msg(function() after(e, 1, function() end) end), 1, true)
    w:close()
    H.fails("NotFound", function() after(w, 1, function() end) end) -- the same udata, closed
    H.fails("NotFound", function() w:every(1, function() end) end)
  end)

  it("take a World made after the last checked one was collected, and refuse other handles there", function()
    local after = keel.world("Probe").after
    local fired = 0
    for i = 1, 200 do
      local w = keel.world("Fast" .. i)
      after(w, 0, function() fired = fired + 1 end)
      w:step(0.1)
      local e = w:spawn("E") -- a handle made where a collected World's memory may come back
      H.fails("InvalidArgument", function() after(e, 0, function() end) end)
      H.fails("InvalidArgument", function() after(w:after(1, function() end), 0, function() end) end)
      H.fails("InvalidArgument", function() after(w:lift(e), 0, function() end) end)
      w = nil ---@diagnostic disable-line: cast-local-type
      e = nil ---@diagnostic disable-line: cast-local-type
      if i % 20 == 0 then collectgarbage() collectgarbage() end
    end
    assert.are.equal(200, fired)
  end)

  it("keep the argument errors' words: a missing value reads as nil", function()
    local w = keel.world("Fast")
    assert.matches("after: seconds must be a finite number >= 0, got nil", msg(function() w:after() end), 1, true)
    assert.matches("after: a function or a message name expected, got nil", msg(function() w:after(1) end), 1, true)
    assert.matches("every: a function or a message name expected, got boolean", msg(function() w:every(1, true) end),
      1, true)
    -- extra arguments after a function are ignored; the Timer is what comes back
    local t = w:after(1, function() end, "extra", 4, 5)
    assert.are.equal(1, t.remaining)
    assert.matches("^keel.Timer", tostring(t))
    -- a message timer still takes its data at 4
    local got
    keel.kind{ key = "fast:ear", fields = {},
      on_message = function(_, _, name, data) if name == "ping" then got = data.n end end }
    local e = w:spawn("E")
    e:add("fast:ear")
    e:after(0, "ping", { n = 7 })
    w:step(0.1)
    assert.are.equal(7, got)
    w:close()
  end)

  it("call world timers with their World and entity timers with their owner, inside w:step and out of it", function()
    local w = keel.world("Fast")
    local e = w:spawn("E")
    local seen = {}
    w:after(0, function(x) seen[#seen + 1] = x end)
    e:after(0, function(x) seen[#seen + 1] = x end)
    w:step(0.1)
    assert.are.equal(w, seen[1])
    assert.are.equal(e, seen[2])
    assert.is_true(rawequal(e, seen[2])) -- the cached handle, as a hook gets it
    -- a timer made by a hook of another world's step fires there with that world
    local w2 = keel.world("Other")
    local got
    w2:after(0, function(x) got = x end)
    w2:step(0.1)
    assert.are.equal(w2, got)
    w:close()
    w2:close()
  end)

  it("let go of a fired one-shot timer's function at its call; a repeating one's when it ends", function()
    local w = keel.world("Fast")
    local alive = setmetatable({}, { __mode = "k" })
    local calls = 0
    for i = 1, 40 do
      local f = function() calls = calls + 1; if i % 4 == 0 then error("boom " .. i) end end
      alive[f] = true
      w:after(0, f)
    end
    local rep = function() calls = calls + 1 end
    alive[rep] = true
    local t = w:every(0.1, rep)
    rep = nil ---@diagnostic disable-line: cast-local-type
    w:step(0.1)
    assert.are.equal(41, calls)
    assert.are.equal(10, #w:errors())
    collectgarbage()
    collectgarbage()
    local left = 0
    for _ in pairs(alive) do left = left + 1 end
    assert.are.equal(1, left) -- the repeating timer's, still pending
    assert.is_true(t:cancel())
    collectgarbage()
    collectgarbage()
    assert.is_nil(next(alive))
    -- the freed slots serve new timers with their own functions
    local order = {}
    for i = 1, 60 do w:after(0, function() order[#order + 1] = i end) end
    w:step(0.1)
    for i = 1, 60 do assert.are.equal(i, order[i]) end
    w:close()
  end)

  it("a one-shot timer cancelled from its own call, or its owner destroyed there, ends once", function()
    local w = keel.world("Fast")
    local e = w:spawn("E")
    local t, n, cancelled = nil, 0, nil
    t = w:after(0, function() n = n + 1; cancelled = t:cancel() end)
    e:after(0, function(x) n = n + 1; x:destroy() end)
    w:step(0.1)
    w:step(0.1)
    assert.are.equal(2, n)
    assert.is_true(cancelled) -- it was pending while it ran
    assert.is_nil(t.remaining)
    assert.is_false(t:cancel())
    assert.are.equal(0, #w:errors())
    w:close()
  end)
end)
