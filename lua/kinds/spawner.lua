-- spawner.lua — game:spawner: instantiates a prefab (a scene file used as a template) on a repeating
-- timer, up to a count (a `many` kind with an entity field).
local keel = require "keel"

-- A prefab path not found as given (from the working directory) is looked up among the bundled
-- scenes: ../../scenes from this file in the source tree, ../scenes where keel is installed.
local HERE = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local function prefab(path)
  local bases = path:sub(1, 1) == "/" and { "" } or { "", HERE .. "../../scenes/", HERE .. "../scenes/" }
  for _, base in ipairs(bases) do
    local f = io.open(base .. path)
    if f then
      f:close()
      return assert(keel.prefab(base .. path)) -- cached: the file is parsed again only when it changes
    end
  end
  error("game:spawner: prefab " .. path .. " not found")
end

-- One spawn of the spawner `c` (a component handle: the timer's callback is not a hook) of
-- `entity`. `set` gives the copy's components their values before its awake runs.
local function spawn(entity, c)
  c.spawned = c.spawned + 1
  local a = c.spawned * 2.399963 -- the golden angle: a fixed direction per spawn, runs are deterministic
  local set = {
    ["core:transform"] = { position = entity:get("core:transform").position },
    ["game:mover"] = { velocity = { math.cos(a) * c.speed, 0, math.sin(a) * c.speed } },
  }
  if c.target then set["game:follower"] = { target = c.target, speed = c.speed } end
  entity.world:instantiate(prefab(c.prefab), { name = ("%s %d"):format(c.label, c.spawned), set = set })
end

keel.kind{
  key = "game:spawner", display = "Spawner", category = "Gameplay",
  version = 2, multiplicity = "many", max = 4,
  requires = { "core:transform" },
  fields = {
    -- a scene file whose top-level entity has core:transform and game:mover (and game:follower
    -- when `target` is set)
    { "prefab",    "string", default = "prefabs/drone.yaml" },
    { "label",     "string", default = "Drone" },          -- the copies are named "<label> <n>"
    { "interval",  "float", default = 1, min = 0.01, max = 3600 },
    { "max_count", "int", default = 5, min = 0, max = 10000 },
    { "speed",     "float", default = 2, min = 0, max = 100 },
    { "target",    "entity" },                             -- what the spawned followers chase
    { "spawned",   "int", default = 0, min = 0 },          -- a field: a resumed game goes on counting
  },
  -- version 1 had `prefab` for the name and spawned entities built by hand
  migrate = { [2] = function(body) body.label, body.prefab = body.prefab, nil; return body end },
  start = function(self, entity)
    if self.spawned >= self.max_count then return end
    local slot = self.slot
    local timer
    timer = entity:every(self.interval, function(e)
      local c = e:get("game:spawner", slot)
      if not c then timer:cancel(); return end -- the component was removed
      if not c.enabled then return end
      if c.spawned < c.max_count then spawn(e, c) end
      if c.spawned >= c.max_count then timer:cancel() end
    end)
  end,
}
