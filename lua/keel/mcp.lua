-- mcp.lua — `keel mcp SCENE`: the live channel's methods as Model Context Protocol tools on stdio
-- (JSON-RPC 2.0, one message a line). Each channel method is one tool named with `_` for `.`
-- (object.list -> object_list) whose inputSchema is the method's params as JSON Schema;
-- component_set's and component_add's are built from the registered kinds' fields (types,
-- ranges, enum choices) so an agent can write a valid value without reading any source.
-- Calls go straight to the channel's dispatcher (keel.channel), no HTTP in between.
--
--   local mcp = require "keel.mcp"
--   local srv = mcp.new(channel)        -- a keel.channel over the world
--   srv:handle(line)                    --> response line, or nil (a notification)
--   mcp.run(channel, input, output)     -- reads lines until the input ends
local core = require "keel.core"
local json = require "keel.json"
local channel = require "keel.channel"

local M = {}

local null, array = json.null, json.array

M.PROTOCOL_VERSIONS = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" } -- newest first

-- What each tool does, for the agent reading tools/list.
local descriptions = {
  ["world.info"] = "The world: name, uuid, revision, frame, entity count, paused, error count, dirty (unsaved "
    .. "changes) and saved_revision.",
  ["object.list"] = "Entities in run order, a page at a time (limit <= 1000, default 100): uuid, name, parent, "
    .. "enabled, child count, kinds; total. Filter by parent, by kind held, or by name (substring).",
  ["object.get"] = "One entity with its components in membership order: kind, slot, loaded, enabled, version, body "
    .. "(components of unknown kinds are flagged and shown as read).",
  ["component.kinds"] = "Every registered kind with each field's type, default, range (min/max), enum choices, "
    .. "flags and tooltip.",
  ["component.get"] = "One component's kind, slot, version and body.",
  ["component.set"] = "Writes fields of one component (validated as a Lua write: types, ranges, the kind's rules); "
    .. "one undoable edit. Returns the new version.",
  ["component.add"] = "Adds a component of a kind, with an optional body (fields not given take their defaults); "
    .. "one undoable edit.",
  ["component.remove"] = "Removes a component; returns its body. One undoable edit.",
  ["component.enable"] = "Enables or disables a component. One undoable edit.",
  ["object.spawn"] = "Spawns an entity (name, parent, components as kind keys or {kind, body}); returns its uuid. "
    .. "One undoable edit.",
  ["object.destroy"] = "Destroys an entity and its children. One undoable edit.",
  ["object.reparent"] = "Moves an entity under another parent (none: the root). One undoable edit.",
  ["object.rename"] = "Renames an entity. One undoable edit.",
  ["object.copy"] = "An entity and its subtree as a scene fragment (YAML text) for object.paste.",
  ["object.paste"] = "Pastes a fragment (object.copy's text) under a parent (default: the top level) as copies "
    .. "with fresh UUIDs; returns their uuids. One undoable edit; a fragment that does not load is refused whole.",
  ["settings.get"] = "The scene settings: grid (enabled, origin, orientation, base_spacing, major_line_every, "
    .. "minor_color, major_color, u_color, v_color, fade, display).",
  ["settings.set"] = "Sets one scene setting by path (\"grid.base_spacing\", \"grid.major_color\"...), checked as a "
    .. "scene file's; one undoable edit. Returns the settings.",
  ["history.undo"] = "Undoes the last edit made through the channel; false when there is none.",
  ["history.redo"] = "Redoes the last undone edit; false when there is none.",
  ["world.pause"] = "Pauses the world.",
  ["world.resume"] = "Lets the world run.",
  ["world.step"] = "Runs frames of a paused world (default 1), each of dt seconds (default 1/60).",
  ["world.save"] = "Saves the world as a scene file: its own by default (the world is then clean), or a copy at a "
    .. "path inside the scene's folder.",
  ["world.errors"] = "Recorded callback failures ({entity, kind, slot, phase, message}), after the first `since`.",
  ["world.play"] = "Enters play mode: the world as it is now is remembered, world.stop puts it back.",
  ["world.stop"] = "Leaves play mode: the world is put back as it was at world.play, then what play.keep marked "
    .. "is written into it (one undoable edit); `refused` lists the kept entries that could not apply.",
  ["play.keep"] = "While playing: keeps an entity (or one of its components, by kind and slot) so world.stop "
    .. "carries its play-mode state back (authored fields, not runtime ones); keep = false takes that back.",
  ["replay.info"] = "The served replay: frames recorded, the frame shown, keyframes, and where verification "
    .. "failed (diverged frame and the differing components) if it did.",
  ["replay.seek"] = "Moves the replay to a frame (from the nearest keyframe, re-simulating the rest); the world "
    .. "then shows that frame. Raises Diverged where the re-simulation stops matching the recording.",
  ["replay.step"] = "Re-simulates frames of the replay (default 1), verifying each.",
  ["replay.branch"] = "Takes control at the replay's frame: the served world becomes a live world (edits and "
    .. "world.step apply to it); the replay closes.",
}
descriptions["world.stats"] = "Frame statistics of the last step (profiling = true turns collecting on): frame_ms, "
  .. "per phase, per system and per kind hook ms, calls and entities, counts, and the last 300 frame times."

