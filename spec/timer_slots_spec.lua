-- timer_slots_spec.lua — a timer's Lua function is kept in a slot of its state's anchor table and
-- its record comes from a pool (bindings/lua_timer.c): slots and records are reused as timers end,
-- so each firing must still call its own function, across hundreds of timers made, cancelled,
-- fired, failed and dropped with their world.
local keel = require "keel"

describe("timer slots", function()
  it("call each timer's own function while slots are freed and handed out again", function()
    local w = keel.world("Slots")
    local fired, timers = {}, {}
    for i = 1, 600 do timers[i] = w:after(0, function() fired[#fired + 1] = i end) end -- more than one pool block
    for i = 2, 600, 2 do assert.is_true(timers[i]:cancel()) end
    for i = 601, 800 do timers[i] = w:after(0, function() fired[#fired + 1] = i end) end -- reuses freed slots
    w:step(0.1)
    local want = {}
    for i = 1, 599, 2 do want[#want + 1] = i end
    for i = 601, 800 do want[#want + 1] = i end
    assert.are.same(want, fired)
    -- every slot is free again: a second round gets the same functions right
    fired = {}
    for i = 1, 300 do w:after(0.5 * (i % 3), function() fired[#fired + 1] = i end) end
    w:step(0.1)
    w:step(0.5)
    w:step(0.5)
    assert.are.equal(300, #fired)
    local seen = {}
    for _, i in ipairs(fired) do seen[i] = (seen[i] or 0) + 1 end
    for i = 1, 300 do assert.are.equal(1, seen[i]) end
    w:close()
  end)

  it("frees the slot of a failed timer and of a repeating one cancelled from its own call", function()
    local w = keel.world("Slots")
    local n, t = 0, nil
    w:after(0, function() error("boom") end)
    t = w:every(0.1, function() n = n + 1; if n == 3 then t:cancel() end end)
    for _ = 1, 6 do w:step(0.1) end
    assert.are.equal(3, n)
    assert.are.equal(1, #w:errors())
    local ok = 0
    for _ = 1, 10 do w:after(0, function() ok = ok + 1 end) end
    w:step(0.1)
    assert.are.equal(10, ok)
    w:close()
  end)

  it("lets go of pending timers' functions when their world closes or is dropped", function()
    local alive = setmetatable({}, { __mode = "k" })
    do
      local w = keel.world("Slots")
      for _ = 1, 50 do
        local f = function() end
        alive[f] = true
        w:after(10, f)
      end
      w:close()
    end
    collectgarbage()
    collectgarbage()
    assert.is_nil(next(alive))
  end)
end)
