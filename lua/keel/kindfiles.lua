-- kindfiles.lua — the kinds directories: runs their *.lua files at start-up and, on reload(), the ones that changed.
-- The keel program calls load(dir) for each kinds directory before freezing the
-- registry; the REPL's reload() is reload() here. One state per Lua state.
local lfs = require "lfs"

local kindfiles = {
  dirs = {},   -- every directory given to load(), in order (a missing one too: reload() looks again)
  files = {},  -- { path =, hash = } per file run, in run order (failed ones too: reload() retries them)
  keys = {},   -- [kind key] = path of the file that first declared it, or true (built in, or not from a file)
  modules = {}, -- [module name] = { path =, hash =, users = { [kind file path] = true } }: shared code the
                --   kind files required from their project (reload() reloads a changed one and its users)
  roots = {},   -- the projects' directories (a kinds directory's parent), absolute, in package.path
  stderr = io.stderr, -- where errors and warnings go
}

local function is_error(v)
  return type(v) == "table" and type(v.code) == "string" and type(v.message) == "string"
end

-- The line of `path` the innermost running call of that file is at, looking from
-- stack level `level` up; nil when none (a tail call leaves no frame of it).
local function line_in(path, level)
  for l = level, math.huge do
    local info = debug.getinfo(l, "Sl")
    if not info then return nil end
    if info.source == "@" .. path and info.currentline > 0 then return info.currentline end
  end
end