local param_docs = {
  object = "the entity: its UUID, its name (first match), or \"root\"",
  parent = "the parent entity: a UUID, a name, or \"root\"",
  kind = "a kind key such as \"core:transform\"",
  slot = "the slot of a `many` kind's component (default: the lowest)",
  offset = "how many to skip", limit = "how many at most (1..1000, default 100)",
  name = "a name, or part of one", fields = "field name -> value",
  body = "field name -> value; fields not given take their defaults",
  enabled = "true to enable", frames = "how many frames (1..100000, default 1)", dt = "seconds per frame",
  path = "where to write (inside the scene's folder); default: the scene's own file",
  since = "how many entries to skip (the count already seen)",
  keep = "false to take a keep back (default true)",
  components = "kind keys, or { kind, body } objects",
  text = "a scene fragment: object.copy's text",
}

local VEC = { vec2 = 2, vec3 = 3, vec4 = 4, quat = 4, color = 4 }

-- One field of a kind as JSON Schema.
local function field_schema(f)
  local s
  local function bound(t)
    if f.min ~= nil then t[f.min_exclusive and "exclusiveMinimum" or "minimum"] = f.min end
    if f.max ~= nil then t[f.max_exclusive and "exclusiveMaximum" or "maximum"] = f.max end
    return t
  end
  if f.type == "bool" then s = { type = "boolean" }
  elseif f.type == "int" then s = bound { type = "integer" }
  elseif f.type == "float" then s = bound { type = "number" }
  elseif VEC[f.type] then
    local n = VEC[f.type]
    s = { type = "array", items = bound { type = "number" }, minItems = n, maxItems = n }
    if f.type == "quat" then s.description = "x, y, z, w (normalised, w >= 0, when stored)"
    elseif f.type == "color" then s.description = "r, g, b, a" end
  elseif f.type == "enum" then s = { type = "string", enum = array(f.choices or {}) }
  elseif f.type == "string" then s = { type = "string" }
  elseif f.type == "asset" then s = { type = { "string", "null" }, description = "an asset UUID, or null" }
  elseif f.type == "entity" then s = { type = { "string", "null" }, description = "an entity UUID, or null" }
  else s = {} end
  if type(s.type) == "table" then s.type = array(s.type) end
  if f.default ~= nil then s.default = channel.jsonable(f.default) end
  if f.tooltip then s.description = s.description and (f.tooltip .. " (" .. s.description .. ")") or f.tooltip end
  return s
end

-- The writable fields of one kind: an object schema with no other keys allowed.
local function kind_fields_schema(k)
  local props = {}
  for _, f in ipairs(k.fields or {}) do
    if not f.readonly then props[f.key] = field_schema(f) end
  end
  local about = ("the fields of %s (%s)"):format(k.key, k.display or k.key)
  if k.tooltip then about = about .. ": " .. k.tooltip end
  return { title = k.key, description = about,
           type = "object", properties = props, additionalProperties = false }
end
M.kind_fields_schema = kind_fields_schema

