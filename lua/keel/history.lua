-- history.lua — undo/redo for a world: each command runs and its inverse is kept.
-- The world keeps no history; this stack of inverse commands (keel.Command values) is all.
-- Inverses name entities by UUID: after undoing a destroy the entity is back with its UUID,
-- components and children, but handles held from before the destroy stay stale -- look it
-- up again with w:find(uuid).
require "keel.core" -- which registers the keel.core.* modules below
local invalid = require "keel.core.errors".invalid

local M = {}

local History = {}
History.__index = History

-- Misuse raises an InvalidArgument error object, as it does everywhere in keel.
local function check(v, what, where)
  local mt = getmetatable(v)
  if not (type(mt) == "table" and rawget(mt, "__name") == "keel." .. what) then
    invalid(("%s: a keel.%s expected, got %s"):format(where, what, type(v)))
  end
  return v
end

-- The history a method is called on (h:undo(), not h.undo()).
local function check_self(h, where)
  if getmetatable(h) ~= History then
    invalid(("%s: a history expected (call it as h:%s()), got %s"):format(where, where:match("[%w_]+$"), type(h)))
  end
end

-- The histories bound to each world (weak both ways): changes keel makes on its own, such as
-- the file watcher's "reload from disk", reach them through M._record.
local bound = setmetatable({}, { __mode = "k" })

function M.new(w)
  check(w, "World", "history.new")
  local h = setmetatable({ world = w, undos = {}, redos = {}, revs = setmetatable({}, { __mode = "k" }) }, History)
  bound[w] = bound[w] or setmetatable({}, { __mode = "k" })
  bound[w][h] = true
  return h
end

-- revs[inverse] = { at = the revision right after its command, back = the one before it }.
local function record(self, inverse, before)
  self.undos[#self.undos + 1] = inverse
  self.redos = {}
  if before then self.revs[inverse] = { at = self.world.revision, back = before } end
end

-- One entry made by keel itself (`label` says what, e.g. "reload from disk", for the reader:
-- entries carry no label yet) on every history bound to w.
function M._record(w, inverse, label)
  local _ = label
  for h in pairs(bound[w] or {}) do record(h, inverse) end
end

function History:spawn(spec)
  check_self(self, "history:spawn")
  local before = self.world.revision
  local e, inverse = self.world:_spawn(spec)
  record(self, inverse, before)
  return e
end

function History:destroy(e)
  check_self(self, "history:destroy")
  check(e, "Entity", "history:destroy")
  local before = self.world.revision
  record(self, e:_destroy(), before)
end

function History:add(e, kind, body)
  check_self(self, "history:add")
  check(e, "Entity", "history:add")
  local before = self.world.revision
  local c, inverse = e:_add(kind, body)
  record(self, inverse, before)
  return c
end

function History:remove(e, kind, slot)
  check_self(self, "history:remove")
  check(e, "Entity", "history:remove")
  local before = self.world.revision
  local body, inverse = e:_remove(kind, slot)
  record(self, inverse, before)
  return body
end

function History:set(c, field, value)
  check_self(self, "history:set")
  check(c, "Component", "history:set")
  local before = self.world.revision
  record(self, c:_set(field, value), before)
end

function History:reparent(e, parent)
  check_self(self, "history:reparent")
  check(e, "Entity", "history:reparent")
  local before = self.world.revision
  record(self, e:_reparent(parent), before)
end

function History:rename(e, name)
  check_self(self, "history:rename")
  check(e, "Entity", "history:rename")
  local before = self.world.revision
  record(self, e:_rename(name), before)
end

-- The copy of e and its subtree (fresh UUIDs), under e's parent or `parent`.
function History:duplicate(e, parent)
  check_self(self, "history:duplicate")
  check(e, "Entity", "history:duplicate")
  local before = self.world.revision
  local copy, inverse = e:_duplicate(parent)
  record(self, inverse, before)
  return copy
end

-- x an entity (its own enabled flag) or a component.
function History:enable(x, on)
  check_self(self, "history:enable")
  local mt = getmetatable(x)
  local name = type(mt) == "table" and rawget(mt, "__name")
  if name ~= "keel.Entity" and name ~= "keel.Component" then
    invalid(("history:enable: a keel.Entity or keel.Component expected, got %s"):format(type(x)))
  end
  if type(on) ~= "boolean" then invalid(("history:enable: on must be a boolean, got %s"):format(type(on))) end
  local before = self.world.revision
  record(self, x:_enable(on), before)
end

-- A fragment (e:dump) pasted with fresh UUIDs (w:paste): one entry; returns the new top entities.
function History:paste(text, parent)
  check_self(self, "history:paste")
  local before = self.world.revision
  local roots, inverse = self.world:_paste(text, parent)
  record(self, inverse, before)
  return roots
end

-- A scene setting (registry.md): `path` is "grid.KEY" (or "grid" with a table of keys), checked
-- as w.settings.grid.KEY = value is.
function History:set_setting(path, value)
  check_self(self, "history:set_setting")
  if type(path) ~= "string" then invalid(("history:set_setting: a path expected, got %s"):format(type(path))) end
  local before = self.world.revision
  record(self, self.world:_set_setting(path, value), before)
end

-- Applies the top of `from`, pushes its inverse on `to`; a failing command stays where it was.
local function replay(self, from, to)
  local cmd = from[#from]
  if not cmd then return false end
  local w = self.world
  local rev, was = self.revs[cmd], w.revision
  local inverse = w:_apply(cmd)
  from[#from] = nil
  to[#to + 1] = inverse
  if rev and rev.at == was then -- nothing else changed it since: the revision it had comes back
    w:_set_revision(rev.back)
    self.revs[inverse] = { at = rev.back, back = was }
  end
  return true
end

function History:undo()
  check_self(self, "history:undo")
  return replay(self, self.undos, self.redos)
end

function History:redo()
  check_self(self, "history:redo")
  return replay(self, self.redos, self.undos)
end

return M
