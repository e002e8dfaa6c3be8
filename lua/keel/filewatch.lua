-- filewatch.lua — w:watch(): the scene file on disk and the live world never drift silently
-- (design/editing.md "Watching the scene file"). poll() stats the file once per interval and
-- reads it only when the stat moved (times to the nanosecond, size, inode); the content hash
-- decides. Then:
--   * the file holds what the world would write (keel's own save): the checkpoint moves, nothing else;
--   * clean world: w:_rebase(base, new) applies the difference in place, one batch = one history entry;
--   * dirty world: keel merge's own code (keel.core._merge) with base, ours = w:dump(), theirs = new;
--     a clean merge is applied in place the same way, conflicts apply nothing until resolve();
--   * a file that is missing or does not load: its diagnostics, nothing applied.
-- Kind files (keel.kindfiles, when the program loaded kinds folders) are reloaded as reload() does.
local core = require "keel.core"
local lfs = require "lfs"
local history = require "keel.history"
local invalid = require "keel.core.errors".invalid

local M = {}

local Watcher = {}
Watcher.__index = Watcher

local clock = require "keel.core.channel".clock

local function read(path)
  local f, err = io.open(path, "rb")
  if not f then return nil, err end
  local text, rerr = f:read("a")
  f:close()
  if not text then return nil, rerr end
  return text
end

local function diags_of(e, path)
  if type(e) == "table" and type(e.diagnostics) == "table" and #e.diagnostics > 0 then return e.diagnostics end
  if type(e) == "table" and e.code then
    return { { code = e.code, message = e.message, path = e.path or "", file = path, severity = "error" } }
  end
  return { { code = "IoError", message = tostring(e), path = "", file = path, severity = "error" } }
end

-- The world's saved checkpoint (editing.md): the revision it had when it last matched its file;
-- applying the file's content moves it, as a save does (mark_saved).
local function dirty(self)
  return self.world.dirty
end

local function mark_saved(self)
  self.world:_mark_saved()
  self.checkpoint = self.world.revision
end

-- Applies the change from text `from` to text `to` as one history entry ("reload from disk").
-- Other undo stacks (the channel's) add themselves to watcher.recorders: f(inverse, label).
-- `cached`: `from` is self.base, whose template world self.cache may hold (the last `to`).
local function apply(self, from, to, cached)
  local inverse, changes = self.world:_rebase(from, to, self.path, cached and self.cache or nil)
  if not cached then self.cache = core._rebase_cache() end -- the base changes, not to `to`
  if inverse then
    history._record(self.world, inverse, "reload from disk")
    for _, f in ipairs(self.recorders) do f(inverse, "reload from disk") end
  end
  return changes
end

local stat_sig = core._stat -- mtime and ctime to the nanosecond, size, inode

-- Kind files: a stat signature of every file kindfiles ran and every module they required.
local function kinds_sig()
  local kf = package.loaded["keel.kindfiles"]
  if not kf or #kf.dirs == 0 then return nil end
  local parts = {}
  for _, d in ipairs(kf.dirs) do
    local ok, iter, dir = pcall(lfs.dir, d)
    if ok then
      for name in iter, dir do parts[#parts + 1] = name end
      dir:close()
    end
  end
  for _, f in ipairs(kf.files) do parts[#parts + 1] = stat_sig(f.path) or "-" end
  for _, m in pairs(kf.modules) do parts[#parts + 1] = stat_sig(m.path) or "-" end
  table.sort(parts)
  return table.concat(parts, "|"), kf
end

local function poll_kinds(self)
  local sig, kf = kinds_sig()
  if not sig or sig == self.kinds_sig then return nil end
  local first = self.kinds_sig == nil
  self.kinds_sig = sig
  if first then return nil end
  local errors, saved = {}, kf.stderr
  kf.stderr = { write = function(_, ...) errors[#errors + 1] = table.concat({ ... }):gsub("\n$", "") end }
  local ok, rerun = pcall(kf.reload)
  kf.stderr = saved
  if not ok then errors[#errors + 1] = tostring(rerun); rerun = {} end
  if #rerun == 0 and #errors == 0 then return nil end
  return { kinds = { reloaded = rerun, errors = errors } }
end

-- The new content `text` of the scene file.
local function changed(self, text)
  local w = self.world
  if text == self.base then return nil end
  -- saved by keel since the watcher last matched the file: the file says what the world holds
  if not dirty(self) and self.checkpoint ~= w.saved_revision and not self.pending and text == w:dump() then
    self.base = text
    mark_saved(self)
    self.cache = core._rebase_cache()
    return nil
  end
  if not dirty(self) and not self.pending then
    local ok, n = pcall(apply, self, self.base, text, true)
    if not ok then return { errors = diags_of(n, self.path) } end
    self.base = text
    mark_saved(self)
    -- nothing to apply: keel's own save (the file says what the world holds), or a change of form
    if n == 0 then return nil end
    return { reloaded = true, changes = n }
  end
  local ours = w:dump()
  if text == ours then -- keel's own save (or the same edit made on both sides)
    self.base, self.pending = text, nil
    mark_saved(self)
    self.cache = core._rebase_cache()
    return nil
  end
  local ok, merged, conflicts = pcall(core._merge, self.base, ours, text)
  if not ok then return { errors = diags_of(merged, self.path) } end
  if #conflicts > 0 then
    self.pending = { theirs = text, ours = ours, merged = merged, conflicts = conflicts }
    return { conflicts = conflicts }
  end
  local ok2, n = pcall(apply, self, ours, merged)
  if not ok2 then return { errors = diags_of(n, self.path) } end
  self.base, self.pending = text, nil
  return { merged = true, changes = n }
end

function Watcher:poll()
  if getmetatable(self) ~= Watcher then invalid("watcher:poll: a watcher expected (call it as watcher:poll())") end
  if self.closed then return nil end
  local now = clock()
  if now < self.due then return nil end
  self.due = now + self.interval
  local kinds = poll_kinds(self)
  local sig = stat_sig(self.path)
  if sig == self.sig then return kinds end
  self.sig = sig
  local text, err = read(self.path)
  if not text then
    if self.missing then return kinds end
    self.missing, self.hash = true, nil
    local ev = { errors = diags_of(err or "cannot read " .. self.path, self.path) }
    ev.kinds = kinds and kinds.kinds
    return ev
  end
  self.missing = false
  local h = core._hash(text)
  if h == self.hash then return kinds end
  self.hash = h
  local ev = changed(self, text)
  if ev and kinds then ev.kinds = kinds.kinds end
  return ev or kinds
end

-- resolve("ours" | "theirs" [, paths]): takes that side at the named conflicts (all when paths
-- is nil); when none remain, the merge is applied in place as one history entry.
function Watcher:resolve(take, paths)
  if getmetatable(self) ~= Watcher then invalid("watcher:resolve: a watcher expected (call it as watcher:resolve())") end
  if take ~= "ours" and take ~= "theirs" then
    invalid(("watcher:resolve: \"ours\" or \"theirs\" expected, got %s"):format(tostring(take)))
  end
  if paths ~= nil and type(paths) ~= "table" then invalid("watcher:resolve: paths must be a list of strings") end
  local p = self.pending
  if not p then invalid("watcher:resolve: no conflicts to resolve") end
  local text, remaining = core._merge_take(p.merged, take == "theirs", paths)
  if remaining > 0 then
    local named, left = {}, {}
    for _, path in ipairs(paths or {}) do named[path] = true end
    for _, c in ipairs(p.conflicts) do if not named[c.path] then left[#left + 1] = c end end
    p.merged, p.conflicts = text, left
    return { conflicts = left }
  end
  local n = apply(self, p.ours, text)
  self.base, self.pending = p.theirs, nil
  if text == p.theirs then mark_saved(self) end
  return { merged = true, changes = n }
end

function Watcher:close()
  self.closed = true
end

-- The conflicts waiting for resolve(), or nil.
function Watcher:conflicts()
  return self.pending and self.pending.conflicts
end

function M.watch(w, opts)
  if opts ~= nil and type(opts) ~= "table" then invalid("w:watch: an options table expected, got " .. type(opts)) end
  opts = opts or {}
  if opts.interval ~= nil and (type(opts.interval) ~= "number" or opts.interval < 0) then
    invalid("w:watch: interval must be a number of seconds >= 0")
  end
  local loaded, loaded_rev = core._loaded(w)
  local path = opts.path or w.path or loaded
  if type(path) ~= "string" then invalid("w:watch: the world has no scene file (load it from one)") end
  local base, err = read(path)
  if not base then invalid("w:watch: " .. tostring(err)) end
  local self = setmetatable({
    world = w, path = path, recorders = {}, cache = core._rebase_cache(), interval = opts.interval or 0.25, due = -math.huge,
    base = base, hash = core._hash(base), sig = stat_sig(path),
    checkpoint = w.saved_revision or (path == loaded and loaded_rev) or w.revision,
  }, Watcher)
  self.kinds_sig = kinds_sig()
  return self
end

return M
