-- history.lua — undo/redo for a world: each command runs and its inverse is kept.
-- The world keeps no history; this stack of inverse commands (keel.Command values) is all.
-- Inverses name entities by UUID: after undoing a destroy the entity is back with its UUID,
-- components and children, but handles held from before the destroy stay stale -- look it
-- up again with w:find(uuid).
local core = require "keel.core"

local M = {}

local History = {}
History.__index = History

-- Misuse raises an InvalidArgument error object, as it does everywhere in keel.
local function check(v, what, where)
  local mt = getmetatable(v)
  if not (mt and mt.__name == "keel." .. what) then
    core._invalid(("%s: a keel.%s expected, got %s"):format(where, what, type(v)))
  end
  return v
end

function M.new(w)
  check(w, "World", "history.new")
  return setmetatable({ world = w, undos = {}, redos = {} }, History)
end

local function record(self, inverse)
  self.undos[#self.undos + 1] = inverse
  self.redos = {}
end

function History:spawn(spec)
  local e, inverse = self.world:_spawn(spec)
  record(self, inverse)
  return e
end

function History:destroy(e)
  check(e, "Entity", "history:destroy")
  record(self, e:_destroy())
end

function History:add(e, kind, body)
  check(e, "Entity", "history:add")
  local c, inverse = e:_add(kind, body)
  record(self, inverse)
  return c
end

function History:remove(e, kind, slot)
  check(e, "Entity", "history:remove")
  local body, inverse = e:_remove(kind, slot)
  record(self, inverse)
  return body
end

function History:set(c, field, value)
  check(c, "Component", "history:set")
  record(self, c:_set(field, value))
end

function History:reparent(e, parent)
  check(e, "Entity", "history:reparent")
  record(self, e:_reparent(parent))
end

function History:rename(e, name)
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
  return replay(self, self.undos, self.redos)
end

function History:redo()
  return replay(self, self.redos, self.undos)
end

return M
