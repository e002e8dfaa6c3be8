-- channel.lua — the live channel's methods (DESIGN channel.md): JSON-RPC 2.0 over a world,
-- with no transport. keel.serve (lua/keel/serve.lua) carries it over HTTP; `keel mcp` over stdio.
--
--   local ch = require "keel.channel".new(w, { scene = "scenes/arena.yaml" })
--   ch:handle(json_text)        --> response text ("" when the request was only notifications)
--   ch:call(method, params)     --> result table | raises a keel error object (or a params error)
--
-- Edits go through the commands of the Lua API (kind rules, ranges, versions), each call one
-- entry of the channel's own history (history.undo / history.redo), as keel.history records.
local core = require "keel.core"
local json = require "keel.json"
local clock = require "keel.core.channel".clock
local realpath = require "keel.core.channel".realpath
-- LuaFileSystem when it loads (keel's dependency; a host embedding only keel.core may lack it)
local has_lfs, lfs = pcall(require, "lfs")

local M = {}

local null = json.null
local array = json.array
M.null, M.array = null, array

M.PARSE_ERROR, M.INVALID_REQUEST, M.METHOD_NOT_FOUND, M.INVALID_PARAMS, M.INTERNAL_ERROR, M.KEEL_ERROR =
  -32700, -32600, -32601, -32602, -32603, -32000
M.LIST_MAX, M.LIST_DEFAULT = 1000, 100

local Channel = {}
Channel.__index = Channel

-- A bad params error: raised as a table the handler turns into -32602.
local ParamsError = {}
local function bad_params(fmt, ...)
  error(setmetatable({ message = fmt:format(...) }, ParamsError), 0)
end

-- A keel failure of the channel's own (an object not found...), shaped like the binding's errors.
local function keel_error(code, fmt, ...)
  local msg = fmt:format(...)
  error({ code = code, message = msg, diagnostics = { { code = code, message = msg, path = "", severity = "error" } } }, 0)
end

local function is_keel_error(e)
  return type(e) == "table" and type(e.code) == "string" and type(e.message) == "string"
end

-- ---- values to JSON: handles by UUID, arrays kept arrays ----

local function jsonable(v, depth)
  local t = type(v)
  if t == "userdata" then
    local mt = getmetatable(v)
    local name = type(mt) == "table" and rawget(mt, "__name")
    if name == "keel.Entity" then return v.uuid end
    if v == null then return null end
    return tostring(v)
  elseif t == "table" then
    if (depth or 0) > 32 then return null end
    local out = {}
    local n = #v
    for k, x in pairs(v) do out[k] = jsonable(x, (depth or 0) + 1) end
    if n > 0 then array(out) end
    return out
  end
  return v
end
M.jsonable = jsonable

-- JSON null (from a request) is Lua nil.
local function from_json(v)
  if v == null then return nil end
  if type(v) == "table" then
    local out = {}
    for k, x in pairs(v) do out[k] = from_json(x) end
    return out
  end
  return v
end

-- ---- params ----

local function is_json_array(t)
  return getmetatable(t) == json.array_mt
end

M.INTEGER_MAX = 2147483647 -- the largest integer param of any method
M.MAX_FRAMES = 1000 -- the frames one request or batch may step (world.step): ~50 ms of the demo

-- An internal error's text without its Lua position ("/path/to/file.lua:12: "): a client never
-- sees where keel is installed.
local function internal_text(e)
  local s = tostring(type(e) == "table" and e.message or e)
  return (s:gsub("^[^\n]-:%d+: ", ""))
end
M.internal_text = internal_text

-- A method's params spec { name = "string" | "integer" | "number" | "boolean" | "object" | "array" |
-- "ref" | "any", ... } (a trailing "?" makes one optional), parsed once into what check_params walks.
local compiled = setmetatable({}, { __mode = "k" })
local function compile(spec)
  local c = compiled[spec]
  if c then return c end
  c = { list = {}, known = {} }
  for name, ty in pairs(spec) do
    local key, opt = name:match("^(.-)(%??)$")
    c.list[#c.list + 1] = { key = key, ty = ty, optional = opt == "?" }
    c.known[key] = true
  end
  compiled[spec] = c
  return c
end

local type_ok = {
  string = function(v) return type(v) == "string" end,
  ref = function(v) return type(v) == "string" end,
  integer = function(v) return math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v) and v == v) end,
  number = function(v) return type(v) == "number" end,
  boolean = function(v) return type(v) == "boolean" end,
  object = function(v) return type(v) == "table" and not is_json_array(v) end,
  array = function(v) return type(v) == "table" and (is_json_array(v) or next(v) == nil) end,
  any = function() return true end,
}

