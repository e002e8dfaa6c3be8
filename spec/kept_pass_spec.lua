-- kept_pass_spec.lua — a system's `each` and `columns` passes reuse what their last pass over the
-- same world found (which entities, their records) only while nothing that decides it moved:
-- every change below, between two passes or made by a call in the middle of one, is seen as a
-- fresh pass would see it.
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("kept")
local P, F = key("p"), key("f")
keel.kind{ key = P, fields = { { "x", "float" } } }
local boom = {} -- entity names whose F hook fails
keel.kind{ key = F, fields = { { "n", "int" } }, update = function(self, e)
  if boom[e.name] then error("boom") end
end }

local used = {}
after_each(function() -- systems are process-wide: every one of this file is emptied again
  for _, s in ipairs(used) do keel.system{ name = s, phase = "update", run = function() end } end
  used = {}
end)

-- A system over `query` in `phase` of the given style, each call reporting the entity names it
-- visits to seen (a list per step) and adding 1 to P's x (query[1] must be P) or running `act`.
local nsys = 0
local function system(style, query, seen, act, phase)
  nsys = nsys + 1
  local name = "kept:" .. style .. nsys
  used[#used + 1] = name
  if style == "each" then
    keel.system{ name = name, phase = phase or "update", query = query, each = function(e, p)
      seen[#seen + 1] = e.name
      p.x = p.x + 1
      if act then act(e) end
    end }
  else
    keel.system{ name = name, phase = phase or "update", query = query, writes = { P }, entities = true,
      columns = function(n, p)
        for i = 1, n do
          local e = p.entity[i]
          seen[#seen + 1] = e.name
          p.x[i] = p.x[i] + 1
          if act then act(e) end
        end
      end }
  end
  return name
end

local function world(count, kinds)
  local w = keel.world("K")
  local es = {}
  for i = 1, count do
    es[i] = w:spawn("E" .. i)
    for _, k in ipairs(kinds or { P }) do es[i]:add(k) end
  end
  return w, es
end

local function step(w, seen)
  for i = #seen, 1, -1 do seen[i] = nil end
  w:step(1 / 60)
  return table.concat(seen, " ")
end

for _, style in ipairs({ "each", "columns" }) do
  describe("a kept " .. style .. " pass", function()
    it("follows enabled flags of entities, parents and components set between steps", function()
      local seen = {}
      local w, es = world(5)
      system(style, { P }, seen)
      assert.are.equal("E1 E2 E3 E4 E5", step(w, seen))
      assert.are.equal("E1 E2 E3 E4 E5", step(w, seen)) -- the kept one
      es[3].enabled = false
      assert.are.equal("E1 E2 E4 E5", step(w, seen))
      es[3].enabled = true
      es[2]:get(P).enabled = false
      assert.are.equal("E1 E3 E4 E5", step(w, seen))
      es[2]:get(P).enabled = true
      local parent = w:spawn("Parent")
      es[5].parent = parent
      assert.are.equal("E1 E2 E3 E4 E5", step(w, seen))
      parent.enabled = false
      assert.are.equal("E1 E2 E3 E4", step(w, seen))
      w:close()
    end)

    it("follows adds, removes and destroys, writing to records that moved", function()
      local seen = {}
      local w, es = world(5)
      system(style, { P }, seen)
      step(w, seen)
      step(w, seen)
      es[1]:remove(P) -- the last record moves into its row
      assert.are.equal("E2 E3 E4 E5", step(w, seen))
      es[4]:destroy()
      local e6 = w:spawn("E6")
      e6:add(P, { x = 10 })
      assert.are.equal("E2 E3 E5 E6", step(w, seen))
      assert.are.equal("E2 E3 E5 E6", step(w, seen))
      assert.are.equal(5, es[2]:get(P).x) -- five steps
      assert.are.equal(5, es[5]:get(P).x) -- its record moved: still its own
      assert.are.equal(12, e6:get(P).x)
      w:close()
    end)

    it("leaves a component added during a step to the next frame, then visits it", function()
      local seen = {}
      local w = world(2)
      local late
      used[#used + 1] = "kept:adder" .. style
      keel.system{ name = "kept:adder" .. style, phase = "update", run = function(ww)
        if late == nil then
          late = ww:spawn("Late")
          late:add(P)
        end
      end }
      system(style, { P }, seen, nil, "late_update")
      assert.are.equal("E1 E2", step(w, seen)) -- Late added in this step's update: waits
      assert.are.equal("E1 E2 Late", step(w, seen)) -- nothing structural moved since: still visited
      assert.are.equal("E1 E2 Late", step(w, seen))
      w:close()
    end)

    it("sees what a call changed for the rest of the same pass", function()
      local seen = {}
      local count = style == "columns" and 600 or 6 -- columns: past the first batch of 256
      local w, es = world(count)
      local far = es[count - 1]
      local back = es[count]
      local armed = false
      system(style, { P }, seen, function(e)
        if armed and e == es[1] then
          far.enabled = false -- later in this pass: not visited now
          back.enabled = true -- disabled when the pass began: visited now
        end
      end)
      back.enabled = false
      step(w, seen)
      step(w, seen)
      armed = true
      local got = step(w, seen)
      if style == "each" then
        assert.are.equal("E1 E2 E3 E4 E6", got)
      else -- a batch is judged before its call: the first batch was
        assert.is_nil(got:find("E" .. (count - 1) .. " ", 1, true))
        assert.is_truthy(got:find(" E" .. count .. "$"))
        assert.is_truthy(got:find("^E1 E2 "))
      end
      w:close()
    end)

    it("skips a component that faulted since its last pass, and visits it once cleared", function()
      local seen = {}
      local w, es = world(3, { P, F })
      system(style, { P, F }, seen, nil, "late_update")
      assert.are.equal("E1 E2 E3", step(w, seen))
      boom.E2 = true
      assert.are.equal("E1 E3", step(w, seen)) -- faulted in this step's update
      assert.are.equal("E1 E3", step(w, seen))
      boom.E2 = nil
      es[2]:get(F).faulted = false
      assert.are.equal("E1 E2 E3", step(w, seen))
      w:close()
    end)

    it("keeps each world's own, across worlds closed and made", function()
      local seen = {}
      system(style, { P }, seen)
      local a = world(3)
      local b, bs = world(5)
      for _ = 1, 3 do
        assert.are.equal("E1 E2 E3", step(a, seen))
        assert.are.equal("E1 E2 E3 E4 E5", step(b, seen))
      end
      assert.are.equal(3, bs[5]:get(P).x)
      a:close()
      collectgarbage()
      local c = world(2) -- may take a's address
      assert.are.equal("E1 E2", step(c, seen))
      assert.are.equal("E1 E2 E3 E4 E5", step(b, seen))
      assert.are.equal("E1 E2", step(c, seen))
      b:close()
      c:close()
    end)
  end)
end