local function kinds_list(filter)
  local out = {}
  for _, k in ipairs(core.kinds()) do
    if not filter or filter(k) then out[#out + 1] = k end
  end
  table.sort(out, function(a, b) return a.key < b.key end)
  return out
end

local base_types = { string = "string", integer = "integer", boolean = "boolean", object = "object",
                     array = "array", number = "number", ref = "string" }

-- A method's params spec (keel.channel's { name = type, ["opt?"] = type }) as JSON Schema.
local function params_schema(method, spec)
  local props, required = {}, {}
  local names = {}
  for name in pairs(spec) do names[#names + 1] = name end
  table.sort(names)
  for _, name in ipairs(names) do
    local key, opt = name:match("^(.-)(%??)$")
    local ty = spec[name]
    local s = { type = base_types[ty] }
    if ty == "any" then s.type = nil end
    s.description = param_docs[key]
    if method == "settings.set" then
      s.description = key == "path" and "a setting's path, e.g. \"grid.base_spacing\""
        or "the new value: a number, a boolean, [r, g, b, a] for a colour, lines/dots/none for grid.display"
    end
    if key == "slot" or key == "offset" or key == "since" then s.minimum = 0 end
    if key == "limit" then s.minimum, s.maximum = 1, channel.LIST_MAX or 1000 end
    if key == "frames" then s.minimum, s.maximum = 1, 100000 end
    if key == "dt" then s.minimum = 0 end
    props[key] = s
    if opt == "" then required[#required + 1] = key end
  end
  -- the kinds' own fields where a method takes a body
  if method == "component.set" or method == "component.add" then
    local ks = kinds_list(function(k) return #(k.fields or {}) > 0 end)
    local keys, variants = {}, {}
    for _, k in ipairs(kinds_list()) do -- summon = false: not offered where it would be refused
      if method ~= "component.add" or k.summon ~= false then keys[#keys + 1] = k.key end
    end
    for _, k in ipairs(ks) do variants[#variants + 1] = kind_fields_schema(k) end
    props.kind.enum = array(keys)
    local target = method == "component.set" and "fields" or "body"
    props[target].anyOf = array(variants)
    props[target].description = props[target].description
      .. "; the schema titled with the `kind` given applies (its ranges, choices and types)"
    if method == "component.set" then props.fields.minProperties = 1 end
  end
  if method == "object.spawn" then
    props.components.items = { anyOf = array {
      { type = "string", description = "a kind key (default body)" },
      { type = "object", properties = { kind = { type = "string" }, body = { type = "object" } },
        required = array { "kind" } } } }
  end
  return { type = "object", properties = props, required = array(required), additionalProperties = false }
end
M.params_schema = params_schema

local function tool_name(method) return (method:gsub("%.", "_")) end

-- Hints for the agent's client (MCP tool annotations): what only reads, what deletes.
local read_only = { ["world.info"] = true, ["object.list"] = true, ["object.get"] = true,
  ["component.kinds"] = true, ["component.get"] = true, ["world.errors"] = true, ["object.copy"] = true,
  ["settings.get"] = true }
local destructive = { ["object.destroy"] = true, ["component.remove"] = true, ["world.save"] = true }

-- tools/list's entries, built once per server (the kinds are frozen before a world exists).
local function build_tools()
  local tools, by_name = {}, {}
  local methods = {}
  for m in pairs(channel.methods) do methods[#methods + 1] = m end
  table.sort(methods)
  for _, m in ipairs(methods) do
    local t = { name = tool_name(m), title = m, description = descriptions[m] or m,
                inputSchema = params_schema(m, channel.methods[m].params or {}),
                annotations = { readOnlyHint = read_only[m] or false, destructiveHint = destructive[m] or false,
                                openWorldHint = false } }
    tools[#tools + 1] = t
    by_name[t.name] = m
  end
  return tools, by_name
end

local Server = {}
Server.__index = Server

function M.new(ch)
  -- Frames are counted by whoever runs them (the HTTP server's step hook); here only
  -- world.step runs them, so this channel counts its own.
  local step = ch.step
  ch.step = function(self, dt)
    self:on_step()
    return step(self, dt)
  end
  local tools, by_name = build_tools()
  return setmetatable({ channel = ch, tools = tools, by_name = by_name }, Server)
end

local function response(id, result) return { jsonrpc = "2.0", id = id, result = result } end
local failure = channel.err_response

local function supported(v)
  for _, s in ipairs(M.PROTOCOL_VERSIONS) do if s == v then return true end end
  return false
end

-- A tool's outcome as MCP content: the result (or the channel's error) as JSON text.
local function tool_result(value, is_error)
  local text = json.encode(value == nil and null or value)
  return { content = array { { type = "text", text = text } }, isError = is_error }
end

function Server:call_tool(id, p)
  if type(p) ~= "table" or type(p.name) ~= "string" then
    return failure(id, channel.INVALID_PARAMS, "Invalid params: tools/call needs a tool name")
  end
  local method = self.by_name[p.name]
  if not method then return failure(id, channel.INVALID_PARAMS, "Unknown tool: " .. p.name) end
  local args = p.arguments
  if args == null then args = nil end
  -- the channel's own answer, so errors read exactly as over HTTP (code, message, data)
  local ans = self.channel:answer({ jsonrpc = "2.0", id = 1, method = method, params = args or {} })
  if ans.error then
    local e = ans.error
    return response(id, tool_result({ code = e.code, message = e.message, data = e.data }, true))
  end
  return response(id, tool_result(ans.result, false))
end

-- One request table -> a response table, or nil for a notification.
function Server:answer(req)
  if type(req) ~= "table" or getmetatable(req) == json.array_mt then
    return failure(nil, channel.INVALID_REQUEST, "Invalid Request: one JSON-RPC object a line")
  end
  local id, method = req.id, req.method
  if method == nil and (req.result ~= nil or req.error ~= nil) then return nil end -- a client's answer: none asked
  -- JSON-RPC ids are strings, numbers or null: an object or a boolean is refused, never echoed
  if not (id == nil or id == null or type(id) == "string" or type(id) == "number") then
    return failure(nil, channel.INVALID_REQUEST, "Invalid Request: bad id")
  end
  if req.jsonrpc ~= "2.0" or type(method) ~= "string" then
    return failure(id, channel.INVALID_REQUEST, "Invalid Request: jsonrpc \"2.0\" and a method expected")
  end
  local notify = id == nil or id == null
  if notify then return nil end -- notifications/initialized, notifications/cancelled...: nothing to answer
  local p = req.params
  if method == "initialize" then
    local asked = type(p) == "table" and p.protocolVersion
    self.initialized = true
    return response(id, {
      protocolVersion = supported(asked) and asked or M.PROTOCOL_VERSIONS[1],
      capabilities = { tools = { listChanged = false } },
      serverInfo = { name = "keel", version = core.version },
      instructions = "The tools are keel's live channel over one loaded world (paused: world_step runs frames). "
        .. "component_kinds lists each kind's fields with their types and ranges; edits are undoable "
        .. "with history_undo.",
    })
  elseif method == "ping" then
    return response(id, {})
  elseif method == "tools/list" then
    return response(id, { tools = array(self.tools) })
  elseif method == "tools/call" then
    return self:call_tool(id, p)
  end
  return failure(id, channel.METHOD_NOT_FOUND, "Method not found: " .. method)
end

-- One line in -> one line out (nil: nothing to send).
function Server:handle(line)
  local req, err = json.decode(line)
  local out
  if req == nil then out = channel.decode_failure(err)
  else out = self:answer(req) end
  if out == nil then return nil end
  local ok, text = pcall(json.encode, out)
  if ok then return text end
  return json.encode(failure(type(req) == "table" and req.id or nil, channel.INTERNAL_ERROR,
    "Internal error: " .. channel.internal_text(text)))
end

-- Serves until the input ends. Anything the world's scripts print (print, io.write) goes to
-- stderr: stdout is the protocol's.
function M.run(ch, input, output)
  input, output = input or io.stdin, output or io.stdout
  local srv = M.new(ch)
  local saved_print, saved_output = print, io.output()
  io.output(io.stderr)
  print = function(...) -- luacheck: ignore
    local n = select("#", ...)
    local parts = {}
    for i = 1, n do parts[i] = tostring((select(i, ...))) end
    io.stderr:write(table.concat(parts, "\t"), "\n")
  end
  local ok, err = pcall(function()
    for line in input:lines() do
      if line:match("%S") then
        local out = srv:handle(line)
        if out then
          output:write(out, "\n")
          output:flush()
        end
      end
    end
  end)
  print = saved_print -- luacheck: ignore
  io.output(saved_output)
  if not ok then error(err, 0) end
end

return M