-- Checks params against the method's spec; unknown names are refused too.
local function check_params(params, spec)
  local c = compile(spec)
  if params == nil or params == null then params = {} end
  if type(params) ~= "table" then bad_params("params must be an object") end
  if is_json_array(params) then
    if #params > 0 then bad_params("params must be an object (by name), not an array") end
    params = {}
  end
  for k in pairs(params) do
    if not c.known[k] then bad_params("unknown param '%s'", tostring(k)) end
  end
  for _, p in ipairs(c.list) do
    local key, ty = p.key, p.ty
    local v = params[key]
    if v == nil or v == null then
      if not p.optional then bad_params("missing param '%s'", key) end
      params[key] = nil
    else
      if not type_ok[ty](v) then
        bad_params("param '%s' must be %s %s", key, ty == "integer" and "an" or "a", ty == "ref" and "UUID, name or \"root\"" or ty)
      end
      if ty == "integer" then
        -- every integer param is a count, an index, a slot or a frame: checked before any use, so
        -- no `since + 1` wraps and no loop runs from a huge negative start
        local i = math.tointeger(v)
        if i == nil or i < 0 or i > M.INTEGER_MAX then
          bad_params("param '%s' must be an integer in 0..%d", key, M.INTEGER_MAX)
        end
        params[key] = i
      end
    end
  end
  return params
end
M.check_params = check_params

-- ---- objects ----

function Channel:object(ref)
  local w = self.world
  if ref == "root" then return w.root end
  local e = w:find(ref)
  if not e then keel_error("NotFound", "no object '%s' (a UUID, a name or \"root\")", ref) end
  return e
end

local function parent_uuid(e)
  local p = e.parent
  return p and p.uuid or null
end

