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
  local h = setmetatable({ world = w, undos = {}, redos = {} }, History)
  bound[w] = bound[w] or setmetatable({}, { __mode = "k" })
  bound[w][h] = true
  return h
end

local function record(self, inverse)
  self.undos[#self.undos + 1] = inverse
  self.redos = {}
end

-- One entry made by keel itself (`label` says what, e.g. "reload from disk", for the reader:
-- entries carry no label yet) on every history bound to w.
function M._record(w, inverse, label)
  local _ = label
  for h in pairs(bound[w] or {}) do record(h, inverse) end
end

function History:spawn(spec)
  check_self(self, "history:spawn")
  local e, inverse = self.world:_spawn(spec)
  record(self, inverse)
  return e
end

function History:destroy(e)
  check_self(self, "history:destroy")
  check(e, "Entity", "history:destroy")
  record(self, e:_destroy())
end

function History:add(e, kind, body)
  check_self(self, "history:add")
  check(e, "Entity", "history:add")
  local c, inverse = e:_add(kind, body)
  record(self, inverse)
  return c
end

function History:remove(e, kind, slot)
  check_self(self, "history:remove")
  check(e, "Entity", "history:remove")
  local body, inverse = e:_remove(kind, slot)
  record(self, inverse)
  return body
end

function History:set(c, field, value)
  check_self(self, "history:set")
  check(c, "Component", "history:set")
  record(self, c:_set(field, value))
end

function History:reparent(e, parent)
  check_self(self, "history:reparent")
  check(e, "Entity", "history:reparent")
  record(self, e:_reparent(parent))
end

function History:rename(e, name)
  check_self(self, "history:rename")
  check(e, "Entity", "history:rename")
  record(self, e:_rename(name))
end

-- Applies the top of `from`, pushes its inverse on `to`; a failing command stays where it was.
local function replay(self, from, to)
  local cmd = from[#from]
  if not cmd then return false end
  local inverse = self.world:_apply(cmd)
  from[#from] = nil
  to[#to + 1] = inverse
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
