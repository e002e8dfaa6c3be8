-- watch.lua — the channel's event stream (DESIGN channel.md "Watching"): per subscriber, one
-- `snapshot`, then at most one `delta` per frame with only what changed since that subscriber
-- last looked (keel.core.channel.watcher: components found changed by their version, and in them only
-- the fields whose values differ from what it was last sent). A subscriber more than BEHIND
-- events behind (queued, unsent) gets a fresh snapshot instead. No subscribers: publish returns.
require "keel.core" -- which registers the keel.core.* modules below
local new_watcher = require "keel.core.channel".watcher
local clock = require "keel.core.channel".clock
local json = require "keel.json"

local M = {}
M.BEHIND = 256

local Watch = {}
Watch.__index = Watch

-- push(id, text) -> false when gone; pending(id) -> queued events (nil when gone); drop(id).
function M.new(ch, push, pending, drop)
  return setmetatable({ channel = ch, push = push, pending = pending, drop = drop, subs = {}, count = 0, next_id = 0 }, Watch)
end

local function list(s)
  if type(s) ~= "string" or s == "" then return nil end
  local t = {}
  for item in s:gmatch("[^,]+") do t[#t + 1] = item end
  return t
end

-- query: entities=UUID,UUID (or names, or root), kinds=KEY,KEY; returns the stream's id.
function Watch:subscribe(query)
  self.next_id = self.next_id + 1
  local id = self.next_id
  query = query or {}
  self.subs[id] = { id = id, fresh = true, query = query,
    watcher = new_watcher(self.channel.world, { kinds = list(query.kinds), entities = list(query.entities) }) }
  self.count = self.count + 1
  return id
end

function Watch:unsubscribe(id)
  if self.subs[id] then
    self.subs[id] = nil
    self.count = self.count - 1
  end
end

local function send(self, sub, event, text)
  if not self.push(sub.id, "event: " .. event .. "\ndata: " .. text .. "\n\n") then self:unsubscribe(sub.id) end
end

function Watch:snapshot(sub)
  local ch = self.channel
  sub.fresh, sub.frame = false, ch.frame
  sub.revision, sub.sets = ch.world:_revision_mark()
  send(self, sub, "snapshot", sub.watcher:snapshot(ch.frame))
end

function Watch:delta(sub)
  local ch = self.channel
  sub.frame = ch.frame
  sub.revision, sub.sets = ch.world:_revision_mark()
  local text = sub.watcher:delta(ch.frame, ch.frame_ms)
  if text then send(self, sub, "delta", text) end
end

-- The world's entities were all made again (a replay's seek restores a keyframe in place): every
-- subscriber finds its entities again by UUID and gets a fresh snapshot.
function Watch:reset()
  for _, sub in pairs(self.subs) do
    local q = sub.query
    sub.watcher = new_watcher(self.channel.world, { kinds = list(q.kinds), entities = list(q.entities) })
    sub.fresh = true
  end
end

-- One event to every subscriber (the file watcher's `conflict` and `watch_error`).
function Watch:broadcast(event, text)
  for _, sub in pairs(self.subs) do send(self, sub, event, text) end
end

-- The world closed under its watchers: they are let go (their streams stay open, silent).
local function closed(w)
  return not pcall(function() return w.revision end)
end

-- After requests were answered or a frame ran: each subscriber gets what it has not seen, at
-- most one delta a frame (while paused, edits go out as they come).
function Watch:publish()
  if self.count == 0 then return end
  local ch = self.channel
  if closed(ch.world) then
    self.subs, self.count = {}, 0
    return
  end
  -- the revision and how often undo wound it back: an undo and a new edit between two publishes
  -- can leave the revision where it was, the pair never
  local rev, sets = ch.world:_revision_mark()
  local frame = ch.frame
  for id, sub in pairs(self.subs) do
    local queued = self.pending(id)
    if queued == nil then
      self:unsubscribe(id)
    elseif sub.fresh then
      self:snapshot(sub)
    elseif queued > M.BEHIND then
      self.drop(id)
      self:snapshot(sub)
    elseif (sub.revision ~= rev or sub.sets ~= sets) and (sub.frame ~= frame or ch.paused) then
      self:delta(sub)
    end
  end
  -- while profiling is on: one `stats` event a second (world.stats's table; design/profiler.md)
  if ch.world.profiling and self.count > 0 then
    local t = clock()
    if not self.stats_at or t - self.stats_at >= 1 then
      self.stats_at = t
      self:broadcast("stats", json.encode(require "keel.channel".stats_json(ch.world)))
    end
  end
end

return M
