-- watch.lua — the channel's event stream (DESIGN channel.md "Watching"): per subscriber, one
-- `snapshot`, then at most one `delta` per frame with only what changed since that subscriber
-- last looked: components found changed by their version, and in them only the fields whose
-- values differ from what it was last sent. A subscriber more than BEHIND frames behind (its
-- unsent events) is sent a fresh snapshot instead. No subscribers: publish returns at once.
local core = require "keel.core"
local channel = require "keel.channel"

local array, null, jsonable = channel.array, channel.null, channel.jsonable
local encode = core._json_encode

local M = {}
M.BEHIND = 256

local Watch = {}
Watch.__index = Watch

-- push(id, text) -> false when gone; pending(id) -> queued events (nil when gone); drop(id).
function M.new(ch, push, pending, drop)
  return setmetatable({ channel = ch, push = push, pending = pending, drop = drop, subs = {}, count = 0, next_id = 0 }, Watch)
end

local function list_set(s)
  if type(s) ~= "string" or s == "" then return nil end
  local t = {}
  for item in s:gmatch("[^,]+") do t[item] = true end
  return t
end

-- query: entities=UUID,UUID (or names), kinds=KEY,KEY; returns the stream's id.
function Watch:subscribe(query)
  self.next_id = self.next_id + 1
  local id = self.next_id
  self.subs[id] = { id = id, entities = list_set(query and query.entities), kinds = list_set(query and query.kinds),
                    fresh = true }
  self.count = self.count + 1
  return id
end

function Watch:unsubscribe(id)
  if self.subs[id] then
    self.subs[id] = nil
    self.count = self.count - 1
  end
end

-- The entities a subscriber watches, in run order (named ones: those that resolve).
local function watched(w, sub)
  local out = {}
  if sub.entities then
    for ref in pairs(sub.entities) do
      local e = ref == "root" and w.root or w:find(ref)
      if e then out[#out + 1] = e end
    end
    table.sort(out, function(a, b) return a.uuid < b.uuid end)
  else
    out[1] = w.root
    for e in w:entities() do out[#out + 1] = e end
  end
  return out
end

local function same(a, b)
  if a == b then return true end
  if type(a) ~= "table" or type(b) ~= "table" then return false end
  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function entity_json(e)
  local p = e.parent
  return { uuid = e.uuid, name = e.name, parent = p and p.uuid or null, enabled = e.enabled }
end

local function send(self, sub, event, data)
  if not self.push(sub.id, "event: " .. event .. "\ndata: " .. encode(data) .. "\n\n") then
    self:unsubscribe(sub.id)
    return false
  end
  return true
end

function Watch:snapshot(sub)
  local ch = self.channel
  local w = ch.world
  local ents, seen, comps = {}, {}, {}
  for _, e in ipairs(watched(w, sub)) do
    local ej = entity_json(e)
    local list = {}
    for _, c in ipairs(e:components()) do
      if not sub.kinds or sub.kinds[c.kind] then
        local body = jsonable(c:body())
        list[#list + 1] = { kind = c.kind, slot = c.slot, version = c.version, enabled = c.enabled, loaded = c.loaded, body = body }
        comps[e.uuid .. "\0" .. c.kind .. "\0" .. c.slot] = { version = c.version, body = body }
      end
    end
    ej.components = array(list)
    ents[#ents + 1] = ej
    seen[e.uuid] = true
  end
  sub.fresh, sub.seen, sub.comps = false, seen, comps
  sub.revision, sub.frame = w.revision, ch.frame
  return send(self, sub, "snapshot", { revision = w.revision, frame = ch.frame, entities = array(ents) })
end

function Watch:delta(sub)
  local ch = self.channel
  local w = ch.world
  local changed, added, removed, spawned, destroyed = {}, {}, {}, {}, {}
  local seen, comps = {}, {}
  local old_seen, old_comps = sub.seen, sub.comps
  for _, e in ipairs(watched(w, sub)) do
    local uuid = e.uuid
    seen[uuid] = true
    if not old_seen[uuid] then spawned[#spawned + 1] = entity_json(e) end
    for _, c in ipairs(e:components()) do
      local kind, slot = c.kind, c.slot
      if not sub.kinds or sub.kinds[kind] then
        local key = uuid .. "\0" .. kind .. "\0" .. slot
        local last, version = old_comps[key], c.version
        if not last then
          local body = jsonable(c:body())
          added[#added + 1] = { entity = uuid, kind = kind, slot = slot, version = version, body = body }
          comps[key] = { version = version, body = body }
        elseif last.version ~= version then
          local body = jsonable(c:body())
          local fields, any = {}, false
          for k, v in pairs(body) do
            if not same(v, last.body[k]) then fields[k], any = v, true end
          end
          for k in pairs(last.body) do
            if body[k] == nil then fields[k], any = null, true end
          end
          if any then changed[#changed + 1] = { entity = uuid, kind = kind, slot = slot, version = version, fields = fields } end
          comps[key] = { version = version, body = body }
        else
          comps[key] = last
        end
      end
    end
  end
  for uuid in pairs(old_seen) do if not seen[uuid] then destroyed[#destroyed + 1] = uuid end end
  for key in pairs(old_comps) do
    if not comps[key] then
      local uuid, kind, slot = key:match("^(.-)%z(.-)%z(%d+)$")
      if seen[uuid] then removed[#removed + 1] = { entity = uuid, kind = kind, slot = math.tointeger(tonumber(slot)) } end
    end
  end
  sub.seen, sub.comps = seen, comps
  sub.revision, sub.frame = w.revision, ch.frame
  if #changed + #added + #removed + #spawned + #destroyed == 0 then return true end
  return send(self, sub, "delta", { revision = w.revision, frame = ch.frame, frame_ms = ch.frame_ms, changed = array(changed), added = array(added),
    removed = array(removed), spawned = array(spawned), destroyed = array(destroyed) })
end

-- After requests were answered or a frame ran: each subscriber gets what it has not seen.
function Watch:publish()
  if self.count == 0 then return end
  local ch = self.channel
  local rev, frame = ch.world.revision, ch.frame
  for id, sub in pairs(self.subs) do
    local queued = self.pending(id)
    if queued == nil then
      self:unsubscribe(id)
    elseif sub.fresh then
      self:snapshot(sub)
    elseif queued > M.BEHIND then
      self.drop(id)
      self:snapshot(sub)
    elseif sub.revision ~= rev and (sub.frame ~= frame or ch.paused) then
      self:delta(sub)
    end
  end
end

return M
