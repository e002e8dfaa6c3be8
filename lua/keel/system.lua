-- system.lua — keel.system{}, keel.systems(), keel.system_reset(): per-phase gameplay
-- code over every entity holding a set of kinds (`each`), or over the world (`run`).
-- Systems are process-wide like kinds; they run after a phase's component hooks, in `after`
-- order (ties: declaration order), each call one transaction (lua_system.c, which also runs
-- `each` with the same reused self tables as hooks). The module is a plain table of those three
-- functions; init.lua puts them in the keel module.
require "keel.core" -- which registers the two internal modules below
local errors = require "keel.core.errors"
local runners = require "keel.core.systems"

local M = {}

local PHASES = { start = 1, fixed_update = 2, update = 3, late_update = 4 }
local KEYS = { name = true, phase = true, query = true, after = true, each = true, run = true, columns = true,
               writes = true, entities = true }

local systems = {}   -- declaration order
local by_name = {}
local order = {}     -- phase -> systems in run order
local NONE = {}      -- a phase with no system: the runner allocates nothing

local function invalid(fmt, ...) errors.invalid(fmt:format(...)) end

local function strings(list, what, name)
  if list == nil then return {} end
  if type(list) ~= "table" then invalid("system %s: %s must be a list of strings", name, what) end
  local out = {}
  for i, v in ipairs(list) do
    if type(v) ~= "string" or v == "" then invalid("system %s: %s[%d] must be a non-empty string", name, what, i) end
    out[i] = v
  end
  return out
end

-- Topological order of `list` by `after` (names not declared are ignored), ties by declaration
-- order; nil and the names on a cycle when there is one.
local function sorted(list)
  local index, indegree, next_of = {}, {}, {}
  for i, s in ipairs(list) do index[s.name] = i; indegree[i] = 0; next_of[i] = {} end
  for i, s in ipairs(list) do
    for _, a in ipairs(s.after) do
      local j = index[a]
      if j then indegree[i] = indegree[i] + 1; table.insert(next_of[j], i) end
    end
  end
  local out, ready = {}, {}
  for i = 1, #list do if indegree[i] == 0 then ready[#ready + 1] = i end end
  while #ready > 0 do
    table.sort(ready, function(a, b) return a > b end) -- smallest declaration index last
    local i = table.remove(ready)
    out[#out + 1] = list[i]
    for _, j in ipairs(next_of[i]) do
      indegree[j] = indegree[j] - 1
      if indegree[j] == 0 then ready[#ready + 1] = j end
    end
  end
  if #out == #list then return out end
  local cycle = {}
  for i = 1, #list do if indegree[i] > 0 then cycle[#cycle + 1] = list[i].name end end
  return nil, cycle
end

local function rebuild(list)
  local all, cycle = sorted(list)
  if not all then return nil, cycle end
  local by_phase = {}
  for p in pairs(PHASES) do by_phase[p] = {} end
  for _, s in ipairs(all) do table.insert(by_phase[s.phase], s) end
  return by_phase
end

local function fail(w, s, phase, err)
  s.faulted = true
  w:_fault_system(s.name, phase, "system " .. s.name .. ": " .. tostring(err), err)
end

local clock = runners.clock

-- profiling (w.profiling): each system run timed, one clock read before and one after
local function runner(w, phase, dt, profiling)
  for _, s in ipairs(order[phase] or NONE) do
    if not s.faulted then
      local t0 = profiling and clock()
      if s.run then
        local ok, err = w:_atomic(s.run, w, dt)
        if t0 then w:_stats_system(s.name, t0) end
        if not ok then fail(w, s, phase, err) end
      elseif s.columns then
        -- lua_columns.c: a batch of entities per call, its `writes` kinds read back, one transaction
        local ok, err = w:_columns(s.query, s.writes, s.columns, dt, s.entities, s.cache)
        if t0 then w:_stats_system(s.name, t0, ok and err or nil) end
        if not ok then fail(w, s, phase, err) end
      else
        -- lua_system.c: the hooks' self tables, one transaction per call, stopping at a failure
        local ok, err = w:_each(s.query, s.each, dt, s.cache) -- true and the entities visited, or false and the error
        if t0 then w:_stats_system(s.name, t0, ok and err or nil) end
        if not ok then fail(w, s, phase, err) end
      end
    end
  end
end

local installed = false -- steps pay nothing for systems until one is declared

function M.system(spec)
  if type(spec) ~= "table" then invalid("system: a table expected, got %s", type(spec)) end
  local name = spec.name
  if type(name) ~= "string" or name == "" then invalid("system: name must be a non-empty string") end
  for k in pairs(spec) do
    if not KEYS[k] then invalid("system %s: unknown key '%s'", name, tostring(k)) end
  end
  if not PHASES[spec.phase] then
    invalid("system %s: phase must be start, fixed_update, update or late_update, not %s", name, tostring(spec.phase))
  end
  local each, run, columns = spec.each, spec.run, spec.columns
  if (each ~= nil and 1 or 0) + (run ~= nil and 1 or 0) + (columns ~= nil and 1 or 0) ~= 1 then
    invalid("system %s: give exactly one of each, columns and run", name)
  end
  for what, f in pairs({ each = each, run = run, columns = columns }) do
    if type(f) ~= "function" then invalid("system %s: %s must be a function", name, what) end
  end
  local query = strings(spec.query, "query", name)
  if (each or columns) and #query == 0 then
    invalid("system %s: %s needs a query of at least one kind", name, each and "each" or "columns")
  end
  local seen = {}
  for _, k in ipairs(query) do
    if seen[k] then invalid("system %s: query names %s twice", name, k) end
    seen[k] = true
  end
  if not columns and (spec.writes ~= nil or spec.entities ~= nil) then
    invalid("system %s: writes and entities go with columns", name)
  end
  local writes = strings(spec.writes, "writes", name)
  for _, k in ipairs(writes) do
    if not seen[k] then invalid("system %s: writes names %s, which is not in its query", name, k) end
  end
  if spec.entities ~= nil and type(spec.entities) ~= "boolean" then
    invalid("system %s: entities must be a boolean", name)
  end
  local s = { name = name, phase = spec.phase, query = query, after = strings(spec.after, "after", name),
              each = each, run = run, columns = columns, writes = writes, entities = spec.entities == true,
              cache = (columns or each) and {} or nil, faulted = false }
  local list = {}
  for i, old in ipairs(systems) do list[i] = old end
  local at = by_name[name]
  if at then list[at] = s else list[#list + 1] = s end
  local by_phase, cycle = rebuild(list)
  if not by_phase then invalid("system %s: `after` makes a cycle: %s", name, table.concat(cycle, " -> ")) end
  systems, order = list, by_phase
  by_name[name] = at or #list
  if not installed then
    runners.set_runner(runner)
    installed = true
  end
  return name
end

function M.systems()
  local out = {}
  for i, s in ipairs(systems) do
    out[i] = { name = s.name, phase = s.phase, query = { table.unpack(s.query) },
               after = { table.unpack(s.after) }, faulted = s.faulted }
  end
  return out
end

function M.system_reset(name)
  local at = by_name[name]
  if not at then invalid("system_reset: no system '%s'", tostring(name)) end
  systems[at].faulted = false
end

return M
