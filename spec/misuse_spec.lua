-- misuse_spec.lua — every public function of the Lua face, called with wrong arguments in its
-- first two positions, raises keel error objects (a table with a string `code`), never a plain
-- string, and never crashes (this runs through the ASan-built keel program). The functions are
-- found by walking the module tables and the handles' metatables, so new ones are covered.
--
-- Not walked: keel.kindfiles and keel.repl are the keel program's own tooling (kindfiles runs
-- files from disk and prints to stderr, the REPL prints and reads the terminal), not the keel
-- module; keel.meta only holds annotations.
local keel = require "keel"
local history = require "keel.history"

local K = "mu:thing"
-- A path with a NUL byte must be refused, not cut short: nothing may be written at NUL_PATH.
local NUL_PATH = os.tmpname()
os.remove(NUL_PATH)
keel.kind{ key = K, multiplicity = "many",
  fields = { { "n", "int" }, { "s", "string" }, { "v", "vec3" }, { "t", "entity" } } }

local stale_self -- a hook's self table, kept past its callback
keel.kind{ key = "mu:hooked", fields = { { "x", "float" } }, awake = function(self) stale_self = self end }
keel.world("hooks"):spawn("h"):add("mu:hooked")

-- Fresh handles of every type (and stale ones) for one round of calls.
local function fixture()
  local fx = {}
  fx.w = keel.world("M")
  fx.e = fx.w:spawn{ name = "E", components = { { K, n = 1 } } }
  fx.c = fx.e:get(K)
  fx.dead = fx.w:spawn("dead")
  fx.dc = fx.dead:add(K)
  fx.dead:destroy()
  fx.closed = keel.world("closed")
  fx.ce = fx.closed:spawn("x")
  fx.cc = fx.ce:add(K)
  fx.closed:close()
  local _, _, _, query = fx.w:entities()
  fx.query = query
  local _, cmd = fx.w:_spawn("undoable")
  fx.cmd = cmd
  fx.base = keel.persist.baseline(fx.w)
  fx.h = history.new(fx.w)
  fx.err = select(2, pcall(fx.w.spawn, fx.w, 1))
  return fx
end

-- The wrong values: every Lua type, odd numbers and strings, and handles of every kind.
-- (No huge integer: w:run(2^53) is a correct call that takes forever.)
local function values(fx)
  return table.pack(nil, 0, -1, 1.5, 2 ^ 63, 0 / 0, math.huge, "", "/nonexistent/keel-misuse", NUL_PATH .. "\0b",
    {}, { 1, 2, 3 }, { x = {} }, true, false, print, coroutine.create(function() end),
    fx.w, fx.e, fx.c, fx.dead, fx.dc, fx.closed, fx.ce, fx.cc, fx.query, fx.cmd, fx.base, fx.h, fx.err,
    stale_self)
end

local function describe_value(v)
  local ok, s = pcall(tostring, v)
  return type(v) .. " " .. (ok and s or "?")
end

-- { name, fn } for every function reachable from the module and the handles.
local function public_functions()
  local list, seen = {}, {}
  local function add(name, fn)
    if type(fn) == "function" and not seen[fn] then
      seen[fn] = true
      list[#list + 1] = { name = name, fn = fn }
    end
  end
  local function add_table(prefix, t)
    for k, v in pairs(t) do add(prefix .. tostring(k), v) end
  end
  -- a metatable: its metamethods, and the methods behind __index (a table or the C closure's upvalues)
  local function add_meta(prefix, mt)
    if type(mt) ~= "table" then return end
    local index = rawget(mt, "__index")
    if type(index) == "table" then add_table(prefix .. ":", index) end -- methods first: their names
    add_table(prefix .. ".", mt)
    if type(index) == "function" then
      for i = 1, 8 do
        local _, up = debug.getupvalue(index, i)
        if up == nil then break end
        if type(up) == "table" then add_table(prefix .. ":", up) end
      end
    end
  end
  local fx = fixture()
  add_table("keel.", keel)
  add_table("keel.persist.", keel.persist)
  add_table("keel.history.", history)
  add_meta("World", getmetatable(fx.w))
  add_meta("Entity", getmetatable(fx.e))
  add_meta("Component", getmetatable(fx.c))
  add_meta("Query", getmetatable(fx.query))
  add_meta("Command", getmetatable(fx.cmd))
  add_meta("Baseline", getmetatable(fx.base))
  add_meta("History", getmetatable(fx.h))
  add_meta("Error", getmetatable(fx.err))
  add_meta("self", getmetatable(stale_self))
  -- the iterator functions of the for loops (called as f(state, control) by `for`)
  add("World:entities() iterator", (fx.w:entities()))
  add("World:each() iterator", (fx.w:each(K)))
  add("World:query() iterator", (fx.w:query(K)))
  fx.w:close()
  return list
end

local function is_error_object(err)
  local t = type(err)
  if t ~= "table" and t ~= "userdata" then return false end
  local ok, code = pcall(function() return err.code end)
  return ok and type(code) == "string"
end

describe("misuse of the Lua face", function()
  local fns = public_functions()

  it("finds the functions to call", function()
    local names = {}
    for _, f in ipairs(fns) do names[f.name] = true end
    for _, want in ipairs{ "keel.world", "keel.persist.save", "keel.history.new", "World:spawn", "World:each",
      "Entity:add", "Component:set", "History:undo", "Baseline:free", "World.__close", "self:set" } do
      assert.is_true(names[want] ~= nil, want .. " not found")
    end
    assert.is_true(#fns > 60, "only " .. #fns .. " functions found")
  end)

  for _, f in ipairs(fns) do
    it(f.name .. " raises error objects on wrong arguments", function()
      local bad, calls = {}, 0
      local function try(...)
        calls = calls + 1
        local ok, err = pcall(f.fn, ...)
        if not ok and not is_error_object(err) and #bad < 5 then
          local args = table.pack(...)
          local shown = {}
          for i = 1, args.n do shown[i] = describe_value(args[i]) end
          bad[#bad + 1] = ("(%s) raised %s"):format(table.concat(shown, ", "), describe_value(err))
        end
      end
      local count = values(fixture()).n
      for i = 1, count do
        local fx = fixture() -- fresh: a call may close, destroy or free what it is given
        local vs = values(fx)
        try(vs[i])
        for j = 1, count do try(vs[i], vs[j]) end
        fx.w:close()
      end
      assert.is_true(calls > 0)
      assert.are.same({}, bad)
    end)
  end

  it("wrote nothing at a path cut short at its NUL byte", function()
    local f = io.open(NUL_PATH)
    if f then f:close(); os.remove(NUL_PATH) end
    assert.is_nil(f, NUL_PATH .. " was written")
  end)
end)
