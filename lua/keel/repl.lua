-- repl.lua — the keel REPL's helpers: a readable printer for results, and reload() (hot reload of kinds).
local repl = {}

local MAX_DEPTH = 4
local MAX_ITEMS = 64

-- The metatable name of a userdata or table ("keel.Entity", ...), or nil.
local function kind_of(v)
  local t = type(v)
  if t ~= "userdata" and t ~= "table" then return nil end
  local mt = getmetatable(v)
  if type(mt) == "table" and type(mt.__name) == "string" then return mt.__name end
  return nil
end

local function is_error(v)
  return type(v) == "table" and type(v.code) == "string" and type(v.message) == "string"
end

local function is_array(t)
  local n = #t
  local count = 0
  for _ in pairs(t) do
    count = count + 1
    if count > n then return false end
  end
  return count == n
end

local function show_number(v)
  if math.type(v) == "integer" then return tostring(v) end
  if v ~= v then return "nan" end
  if v == math.huge then return "inf" end
  if v == -math.huge then return "-inf" end
  -- as the scene file writes it: whole floats without ".0", others in the
  -- shortest form that reads back exactly
  if v == math.floor(v) and math.abs(v) < 1e15 then return string.format("%d", math.tointeger(v)) end
  for prec = 1, 17 do
    local s = string.format("%." .. prec .. "g", v)
    if tonumber(s) == v then return s end
  end
  return string.format("%.17g", v)
end

local show -- forward

-- A diagnostic as `keel check` prints it: FILE:LINE:COL: severity: CODE:
-- message (at PATH), each part when known.
local function diag_line(d)
  local where = ""
  if type(d.file) == "string" and d.file ~= "" then
    where = d.file
    if math.type(d.line) == "integer" and d.line > 0 then
      where = where .. ":" .. d.line .. ":" .. ((math.type(d.col) == "integer" and d.col > 0) and d.col or 1)
    end
    where = where .. ": "
  end
  local sev = type(d.severity) == "string" and (d.severity .. ": ") or ""
  local at = (type(d.path) == "string" and d.path ~= "") and (" (at " .. d.path .. ")") or ""
  return where .. sev .. d.code .. ": " .. d.message .. at
end