local function kinds_of(e)
  local ks = {}
  for _, c in ipairs(e:components()) do ks[#ks + 1] = c.kind end
  return array(ks)
end

local function summary(e)
  return { uuid = e.uuid, name = e.name, parent = parent_uuid(e), enabled = e.enabled,
           children = #e:children(), kinds = kinds_of(e) }
end

local function component_json(c, with_body)
  local t = { kind = c.kind, slot = c.slot, version = c.version }
  if with_body then
    t.loaded, t.enabled = c.loaded, c.enabled
    if not c.loaded then t.unknown = true end
  end
  t.body = jsonable(c:body())
  return t
end
M.component_json = component_json

-- ---- the channel's history: one entry per edit call, each a list of inverse steps ----
-- A step is a keel.Command (applied with w:_apply, which returns its inverse) or a function
-- returning its own inverse step.

local function apply_step(w, step)
  if type(step) == "function" then return step() end
  return w:_apply(step)
end

-- An entry keeps the revision right after its call (at) and the one before it (back, read when
-- the call began): undo puts that back when nothing else changed the world meanwhile, so undoing
-- back to the saved checkpoint makes the world clean again (design/editing.md).
function Channel:record(what, steps)
  local h = self.history
  h.undos[#h.undos + 1] = { what = what, steps = steps, at = self.world.revision, back = self.call_revision }
  h.redos = {}
end

local function replay(self, from, to)
  local entry = from[#from]
  if not entry then return false end
  local was = self.world.revision
  local inverse = {}
  local ok, err = pcall(function()
    for i = #entry.steps, 1, -1 do inverse[#inverse + 1] = apply_step(self.world, entry.steps[i]) end
  end)
  if not ok then -- a step refused: the ones applied are taken back, the entry stays where it was
    for i = #inverse, 1, -1 do pcall(apply_step, self.world, inverse[i]) end
    error(err, 0)
  end
  from[#from] = nil
  local back
  if entry.back and entry.at == was then
    self.world:_set_revision(entry.back)
    back = was
  end
  to[#to + 1] = { what = entry.what, steps = inverse, at = self.world.revision, back = back }
  self.list_cache = nil -- a revision seen before may now stand for other contents
  return entry.what
end

-- ---- methods ----

local methods = {}
M.methods = methods

methods["world.info"] = { params = {}, run = function(self)
  local w = self.world
  return { name = w.name, uuid = w.uuid, revision = w.revision, frame = self.frame, entities = w:count(),
           paused = self.paused, errors = #w:errors(), frame_ms = self.frame_ms,
           dirty = w.dirty, saved_revision = w.saved_revision,
           conflicts = self.file_watcher and self.file_watcher:conflicts() or nil }
end }

-- The scene file watcher (w:watch(), keel serve --watch): its reloads are undo entries here too.
function Channel:watch_file(watcher)
  self.file_watcher = watcher
  watcher.recorders[#watcher.recorders + 1] = function(inverse, what) self:record(what, { inverse }) end
end

methods["world.resolve"] = { params = { take = "string", ["paths?"] = "array" }, run = function(self, p)
  if not self.file_watcher then keel_error("InvalidOperation", "world.resolve: the scene file is not watched") end
  if p.take ~= "ours" and p.take ~= "theirs" then bad_params("take must be \"ours\" or \"theirs\"") end
  if not self.file_watcher:conflicts() then keel_error("InvalidOperation", "world.resolve: no conflicts to resolve") end
  for _, path in ipairs(p.paths or {}) do
    if type(path) ~= "string" then bad_params("paths must be strings") end
  end
  local ev = self.file_watcher:resolve(p.take, p.paths)
  return { merged = ev.merged or false, conflicts = ev.conflicts or {} }
end }

-- The walk in run order, cached per revision and filter: paging 100k entities is one walk.
function Channel:listing(p)
  local w = self.world
  local key = table.concat({ tostring(p.parent), tostring(p.kind), tostring(p.name) }, "\0")
  local cache = self.list_cache
  if cache and cache.revision == w.revision and cache.key == key then return cache.items end
  local items = {}
  local parent = p.parent and self:object(p.parent)
  local source
  if parent then source = parent:children() end
  local function keep(e)
    if p.name and not (e.name == p.name or e.name:find(p.name, 1, true)) then return false end
    if p.kind and not e:has(p.kind) then return false end
    return true
  end
  if source then
    for _, e in ipairs(source) do if keep(e) then items[#items + 1] = e end end
  else
    for e in w:entities() do if keep(e) then items[#items + 1] = e end end
  end
  self.list_cache = { revision = w.revision, key = key, items = items }
  return items
end

methods["object.list"] = { params = { ["parent?"] = "ref", ["kind?"] = "string", ["name?"] = "string",
                                      ["offset?"] = "integer", ["limit?"] = "integer" }, run = function(self, p)
  local offset, limit = p.offset or 0, p.limit or M.LIST_DEFAULT
  if offset < 0 then bad_params("offset must be >= 0") end
  if limit < 1 or limit > M.LIST_MAX then bad_params("limit must be 1..%d", M.LIST_MAX) end
  local items = self:listing(p)
  local out = {}
  for i = offset + 1, math.min(#items, offset + limit) do
    local e = items[i]
    if e:alive() then out[#out + 1] = summary(e) end
  end
  return { entities = array(out), total = #items, offset = offset }
end }

methods["object.get"] = { params = { object = "ref" }, run = function(self, p)
  local e = self:object(p.object)
  local t = summary(e)
  local comps = {}
  for _, c in ipairs(e:components()) do comps[#comps + 1] = component_json(c, true) end
  t.components = array(comps)
  t.revision = self.world.revision -- what it was read at: events with a higher revision are newer
  return t
end }

-- The same data as `keel kinds --json`.
local function kind_json(k)
  local flags = {}
  for _, f in ipairs { "nosave", "editor_only", "root_only", "not_on_root" } do
    if k[f] then flags[#flags + 1] = f end
  end
  local fields = {}
  for _, f in ipairs(k.fields or {}) do
    fields[#fields + 1] = { key = f.key, type = f.type, default = f.default == nil and null or jsonable(f.default),
      min = f.min or null, max = f.max or null, choices = f.choices and array(f.choices) or null,
      transient = f.transient or false, readonly = f.readonly or false, hidden = f.hidden or false,
      runtime = f.runtime or nil, tooltip = f.tooltip or null, derived = f.derived or nil }
  end
  return { key = k.key, display = k.display, category = k.category, version = k.version,
    multiplicity = k.multiplicity, max = k.max or null, requires = array(k.requires or {}),
    rejects = array(k.rejects or {}), builtin = k.builtin, flags = array(flags), fields = array(fields),
    tooltip = k.tooltip or null, summon = k.summon == false and false or nil,
    sync = k.sync and { interval = k.sync.interval, radius = k.sync.radius } or nil }
end
M.kind_json = kind_json

methods["component.kinds"] = { params = {}, run = function()
  local out = {}
  for _, k in ipairs(core.kinds()) do out[#out + 1] = kind_json(k) end
  return array(out)
end }

local function get_component(self, p)
  local e = self:object(p.object)
  local c = e:get(p.kind, p.slot)
  if not c then
    keel_error("NotFound", "no component '%s'%s on object '%s'", p.kind, p.slot and ("[" .. p.slot .. "]") or "", p.object)
  end
  return c, e
end

methods["component.get"] = { params = { object = "ref", kind = "string", ["slot?"] = "integer" }, run = function(self, p)
  return component_json((get_component(self, p)))
end }

methods["component.set"] = { params = { object = "ref", kind = "string", ["slot?"] = "integer", fields = "object" },
  run = function(self, p)
  local c = get_component(self, p)
  local names = {}
  for k in pairs(p.fields) do names[#names + 1] = k end
  table.sort(names)
  local steps = {}
  -- one field at a time through the recording write; a refusal puts back the ones already written
  local ok, err = pcall(function()
    for _, k in ipairs(names) do steps[#steps + 1] = c:_set(k, from_json(p.fields[k])) end
  end)
  if not ok then
    for i = #steps, 1, -1 do self.world:_apply(steps[i]) end
    error(err, 0)
  end
  if #steps > 0 then self:record("component.set", steps) end
  return { version = c.version }
end }

-- summon = false: such a kind is added and spawned by the game only, never from outside
local function refuse_unsummonable(key)
  local info = type(key) == "string" and core.kind_info(key)
  if info and info.summon == false then keel_error("InvalidOperation", "kind %s cannot be summoned", key) end
end

methods["component.add"] = { params = { object = "ref", kind = "string", ["slot?"] = "integer", ["body?"] = "object" },
  run = function(self, p)
  refuse_unsummonable(p.kind)
  local e = self:object(p.object)
  local c, inverse = e:_add(p.kind, from_json(p.body), p.slot)
  self:record("component.add", { inverse })
  return component_json(c)
end }

methods["component.remove"] = { params = { object = "ref", kind = "string", ["slot?"] = "integer" }, run = function(self, p)
  local e = self:object(p.object)
  local body, inverse = e:_remove(p.kind, p.slot)
  self:record("component.remove", { inverse })
  return { body = jsonable(body) }
end }

methods["component.enable"] = { params = { object = "ref", kind = "string", ["slot?"] = "integer", enabled = "boolean" },
  run = function(self, p)
  local c = get_component(self, p)
  local w, uuid, kind, slot = self.world, self:object(p.object).uuid, c.kind, c.slot
  local function setter(value)
    local function step()
      local e = w:find(uuid)
      local cc = e and e:get(kind, slot)
      if not cc then keel_error("NotFound", "no component '%s'[%d] on %s", kind, slot, uuid) end
      local old = cc.enabled
      cc.enabled = value
      return setter(old)
    end
    return step
  end
  local old = c.enabled
  c.enabled = p.enabled
  if old ~= p.enabled then self:record("component.enable", { setter(old) }) end
  return { version = c.version, enabled = c.enabled }
end }

local function spawn_spec(self, p)
  local spec = { name = p.name }
  if p.parent then spec.parent = self:object(p.parent) end
  if p.components then
    local comps = {}
    for i, item in ipairs(p.components) do
      if type(item) == "string" then
        refuse_unsummonable(item)
        comps[#comps + 1] = item
      elseif type(item) == "table" and type(item.kind) == "string" then
        for k in pairs(item) do -- a misspelt "body" must not spawn the kind's defaults silently
          if k ~= "kind" and k ~= "body" then bad_params("components[%d]: unknown key '%s' (kind, body)", i, tostring(k)) end
        end
        refuse_unsummonable(item.kind)
        local one = { item.kind }
        local body = item.body
        if body ~= nil and (type(body) ~= "table" or is_json_array(body)) then
          bad_params("components[%d].body must be an object", i)
        end
        for k, v in pairs(from_json(body) or {}) do one[k] = v end
        comps[#comps + 1] = one
      else
        bad_params("components[%d] must be a kind key or { kind, body? }", i)
      end
    end
    spec.components = comps
  end
  return spec
end

methods["object.spawn"] = { params = { ["name?"] = "string", ["parent?"] = "ref", ["components?"] = "array" },
  run = function(self, p)
  local e, inverse = self.world:_spawn(spawn_spec(self, p))
  self:record("object.spawn", { inverse })
  return { uuid = e.uuid }
end }

methods["object.destroy"] = { params = { object = "ref" }, run = function(self, p)
  local e = self:object(p.object)
  local uuid = e.uuid
  self:record("object.destroy", { e:_destroy() })
  return { uuid = uuid }
end }

methods["object.reparent"] = { params = { object = "ref", ["parent?"] = "ref" }, run = function(self, p)
  local e = self:object(p.object)
  local parent = p.parent and self:object(p.parent) or self.world.root
  self:record("object.reparent", { e:_reparent(parent) })
  return { uuid = e.uuid }
end }

methods["object.rename"] = { params = { object = "ref", name = "string" }, run = function(self, p)
  local e = self:object(p.object)
  self:record("object.rename", { e:_rename(p.name) })
  return { uuid = e.uuid }
end }

-- The scene settings (registry.md): the tree, its arrays sent as JSON arrays.
local function settings_tree(w)
  local t = w:_settings()
  for _, v in pairs(t.grid) do if type(v) == "table" then array(v) end end
  return t
end

methods["settings.get"] = { params = {}, run = function(self)
  return settings_tree(self.world)
end }

methods["settings.set"] = { params = { path = "string", value = "any" }, run = function(self, p)
  local v = p.value
  if math.type(v) == "float" and v == math.floor(v) and p.path:match("major_line_every$") then v = math.tointeger(v) end
  self:record("settings.set", { self.world:_set_setting(p.path, v) })
  return settings_tree(self.world)
end }

methods["object.copy"] = { params = { object = "ref" }, run = function(self, p)
  return { text = self:object(p.object):dump() }
end }

methods["object.paste"] = { params = { text = "string", ["parent?"] = "ref" }, run = function(self, p)
  local parent = p.parent and self:object(p.parent) or nil
  local roots, inverse = self.world:_paste(p.text, parent)
  self:record("object.paste", { inverse })
  local uuids = {}
  for i, e in ipairs(roots) do uuids[i] = e.uuid end
  return { uuids = array(uuids) }
end }

methods["history.undo"] = { params = {}, run = function(self)
  return replay(self, self.history.undos, self.history.redos)
end }

methods["history.redo"] = { params = {}, run = function(self)
  return replay(self, self.history.redos, self.history.undos)
end }

methods["world.pause"] = { params = {}, run = function(self)
  self.paused = true
  return { frame = self.frame, paused = true }
end }

methods["world.resume"] = { params = {}, run = function(self)
  self.paused = false
  return { frame = self.frame, paused = false }
end }

methods["world.step"] = { params = { ["frames?"] = "integer", ["dt?"] = "number" }, run = function(self, p)
  local frames = p.frames or 1
  if frames < 1 or frames > self.max_frames then bad_params("frames must be 1..%d", self.max_frames) end
  -- one text (a request or a whole batch) steps at most max_frames: the server answers nobody
  -- else while it steps
  local stepped = self.text_frames or 0
  if stepped + frames > self.max_frames then
    bad_params("one request or batch steps at most %d frames (%d stepped already)", self.max_frames, stepped)
  end
  self.text_frames = stepped + frames
  if not self.paused then keel_error("InvalidOperation", "world.step needs a paused world (world.pause first)") end
  if self.stepping then keel_error("InvalidOperation", "world.step cannot run inside a step") end
  local dt = p.dt or self.dt
  if type(dt) ~= "number" or not (dt >= 0) then bad_params("dt must be a number >= 0") end
  for _ = 1, frames do self:step(dt) end
  return { frame = self.frame }
end }

-- ---- play mode (editing.md, "Keeping changes made in play mode") ----

methods["world.play"] = { params = {}, run = function(self)
  self.world:play()
  return { playing = true }
end }

-- world.info also says whether the world is playing (the inspector's Play/Stop buttons).
local info_run = methods["world.info"].run
methods["world.info"].run = function(self, p)
  local t = info_run(self, p)
  t.playing = self.world.playing
  return t
end

-- The kept state written back is one entry of the channel's history ("keep play changes").
methods["world.stop"] = { params = {}, run = function(self)
  local refused, inverse = self.world:stop()
  if inverse then self:record("keep play changes", { inverse }) end
  self.list_cache = nil -- every handle changed
  return { playing = false, refused = array(jsonable(refused)) }
end }

-- `keep` false takes a keep back (the inspector's toggle).
methods["play.keep"] = { params = { object = "ref", ["kind?"] = "string", ["slot?"] = "integer", ["keep?"] = "boolean" },
  run = function(self, p)
  local w = self.world
  if not w.playing then keel_error("InvalidOperation", "play.keep works only while the world is playing (world.play first)") end
  local e = self:object(p.object)
  local on = p.keep ~= false
  if on then w:keep(e, p.kind, p.slot) else w:_unkeep(e, p.kind, p.slot) end
  return { object = e.uuid, kind = p.kind or null, slot = p.slot or null, keep = on }
end }

-- p with "." and ".." resolved; nil when it climbs above where it starts.
local function normalize(p)
  local parts = {}
  for part in p:gmatch("[^/]+") do
    if part == ".." then
      if #parts == 0 then return nil end
      parts[#parts] = nil
    elseif part ~= "." then
      parts[#parts + 1] = part
    end
  end
  return (p:sub(1, 1) == "/" and "/" or "") .. table.concat(parts, "/")
end

-- A path under the scene's folder (relative ones are taken from there), or nil.
local function inside(dir, path)
  local ndir = normalize(dir)
  local norm = normalize(path:sub(1, 1) == "/" and path or (dir .. "/" .. path))
  if not ndir or not norm then return nil end
  if ndir == "" then -- the current directory
    if norm == "" or norm:sub(1, 1) == "/" then return nil end
    return norm
  end
  local prefix = ndir == "/" and "/" or ndir .. "/"
  if norm:sub(1, #prefix) ~= prefix or #norm == #prefix then return nil end
  return norm
end
M.inside = inside

-- Whether a file at `target` (inside `dir` by its text) really lands inside `dir`: its folder's
-- real path is under dir's, and a symlink as the file (a dangling one too) points in there.
local function lands_inside(dir, target)
  local real_dir = realpath(dir)
  if not real_dir then return true end -- no such folder: the save itself says so
  local function under(q) return q == real_dir or q:sub(1, #real_dir + 1) == real_dir .. "/" end
  local parent = target:match("^(.*)/[^/]*$") or "."
  local real_parent = realpath(parent == "" and "/" or parent)
  if real_parent and not under(real_parent) then return false end
  local real_target = realpath(target) -- nil when the file does not exist yet
  local link = has_lfs and lfs.symlinkattributes(target, "mode") == "link"
  return not ((real_target or link) and not (real_target and under(real_target)))
end

-- inside() by resolved directories: a path that names the scene's folder another way (through
-- a symlink, or the folder's real path where the scene was given through a link) is inside too.
local function inside_resolved(dir, path)
  local real_dir = realpath(dir)
  local full = path:sub(1, 1) == "/" and path or (dir .. "/" .. path)
  local parent, base = full:match("^(.*)/([^/]+)$")
  if not (real_dir and parent and base ~= "." and base ~= "..") then return nil end
  local real_parent = realpath(parent == "" and "/" or parent)
  if not real_parent then return nil end
  if real_parent ~= real_dir and real_parent:sub(1, #real_dir + 1) ~= real_dir .. "/" then return nil end
  return real_parent .. "/" .. base
end

methods["world.save"] = { params = { ["path?"] = "string" }, run = function(self, p)
  if self.save == false then keel_error("Unsupported", "this channel does not save") end
  local scene = self.scene
  local dir = scene and (scene:match("^(.*)/[^/]*$") or ".") or "."
  local path = p.path or scene
  if not path then bad_params("this world has no scene file: give a path") end
  local target = inside(dir, path) or inside_resolved(dir, path)
  if not target then keel_error("InvalidArgument", "world.save writes only inside the scene's folder (%s), not '%s'", dir, path) end
  if not lands_inside(dir, target) then
    keel_error("InvalidArgument", "world.save writes only inside the scene's folder (%s): '%s' leads outside it", dir, path)
  end
  -- the scene's own file moves the checkpoint (w.dirty); another path is a copy
  local own = scene and (target == scene or target == inside_resolved(dir, scene))
  local ok, err = self.world:save(target, own and { adopt = true } or nil)
  if not ok then error(err, 0) end
  return { path = target }
end }

methods["world.errors"] = { params = { ["since?"] = "integer" }, run = function(self, p)
  local errs = self.world:errors()
  local out = {}
  for i = (p.since or 0) + 1, #errs do out[#out + 1] = jsonable(errs[i]) end
  return array(out)
end }

-- ---- frame statistics (design/profiler.md) ----

-- w:stats() for JSON: its lists stay arrays when empty.
function M.stats_json(w)
  local s = w:stats()
  for _, k in ipairs({ "phases", "systems", "kinds", "history" }) do array(s[k]) end
  for _, v in pairs(s.phase_history) do array(v) end
  return s
end

-- `profiling` turns collecting on or off first (the inspector's Profiler tab).
methods["world.stats"] = { params = { ["profiling?"] = "boolean" }, run = function(self, p)
  if p.profiling ~= nil then self.world.profiling = p.profiling end
  return M.stats_json(self.world)
end }

-- ---- the channel ----

-- The scene's path made absolute once, at the start: world.save resolves its paths against the
-- scene's folder, so a relative one ("scenes/demo.yaml", "../x.yaml") must not be taken twice.
local function absolute(path)
  if type(path) ~= "string" or path:sub(1, 1) == "/" then return path end
  local cwd = has_lfs and lfs.currentdir() or os.getenv("PWD")
  if not cwd then return path end
  return normalize(cwd .. "/" .. path) or path
end

function M.new(w, opts)
  opts = opts or {}
  local self = setmetatable({ world = w, scene = absolute(opts.scene), frame = 0, dt = opts.dt or 1 / 60,
    paused = opts.paused or false, save = opts.save, max_frames = opts.max_frames or M.MAX_FRAMES,
    history = { undos = {}, redos = {} } }, Channel)
  return self
end

-- One frame of the world, counted (the server's frame loop and world.step).
function Channel:step(dt)
  self.stepping = true
  local t0 = clock()
  local ok, err = pcall(self.world.step, self.world, dt or self.dt)
  self.frame_ms = (clock() - t0) * 1000 -- the inspector's frame-time graph (world.info, deltas)
  self.stepping = false
  if not ok then error(err, 0) end
end

-- Called by whoever notices a step starting (the server's step hook).
function Channel:on_step() self.frame = self.frame + 1 end

-- The revision as a call begins: an edit's history entry goes back to it (Channel:record).
local function run_method(self, m, params)
  local ok, rev = pcall(function() return self.world.revision end)
  self.call_revision = ok and rev or nil
  return m.run(self, check_params(params, m.params))
end

-- method, params -> result; raises a keel error object, or a ParamsError table.
function Channel:call(method, params)
  local m = methods[method]
  if not m then keel_error("NotFound", "no method '%s'", tostring(method)) end
  return run_method(self, m, params)
end

local function err_response(id, code, message, data)
  return { jsonrpc = "2.0", id = id == nil and null or id, error = { code = code, message = message, data = data } }
end
M.err_response = err_response

local function valid_id(id)
  return id == nil or id == null or type(id) == "string" or type(id) == "number"
end

-- One request table -> a response table, or nil for a notification.
function Channel:answer(req)
  if type(req) ~= "table" or is_json_array(req) then
    return err_response(nil, M.INVALID_REQUEST, "Invalid Request: not an object")
  end
  local id = req.id
  if not valid_id(id) then return err_response(nil, M.INVALID_REQUEST, "Invalid Request: bad id") end
  if req.jsonrpc ~= "2.0" then return err_response(id, M.INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"") end
  if type(req.method) ~= "string" then return err_response(id, M.INVALID_REQUEST, "Invalid Request: method must be a string") end
  if req.params ~= nil and req.params ~= null and type(req.params) ~= "table" then
    return err_response(id, M.INVALID_REQUEST, "Invalid Request: params must be an object or an array")
  end
  local notify = id == nil
  local m = methods[req.method]
  if not m then
    if notify then return nil end
    return err_response(id, M.METHOD_NOT_FOUND, "Method not found: " .. req.method)
  end
  local ok, res = pcall(run_method, self, m, req.params)
  if notify then return nil end
  if ok then
    if res == nil then res = null end
    return { jsonrpc = "2.0", id = id, result = res }
  end
  if getmetatable(res) == ParamsError then return err_response(id, M.INVALID_PARAMS, "Invalid params: " .. res.message) end
  if is_keel_error(res) then
    local diags = {}
    for i, d in ipairs(type(res.diagnostics) == "table" and res.diagnostics or {}) do diags[i] = jsonable(d) end
    return err_response(id, M.KEEL_ERROR, res.message, { code = res.code, diagnostics = array(diags) })
  end
  return err_response(id, M.INTERNAL_ERROR, "Internal error: " .. internal_text(res))
end

-- The response to a text keel.json would not decode: valid JSON nested too deep is a request
-- keel refuses (-32600), not text it could not read (-32700).
function M.decode_failure(perr)
  perr = tostring(perr)
  if perr:find("^nested deeper than") then
    return err_response(nil, M.INVALID_REQUEST, "Invalid Request: nesting too deep (" .. perr .. ")")
  end
  return err_response(nil, M.PARSE_ERROR, "Parse error: " .. perr)
end

-- JSON-RPC text -> response text ("" when nothing is to be answered).
function Channel:handle(text)
  self.text_frames = 0
  local req, perr = json.decode(text)
  local out
  if req == nil then
    out = M.decode_failure(perr)
  elseif type(req) == "table" and is_json_array(req) then
    if #req == 0 then
      out = err_response(nil, M.INVALID_REQUEST, "Invalid Request: empty batch")
    else
      local list = {}
      for _, r in ipairs(req) do list[#list + 1] = self:answer(r) end
      if #list == 0 then return "" end
      out = array(list)
    end
  else
    out = self:answer(req)
    if out == nil then return "" end
  end
  local ok, s = pcall(json.encode, out)
  if ok then return s end
  return json.encode(err_response(type(req) == "table" and valid_id(req.id) and req.id or nil,
    M.INTERNAL_ERROR, "Internal error: " .. internal_text(s)))
end


-- ---- replay.* (design/replay.md): a served replay's timeline; ch.replay is set by keel.serve(rp) ----
local function the_replay(self)
  if not self.replay then keel_error("InvalidOperation", "no replay is served (keel replay FILE --serve, keel.serve(rp))") end
  return self.replay
end

local function replay_info(self)
  local rp = the_replay(self)
  return { frames = rp.frames, frame = rp.frame, keyframes = array(rp.keyframes), diverged = rp.diverged,
           differences = rp.diverged and array(rp.differences) or nil, truncated = rp.truncated }
end

-- The served world is the replay's: a seek restores it in place (its entities made again), so the
-- watchers find them again (world_replaced, set by keel.serve); the server answers nothing while
-- the frames are re-simulated (replaying).
local function drive(self, f, ...)
  self.replaying = true
  local ok, err = pcall(f, ...)
  self.replaying = false
  if self.world_replaced then self.world_replaced() end
  if not ok then error(err, 0) end
end

methods["replay.info"] = { params = {}, run = replay_info }
methods["replay.seek"] = { params = { frame = "integer" }, run = function(self, p)
  local rp = the_replay(self)
  if p.frame < 0 or p.frame > rp.frames then bad_params("frame %d is outside 0..%d", p.frame, rp.frames) end
  drive(self, rp.seek, rp, p.frame)
  return replay_info(self)
end }
methods["replay.step"] = { params = { ["frames?"] = "integer" }, run = function(self, p)
  local rp = the_replay(self)
  local n = p.frames or 1
  if n < 0 or n > rp.frames then bad_params("frames must be 0..%d", rp.frames) end
  if n > 0 then drive(self, rp.step, rp, n) end
  return replay_info(self)
end }
methods["replay.branch"] = { params = {}, run = function(self)
  local rp = the_replay(self)
  local frame = rp.frame
  local w = rp:branch() -- the served world: live from here on
  assert(rawequal(w, self.world), "the served world is the replay's")
  rp:close()
  self.replay = nil
  return { frame = frame, uuid = w.uuid, live = true }
end }

return M