-- The error handler of a kind file. An error object (keel.kind's
-- InvalidArgument, ...) carries no position, so it gets the file's line that
-- made the failing call: "FILE:LINE: Code: message"; anything else a traceback.
-- The traceback starts where the error was raised (the handler's caller) and
-- stops at the file's chunk: the frames below it are this module's.
local function handler(path)
  return function(e)
    local msg
    if type(e) == "string" or type(e) == "number" then msg = tostring(e) end
    local mt = getmetatable(e)
    local text = not msg and ((type(mt) == "table" and mt.__tostring and tostring(e))
      or (is_error(e) and (e.code .. ": " .. e.message)))
    if type(text) ~= "string" then
      local tb = debug.traceback(msg or ("(error object is a " .. type(e) .. " value)"), 2)
      local cut = tb:find("\n\t[C]: in function 'xpcall'", 1, true)
      return cut and tb:sub(1, cut - 1) or tb
    end
    if is_error(e) and type(rawget(e, "where")) == "string" then return text end -- "FILE:LINE: Code: message" already
    local line = line_in(path, 3)
    return path .. (line and ":" .. line or "") .. ": " .. text
  end
end

-- keys[key] = value for every registered kind key not there yet. Called
-- before (true) and after (the path) a file runs, it tells which file
-- declared a key (for the freeze's diagnostics and the warning below).
local function note_keys(keel, value)
  for _, k in ipairs(keel.kinds()) do
    if type(k.key) == "string" and kindfiles.keys[k.key] == nil then kindfiles.keys[k.key] = value end
  end
end

-- A hash of the file's content (FNV-1a, 64 bits), or nil when it cannot be read: reload()
-- compares content, so an edit within the same second that keeps the size is seen.
local function content_hash(path)
  local fh = io.open(path, "rb")
  if not fh then return nil end
  local text = fh:read("a")
  fh:close()
  if not text then return nil end
  local h = -3750763034362895579 -- 14695981039346656037 as a signed 64-bit integer
  for i = 1, #text, 64 do
    local chunk = { text:byte(i, math.min(i + 63, #text)) }
    for j = 1, #chunk do h = (h ~ chunk[j]) * 1099511628211 end
  end
  return h
end
kindfiles.content_hash = content_hash

-- `p` absolute and without "./" or a trailing "/", so one directory is one string.
local function absolute(p)
  if p:sub(1, 1) ~= "/" then p = (lfs.currentdir() or ".") .. "/" .. p end
  p = p:gsub("/%./", "/"):gsub("/%.$", ""):gsub("//+", "/")
  if #p > 1 then p = p:gsub("/$", "") end
  return p
end

-- The project of kinds directory `dir` (its parent): its ?.lua and lib/?.lua go at the
-- front of package.path, so kind files can `require` the project's shared modules.
local function add_project(dir)
  local root = absolute(dir):match("^(.*)/[^/]+$")
  if not root or root == "" then root = "/" end
  for _, r in ipairs(kindfiles.roots) do if r == root then return end end
  kindfiles.roots[#kindfiles.roots + 1] = root
  local base = root == "/" and "" or root
  package.path = base .. "/?.lua;" .. base .. "/lib/?.lua;" .. package.path
end

-- The module file `name` resolves to when it lies in one of the projects, else nil.
local function project_module(name)
  if type(name) ~= "string" then return nil end
  local path = package.searchpath(name, package.path)
  if not path then return nil end
  path = absolute(path)
  for _, r in ipairs(kindfiles.roots) do
    if path:sub(1, #r + 1) == (r == "/" and "/" or r .. "/") then return path end
  end
end

-- Runs one file with keel.kind watched: two files declaring one key is legal
-- (the later replaces the earlier) but almost never meant, so it is said; so
-- are the warnings of a redeclaration.
-- Returns true, or false after printing the error under `prefix`.
local function run(f, prefix)
  local path = f.path
  f.hash = content_hash(path)
  local keel = require "keel"
  note_keys(keel, true)
  local real = keel.kind
  local function watched(spec, ...)
    local key = type(spec) == "table" and spec.key
    local by = type(key) == "string" and kindfiles.keys[key]
    if type(by) == "string" and by ~= path then
      kindfiles.stderr:write("keel: ", path, ": warning: ", key, " was already declared by ", by,
        "; this declaration replaces it\n")
    end
    local got, warnings = real(spec, ...)
    -- a redeclaration's warnings (a value reset to its default, a component left unadopted)
    local line = line_in(path, 3)
    for _, w in ipairs(warnings or {}) do
      kindfiles.stderr:write(prefix, path, line and ":" .. line or "", ": warning: ", w.message, "\n")
    end
    return got, warnings
  end
  keel.kind = watched
  -- the project's modules it requires (directly or through each other) are noted as its own
  local real_require = require
  local function noting(name, ...)
    local mpath = project_module(name)
    if mpath then
      local m = kindfiles.modules[name]
      if not m or m.path ~= mpath then
        m = { path = mpath, users = m and m.users or {} }
        kindfiles.modules[name] = m
      end
      if package.loaded[name] == nil or not m.hash then m.hash = content_hash(mpath) end
      m.users[path] = true
    end
    return real_require(name, ...)
  end
  _G.require = noting
  local chunk, err = loadfile(path)
  local ok = chunk ~= nil
  if ok then ok, err = xpcall(chunk, handler(path)) end
  if _G.require == noting then _G.require = real_require end
  if keel.kind == watched then keel.kind = real end
  note_keys(keel, path)
  if not ok then kindfiles.stderr:write(prefix, tostring(err), "\n") end
  return ok
end

-- The *.lua files of `dir` (not dot-files), sorted by name; nil, reason when it cannot be read.
local function lua_files(dir)
  local ok, iter, state, ctl, closing = pcall(lfs.dir, dir)
  if not ok then
    local reason = tostring(iter)
    local head = "cannot open " .. dir .. ": "
    if reason:sub(1, #head) == head then reason = reason:sub(#head + 1) end
    return nil, reason
  end
  local found = {}
  for name in iter, state, ctl, closing do
    if name:sub(1, 1) ~= "." and #name > 4 and name:sub(-4) == ".lua" then found[#found + 1] = dir .. "/" .. name end
  end
  table.sort(found)
  return found
end

-- Runs every *.lua file of `dir` in name order, printing errors to stderr.
-- Returns the number that failed (a directory that cannot be read counts as one).
function kindfiles.load(dir)
  -- once per directory: a spec's load("kinds") under the keel program, which loaded them, runs nothing
  for _, d in ipairs(kindfiles.dirs) do
    if absolute(d) == absolute(dir) then return 0 end
  end
  kindfiles.dirs[#kindfiles.dirs + 1] = dir
  add_project(dir)
  local found, reason = lua_files(dir)
  if not found then
    kindfiles.stderr:write("keel: kinds directory ", dir, ": ", reason, "\n")
    return 1
  end
  local failed = 0
  for _, path in ipairs(found) do
    local f = { path = path }
    kindfiles.files[#kindfiles.files + 1] = f
    if not run(f, "keel: ") then failed = failed + 1 end
  end
  return failed
end

-- Re-runs the files whose content changed since they last ran, those that required a
-- project module (?.lua, lib/?.lua beside the kinds directory) that changed,
-- and any new *.lua file in the directories. Returns the paths run again
-- without error (errors are printed as "reload: ...").
function kindfiles.reload()
  local known = {}
  for _, f in ipairs(kindfiles.files) do known[f.path] = true end
  for _, dir in ipairs(kindfiles.dirs) do
    for _, path in ipairs(lua_files(dir) or {}) do
      if not known[path] then
        known[path] = true
        kindfiles.files[#kindfiles.files + 1] = { path = path }
      end
    end
  end
  -- a changed shared module: every module its users required is loaded afresh (one module may
  -- hold another's functions), and the users run again
  local users = {}
  for _, m in pairs(kindfiles.modules) do
    local hash = content_hash(m.path)
    if hash and hash ~= m.hash then
      for u in pairs(m.users) do users[u] = true end
    end
  end
  for name, m in pairs(kindfiles.modules) do
    for u in pairs(m.users) do
      if users[u] then
        package.loaded[name] = nil
        m.users = {} -- noted again as the users run
        break
      end
    end
  end
  local rerun = {}
  for _, f in ipairs(kindfiles.files) do
    local hash = content_hash(f.path)
    if ((hash and hash ~= f.hash) or users[f.path]) and run(f, "reload: ") then
      rerun[#rerun + 1] = f.path
    end
  end
  return rerun
end

-- The kind file that first declared `key`, or nil (built in, or not from a file).
function kindfiles.declared_by(key)
  local by = kindfiles.keys[key]
  return type(by) == "string" and by or nil
end

return kindfiles