-- An error object as "Code: message", then its diagnostics when they say
-- more (several, or a line or path in the file); a bare diagnostic as diag_line.
local function show_error(v, depth)
  if type(v.diagnostics) ~= "table" then
    if v.severity or v.file or (v.path and v.path ~= "") then return diag_line(v) end
    return v.code .. ": " .. v.message
  end
  local lines = { v.code .. ": " .. v.message }
  local more = #v.diagnostics > 1
  for _, d in ipairs(v.diagnostics) do
    if type(d) == "table" and ((math.type(d.line) == "integer" and d.line > 0) or (d.path and d.path ~= "")) then
      more = true
    end
  end
  if more and depth == 0 then
    for i, d in ipairs(v.diagnostics) do
      if i > MAX_ITEMS then lines[#lines + 1] = "  ..." break end
      if type(d) == "table" and type(d.code) == "string" and type(d.message) == "string" then
        lines[#lines + 1] = "  " .. diag_line(d)
      end
    end
  end
  return table.concat(lines, "\n")
end

local NIL_UUID = "00000000-0000-0000-0000-000000000000"

local function entity_label(e)
  local ok, name = pcall(function() return e.name end)
  if not ok then return "Entity (gone)" end
  if e.uuid == NIL_UUID then -- the scene root has no UUID of its own
    local okw, wname = pcall(function() return e.world.name end)
    return string.format("Scene root of %q", okw and wname or "?")
  end
  return string.format("Entity %q %s", name, e.uuid)
end

-- A short one-line form for values nested inside others.
local function inline(v, depth, seen)
  local k = kind_of(v)
  if k == "keel.Entity" then
    return "<" .. entity_label(v) .. ">"
  elseif k == "keel.Component" then
    local ok, s = pcall(function() return string.format("<%s[%d]>", v.kind, v.slot) end)
    return ok and s or "<Component (gone)>"
  elseif k == "keel.World" then
    local ok, s = pcall(function() return string.format("<World %q>", v.name) end)
    return ok and s or "<World (closed)>"
  end
  return show(v, depth, seen)
end

local function show_table(t, depth, seen)
  if seen[t] then return "{...}" end
  if depth >= MAX_DEPTH then return "{...}" end
  seen[t] = true
  local parts = {}
  if is_array(t) then
    for i = 1, math.min(#t, MAX_ITEMS) do parts[#parts + 1] = inline(t[i], depth + 1, seen) end
    if #t > MAX_ITEMS then parts[#parts + 1] = "..." end
  else
    local keys = {}
    for key in pairs(t) do keys[#keys + 1] = key end
    table.sort(keys, function(a, b)
      local ta, tb = type(a), type(b)
      if ta ~= tb then return ta < tb end
      if ta == "number" or ta == "string" then return a < b end
      return tostring(a) < tostring(b)
    end)
    for i = 1, math.min(#keys, MAX_ITEMS) do
      local key = keys[i]
      local ks = (type(key) == "string" and key:match("^[%a_][%w_]*$")) and key
        or "[" .. inline(key, depth + 1, seen) .. "]"
      parts[#parts + 1] = ks .. " = " .. inline(t[key], depth + 1, seen)
    end
    if #keys > MAX_ITEMS then parts[#parts + 1] = "..." end
  end
  seen[t] = nil
  local one = "{" .. table.concat(parts, ", ") .. "}"
  if #one <= 100 then return one end
  local pad = string.rep("  ", depth + 1)
  return "{\n" .. pad .. table.concat(parts, ",\n" .. pad) .. "\n" .. string.rep("  ", depth) .. "}"
end

-- The fields of a component in declared order (kind_info), each as "name = value".
local function field_lines(c, indent)
  local lines = {}
  local keel = package.loaded["keel"]
  local info = nil
  if keel and keel.kind_info then
    local ok, got = pcall(keel.kind_info, c.kind) -- an undeclared kind has none
    if ok then info = got end
  end
  local ok, body = pcall(c.body, c)
  if not ok or type(body) ~= "table" then return lines end
  local order = {}
  if info and info.fields then
    for _, f in ipairs(info.fields) do order[#order + 1] = f.key or f[1] end
  else
    for key in pairs(body) do order[#order + 1] = key end
    table.sort(order)
  end
  local width = 0
  for _, key in ipairs(order) do width = math.max(width, #key) end
  for _, key in ipairs(order) do
    local v = body[key]
    if v == nil then
      local okv, live = pcall(function() return c[key] end)
      v = okv and live or nil
    end
    lines[#lines + 1] = string.format("%s%-" .. width .. "s = %s", indent, key, inline(v, 1, {}))
  end
  return lines
end

local function component_head(c)
  local flags = {}
  if not c.loaded then flags[#flags + 1] = "not loaded: kind not declared, body kept" end
  if c.enabled == false then flags[#flags + 1] = "disabled" end
  local s = string.format("%s[%d]", c.kind, c.slot)
  if #flags > 0 then s = s .. "  (" .. table.concat(flags, ", ") .. ")" end
  return s
end

local function show_entity(e)
  if not e:alive() then return "Entity (destroyed)" end
  local lines = { entity_label(e) }
  local extra = {}
  if e.parent then extra[#extra + 1] = "parent " .. string.format("%q", e.parent.name) end
  local kids = e:children()
  if #kids > 0 then
    local one, many = "child", "children"
    if e.uuid == NIL_UUID then one, many = "top-level entity", "top-level entities" end
    extra[#extra + 1] = #kids .. " " .. (#kids == 1 and one or many)
  end
  if not e.enabled then extra[#extra + 1] = "disabled" end
  if #extra > 0 then lines[1] = lines[1] .. "  (" .. table.concat(extra, ", ") .. ")" end
  local comps = e:components()
  if #comps == 0 then lines[#lines + 1] = "  (no components)" end
  for _, c in ipairs(comps) do
    lines[#lines + 1] = "  " .. component_head(c)
    -- an unknown component's kept body is shown too (read-only, as kept)
    for _, l in ipairs(field_lines(c, "    ")) do lines[#lines + 1] = l end
  end
  return table.concat(lines, "\n")
end

local function show_component(c)
  local lines = { component_head(c) .. " on " .. entity_label(c.entity) }
  for _, l in ipairs(field_lines(c, "  ")) do lines[#lines + 1] = l end
  return table.concat(lines, "\n")
end

local function show_world(w)
  local n = w:count()
  return string.format("World %q %s: %d %s, revision %d", w.name, w.uuid, n, n == 1 and "entity" or "entities",
    w.revision)
end

function show(v, depth, seen)
  depth = depth or 0
  seen = seen or {}
  local t = type(v)
  if t == "string" then
    return depth == 0 and v or string.format("%q", v)
  elseif t == "number" then
    return depth == 0 and tostring(v) or show_number(v) -- a bare result prints as `lua` would
  elseif is_error(v) then
    return show_error(v, depth)
  end
  local k = kind_of(v)
  local shower = (k == "keel.Entity" and show_entity) or (k == "keel.Component" and show_component)
    or (k == "keel.World" and show_world)
  if shower then
    local ok, s = pcall(shower, v)
    if ok then return s end
    return tostring(v) .. "  (" .. tostring(s) .. ")"
  end
  if t == "table" and not (getmetatable(v) and getmetatable(v).__tostring) then
    return show_table(v, depth, seen)
  end
  return tostring(v)
end

-- `w:entities()`, `w:each(k)` and `w:query(...)` typed alone return a
-- generic-for triple and its to-be-closed keel.Query; printing that
-- ("function: 0x..., nil, nil, keel.Query (0 of 2)") says nothing, so the
-- rows are listed instead (the snapshot is not kept anywhere, so using it up
-- here changes nothing).
local function show_rows(f, s, c, q)
  local rows = {}
  local ok, err = pcall(function()
    while true do
      local vals = table.pack(f(s, c))
      if vals[1] == nil then break end
      c = vals[1]
      if #rows >= MAX_ITEMS then
        rows[#rows + 1] = "  ..."
        break
      end
      local parts = {}
      for i = 1, vals.n do parts[i] = inline(vals[i], 1, {}) end
      rows[#rows + 1] = "  " .. table.concat(parts, "  ")
    end
  end)
  local head = string.format("%s: %d %s (an iterator: use it in a for loop)", kind_of(q), #rows,
    #rows == 1 and "row" or "rows")
  if rows[#rows] == "  ..." then head = string.format("%s: more than %d rows (an iterator: use it in a for loop)",
    kind_of(q), MAX_ITEMS) end
  if not ok then rows[#rows + 1] = "  (stopped: " .. show(err) .. ")" end
  return head .. (#rows > 0 and "\n" .. table.concat(rows, "\n") or "")
end

-- Every result on its own line; nil results are shown too (as `lua` does).
function repl.show(...)
  local n = select("#", ...)
  local f, s, c, q = ...
  if n == 4 and type(f) == "function" and s == nil and c == nil and kind_of(q) == "keel.Query" then
    return show_rows(f, s, c, q)
  end
  local out = {}
  for i = 1, n do out[i] = show((select(i, ...))) end
  return table.concat(out, "\n")
end

repl.format = show
repl.number = show_number

-- The REPL's print(): Lua's, but a float in the shortest form that reads back exactly, as
-- the printouts and the scene files write it (print(c.value) and `=e` agree).
function repl.print(...)
  local n = select("#", ...)
  local parts = {}
  for i = 1, n do
    local v = select(i, ...)
    parts[i] = math.type(v) == "float" and show_number(v) or tostring(v)
  end
  io.stdout:write(table.concat(parts, "\t"), "\n")
end

-- ---- completion (the REPL's tab key) ----

local KEYWORDS = { "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
  "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while" }

-- Properties read through a handle's __index besides its methods.
local PROPERTIES = {
  ["keel.World"] = { "uuid", "name", "root", "revision", "path", "saved_revision", "dirty" },
  ["keel.Entity"] = { "uuid", "name", "parent", "enabled", "world" },
  ["keel.Component"] = { "kind", "slot", "entity", "loaded", "version", "enabled" },
}

-- The names `v.` or `v:` may be followed by; after `:` (methods_only) only
-- functions, so `e:` does not offer `e:name`.
local function members(v, add, methods_only)
  local function add_from(t)
    for k, x in pairs(t) do
      if not methods_only or type(x) == "function" then add(k) end
    end
  end
  if type(v) == "table" then add_from(v) end
  local mt = getmetatable(v)
  if type(mt) ~= "table" then return end
  local index = rawget(mt, "__index")
  if type(index) == "table" and index ~= v then
    add_from(index)
  elseif type(index) == "function" then
    -- keel's handles keep their methods table as the __index closure's upvalue
    local _, methods = debug.getupvalue(index, 1)
    if type(methods) == "table" then add_from(methods) end
  end
  if methods_only then return end
  local name = rawget(mt, "__name")
  for _, k in ipairs(PROPERTIES[name] or {}) do add(k) end
  if name == "keel.Component" then
    local keel = package.loaded["keel"]
    local ok, info = pcall(function() return keel.kind_info(v.kind) end)
    if ok and info then
      for _, f in ipairs(info.fields or {}) do add(f.key) end
    end
  end
end

-- Candidates completing `text` ("wor", "world:sp", "keel.per"), whole;
-- `before` is the line before it: after a quote, `text` starts a string,
-- and the kind keys are offered (e:get("game:h).
function repl.complete(text, before)
  if before and before:match("[\"']$") then
    local out = {}
    local keel = package.loaded["keel"]
    local ok, kinds = pcall(function() return keel.kinds() end)
    for _, k in ipairs(ok and type(kinds) == "table" and kinds or {}) do
      if type(k.key) == "string" and k.key:sub(1, #text) == text then out[#out + 1] = k.key end
    end
    table.sort(out)
    return out
  end
  local head, sep, partial = text:match("^(.-)([%.:]?)([%a_]?[%w_]*)$")
  if not head then return {} end
  local found, out = {}, {}
  local function add(k)
    -- names starting with "_" are private unless asked for
    if type(k) == "string" and k:match("^[%a_][%w_]*$") and k:sub(1, #partial) == partial and not found[k]
      and (k:sub(1, 1) ~= "_" or partial:sub(1, 1) == "_") then
      found[k] = true
      out[#out + 1] = head .. sep .. k
    end
  end
  if sep == "" then
    if head ~= "" and not head:match("[^%w_]$") then return {} end
    -- a name at the start of an expression: globals and keywords
    members(_G, add)
    for _, k in ipairs(KEYWORDS) do add(k) end
  else
    local path = head:match("([%a_][%w_%.]*)$")
    if not path or path:sub(-1) == "." then return {} end
    local ok, v = pcall(function()
      local cur = _G
      for part in path:gmatch("[^%.]+") do cur = cur[part] end
      return cur
    end)
    if not ok or v == nil then return {} end
    members(v, add, sep == ":")
  end
  table.sort(out)
  return out
end

-- help(): where to start, for someone who has not read the README yet.
local HELP = [[
world                          the World: world:spawn{ name = "A", components = { "core:transform" } },
                               world:find(name or uuid), world:count([kind]), world:step(dt), world:run(n, dt),
                               world:save(path), world:dump(), world:errors(), world:warnings()
world:entities(), world:each(kind), world:query(kind, ...)   in a for loop; typed alone, their rows
e = world:find("A")            an entity: e:get(kind[, slot]), e:add(kind[, body]), e:remove(kind[, slot]),
                               e:components(), e:children(), e.name, e.parent, e.enabled, e:destroy()
c = e:get("core:transform")    a component: c.position = { 1, 2, 3 } writes through the registry
keel.kinds(), keel.kind_info(key), keel.kind{ ... }   the kinds; ./kinds/*.lua are loaded at start-up
keel.load(path), keel.persist  scenes and save games
reload()                       re-runs the kind files (and shared modules) whose content changed
h = require("keel.history").new(world)   undo/redo: h:spawn{...}, h:add(e, kind), h:set(c, field, v),
                               h:destroy(e), h:rename(e, name), h:reparent(e, p); h:undo(), h:redo()
require("keel.repl").format(v) the printout below as a string (an entity with its components), for scripts
watch(), resolve(take[, paths])   world follows its scene file: edits on disk applied (merged with live ones); conflicts printed
serve([port])                  serves world to the inspector (its URL printed; default port 27760, 0: any free)
play(), stop()                 play mode: stop() puts the world back as it was at play() (handles go stale)
world:keep(e [, kind])         while playing: stop() writes e (or that component) back in; it lists what it refused
=expr or expr                  prints the value; Tab completes (kind keys inside quotes)
ctrl-c drops the line or stops a Lua loop (a world:run after its frame; twice: at once); ctrl-d quits]]

function repl.help()
  return HELP
end

-- Re-runs the kind files that changed and any new ones (keel.kindfiles, which
-- the program loaded them with). Returns the list of files run again.
function repl.reload()
  return require("keel.kindfiles").reload()
end

-- ---- callback errors said aloud ----

-- w:errors() entries from index `from` (1 when nil) as lines, one per kind + phase +
-- message with how many failures it stands for (an entry's `count` included):
-- "  25 x game:health update: boom (kinds/health.lua:12)".
function repl.group_errors(errs, from)
  local groups, order = {}, {}
  for i = from or 1, #errs do
    local e = errs[i]
    local who = (e.kind ~= nil and e.kind ~= "") and tostring(e.kind)
      or (e.system and ("system " .. tostring(e.system))) or (e.timer and ("timer " .. tostring(e.timer))) or "?"
    local key = who .. "\0" .. tostring(e.phase) .. "\0" .. tostring(e.message)
    local g = groups[key]
    if not g then
      g = { who = who, phase = tostring(e.phase), message = tostring(e.message), where = e.where, n = 0 }
      groups[key] = g
      order[#order + 1] = g
    end
    g.n = g.n + (math.type(e.count) == "integer" and e.count or 1)
  end
  local lines = {}
  for _, g in ipairs(order) do
    local msg = g.message
    if msg:sub(1, #g.phase + 1) == g.phase .. ":" then msg = msg:sub(#g.phase + 2):gsub("^ ", "") end
    local where = (type(g.where) == "string" and not msg:find(g.where, 1, true)) and (" (" .. g.where .. ")") or ""
    lines[#lines + 1] = string.format("  %d x %s %s: %s%s", g.n, g.who, g.phase, msg, where)
  end
  return lines
end

-- After each REPL line: the entries every world in a global variable gained since the
-- last line (a world seen for the first time: all of them), grouped; nil when none.
local seen_errors = setmetatable({}, { __mode = "k" })

function repl.new_errors()
  local out = {}
  for name, w in pairs(_G) do
    if kind_of(w) == "keel.World" then
      local ok, errs = pcall(w.errors, w) -- a closed world has none to say
      if ok and type(errs) == "table" then
        local from = (seen_errors[w] or 0) + 1
        seen_errors[w] = #errs
        if #errs >= from then
          local lines = repl.group_errors(errs, from)
          local total = 0
          for i = from, #errs do total = total + (math.type(errs[i].count) == "integer" and errs[i].count or 1) end
          table.insert(lines, 1, string.format("%s: %d new callback error%s (%s:errors() lists them):", tostring(name),
            total, total == 1 and "" or "s", tostring(name)))
          out[#out + 1] = table.concat(lines, "\n")
        end
      end
    end
  end
  if #out == 0 then return nil end
  table.sort(out)
  return table.concat(out, "\n")
end

-- play() / stop(): play mode for the REPL's world (world:play / world:stop); stop() says
-- whether the world came back as it was at play() (its dump compared).
local authored

function repl.play()
  local w = rawget(_G, "world")
  authored = w:dump()
  w:play()
  return "playing: stop() puts the world back as it is now"
end

function repl.stop()
  local w = rawget(_G, "world")
  local refused, kept = w:stop()
  local same = authored == nil or w:dump() == authored
  authored = nil
  local out
  if kept then
    out = "stopped: the world is back as it was at play(), with what keep() marked written in (one undo entry)"
  else
    out = same and "stopped: the world is back as it was at play() (earlier handles are stale: find them again)"
      or "stopped, but the world differs from play()"
  end
  -- what w:keep marked that the restored world refused, one line each
  for _, r in ipairs(refused or {}) do out = out .. "\nnot kept: " .. r.path .. ": " .. r.message end
  return out
end

-- serve([port]): the REPL's world on the live channel (keel.serve). The REPL answers requests
-- while it waits for a line on a terminal (and before each line otherwise), and between frames
-- of world:step/world:run. Called again, it serves on the new port instead.
function repl.serve(port)
  if port ~= nil and math.type(port) ~= "integer" then
    require("keel.core.errors").invalid("serve: a port number expected, got " .. type(port))
  end
  if repl.server then repl.server:close() end
  repl.server = nil
  local srv, err = require("keel.serve").serve(rawget(_G, "world"), { port = port })
  if not srv then return nil, err end
  repl.server = srv
  return "serving world at " .. srv.url
end

-- watch(): the REPL's world follows its scene file (w:watch()): between lines (and while it waits
-- for one) a change on disk is applied, or merged with the live edits; what happened is printed
-- one line per reload, conflict or error, as `keel run --watch` prints it. resolve(take [, paths])
-- settles the conflicts (watcher:resolve). Called again, it watches the current world anew.
function repl.watch(opts)
  if repl.watcher then repl.watcher:close() end
  repl.watcher = nil
  local w = rawget(_G, "world")
  if not w then require("keel.core.errors").invalid("watch: no world (load a scene first)") end
  repl.watcher = w:watch(opts or { interval = 0 }) -- polled between lines and every 20 ms while waiting: a stat each
  return "watching " .. tostring(repl.watcher.path)
end

function repl.resolve(take, paths)
  if not repl.watcher then require("keel.core.errors").invalid("resolve: nothing is watched (watch() first)") end
  local ev = repl.watcher:resolve(take, paths)
  require("keel.cli.run").report(tostring(repl.watcher.path), ev or {})
  return ev and ev.conflicts and #ev.conflicts > 0 and (#ev.conflicts .. " conflict(s) left") or "resolved"
end

-- What the REPL calls while waiting for input: answers the server's requests and polls the
-- watched scene file. True while either needs polling.
function repl.poll(seconds)
  local srv = repl.server
  if srv and srv.http then srv:poll(seconds or 0) end
  local watcher = repl.watcher
  if watcher then
    local ok, ev = pcall(watcher.poll, watcher)
    if ok and ev then require("keel.cli.run").report(tostring(watcher.path), ev) end
  end
  return (srv ~= nil and srv.http ~= nil) or watcher ~= nil
end

return repl
