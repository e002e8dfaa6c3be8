-- helper.lua — file and process helpers shared by the specs (not a spec: busted runs *_spec.lua).
-- Load it with: local H = require "helper" (spec/?.lua is on the lpath of .busted and spec/CMakeLists.txt).
local H = {}

-- The repository root: this file lives in <root>/spec/.
local ROOT = (debug.getinfo(1, "S").source:match("^@(.*)/spec/[^/]*$")) or "."
if ROOT:sub(1, 1) ~= "/" then
  local pwd = os.getenv("PWD") or "."
  ROOT = (ROOT == "." and pwd) or (pwd .. "/" .. ROOT)
end
H.ROOT = ROOT

function H.shell_quote(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

function H.file_exists(p)
  local f = io.open(p, "rb")
  if f then f:close() return true end
  return false
end

-- KEEL_BIN, else the keel program running this spec (`keel busted spec`:
-- arg[-1]), else the newest build*/keel.
function H.find_keel()
  local bin = os.getenv("KEEL_BIN")
  if bin and bin ~= "" then return bin end
  local self = rawget(_G, "arg") and arg[-1]
  if type(self) == "string" and self:match("/keel$") and H.file_exists(self) then
    -- absolute: specs run it from other directories
    if self:sub(1, 1) ~= "/" then self = os.getenv("PWD") .. "/" .. self end
    return self
  end
  local p = io.popen("ls -1t " .. H.shell_quote(ROOT) .. "/build*/keel 2>/dev/null")
  local found = p:read("l")
  p:close()
  return found
end

function H.slurp(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

function H.spit(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function H.tmpdir()
  local p = io.popen("mktemp -d")
  local d = p:read("l")
  p:close()
  return d
end

function H.rmrf(d)
  if d and d:match("^/tmp/") then os.execute("rm -rf " .. H.shell_quote(d)) end
end

local assert = require "luassert"
-- Prefix for a command line that starts the keel program: it carries its own sanitizer
-- runtime (an ASan build links it in), so it must not inherit the LD_PRELOAD that lets a
-- stock lua5.4 load build-test's keel.core (see .busted).
H.NO_PRELOAD = "env -u LD_PRELOAD "

-- Runs the keel program `bin` with `args` (a shell-quoted string built by the
-- caller), stdin from `input` when given, in `cwd` when given.
-- Returns exit code, stdout, stderr.
function H.run_keel(bin, args, input, cwd)
  local out, err = os.tmpname(), os.tmpname()
  local cmd = H.NO_PRELOAD .. H.shell_quote(bin) .. " " .. args .. " >" .. out .. " 2>" .. err
  local inp
  if input then
    inp = os.tmpname()
    H.spit(inp, input)
    cmd = cmd .. " <" .. inp
  else
    cmd = cmd .. " </dev/null"
  end
  if cwd then cmd = "cd " .. H.shell_quote(cwd) .. " && " .. cmd end
  local _, _, code = os.execute(cmd)
  local o, e = H.slurp(out) or "", H.slurp(err) or ""
  os.remove(out)
  os.remove(err)
  if inp then os.remove(inp) end
  return code, o, e
end

-- Runs f and checks it raised a keel error object with this code; returns the object.
function H.fails(code, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected a " .. code .. " error")
  assert.are.equal("table", type(err), "error objects are tables: " .. tostring(err))
  assert.are.equal(code, err.code, tostring(err))
  return err
end

-- Whether f raised an InvalidOperation error object (a refusal seen from inside a callback).
function H.refused(f)
  local ok, err = pcall(f)
  return not ok and type(err) == "table" and err.code == "InvalidOperation"
end

-- Runs f and returns what it raised (fails when it did not raise).
function H.raises(f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error")
  return err
end

-- Runs f and returns the code of the keel error object it raised.
function H.code_of(f, ...)
  local err = H.raises(f, ...)
  assert.are.equal("table", type(err), "error is not an object: " .. tostring(err))
  return err.code
end

-- Checks err is an error object with this code whose __tostring is "[where: ]Code: message"
-- (where: the Lua position of the call into keel, when it was called from Lua); returns err.
function H.assert_error(code, err)
  assert.are.equal("table", type(err), "an error object expected, got " .. tostring(err))
  assert.are.equal(code, err.code)
  local text = tostring(err)
  if err.where ~= nil then
    assert.are.equal("string", type(err.where))
    assert.truthy(err.where:match(":%d+$"), err.where)
    assert.are.equal(err.where .. ": ", text:sub(1, #err.where + 2))
    text = text:sub(#err.where + 3)
  end
  assert.are.equal(code .. ": " .. err.message, text)
  return err
end

-- "chunk:line" of the caller's line `offset` lines below the call (0: the calling line), as an
-- error's `where` names it.
function H.here(offset)
  local i = debug.getinfo(2, "Sl")
  return i.short_src .. ":" .. (i.currentline + (offset or 0))
end

-- Parses text that must fail with this code (nil, err); returns the error object.
function H.parse_fails(code, text, opts)
  local keel = require "keel"
  local w, err = keel.parse(text, opts)
  assert.is_nil(w)
  assert.are.equal("table", type(err))
  assert.are.equal(code, err.code, tostring(err))
  return err
end

-- Kind keys unique within a process: the registry is process-wide and busted may run
-- every spec file in one process, so each file takes its own namespace.
function H.key_maker(namespace)
  local serial = 0
  return function(name)
    serial = serial + 1
    return ("%s:%s_%d"):format(namespace, name or "k", serial)
  end
end

-- Entities of w in run order, as a list; names of a list of entities.
function H.entities(w)
  local out = {}
  for e in w:entities() do out[#out + 1] = e end
  return out
end

function H.names(list)
  local out = {}
  for i, e in ipairs(list) do out[i] = e.name end
  return out
end

-- Names of what iter(...) gives, joined by commas: joined_names(w.entities, w) == "P,C,Q".
function H.joined_names(iter, ...)
  local t = {}
  for e in iter(...) do t[#t + 1] = e.name end
  return table.concat(t, ",")
end

-- An entity's membership list as "kind#slot,...".
function H.stack(e)
  local t = {}
  for i, c in ipairs(e:components()) do t[i] = c.kind .. "#" .. c.slot end
  return table.concat(t, ",")
end

-- Scene documents built as text. UUIDs are canonical lowercase 8-4-4-4-12.
H.UUID_PATTERN = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"
H.SCENE_UUID = "550e8400-e29b-41d4-a716-446655440000"
H.U1 = "11111111-1111-4111-8111-111111111111"
H.U2 = "22222222-2222-4222-8222-222222222222"
H.U3 = "33333333-3333-4333-8333-333333333333"

-- doc(entity_text(U1, "E", comp_text("core:transform", 1, 0, "          position: [1, 2, 3]"))):
-- a scene named Doc with the given entities text (already indented by two) and root text.
function H.doc(entities_text, root_text)
  return "keel: 1\nscene:\n  uuid: " .. H.SCENE_UUID .. "\n  name: Doc\n"
    .. (root_text and ("root:\n" .. root_text) or "")
    .. "entities:\n" .. (entities_text or "")
end

function H.entity_text(uuid, name, components, extra)
  return "  - uuid: " .. uuid .. "\n    name: " .. name .. "\n" .. (extra or "")
    .. "    components:\n" .. (components or "")
end

function H.comp_text(kind, version, slot, body)
  return "      - kind: " .. kind .. "\n        version: " .. version .. "\n        slot: " .. slot
    .. "\n        body:" .. (body and ("\n" .. body) or " {}") .. "\n"
end

-- The compact form: doc_of(ent(U1, "A", nil, comp("core:transform", "{}")), ent(U2, "B")),
-- a scene named T; HEAD is its scene header alone.
H.HEAD = "keel: 1\nscene:\n  uuid: " .. H.SCENE_UUID .. "\n  name: T\n"

function H.comp(kind, body, slot, version)
  return "      - kind: " .. kind .. "\n        version: " .. (version or 1) .. "\n        slot: " .. (slot or 0)
    .. "\n        body: " .. body .. "\n"
end

function H.ent(uuid, name, extra, comps)
  return "  - uuid: " .. uuid .. "\n    name: " .. name .. "\n" .. (extra or "") .. "    components:\n"
    .. (comps or "      []\n")
end

function H.doc_of(...)
  return H.HEAD .. "entities:\n" .. table.concat({ ... })
end

-- The cx: kinds several specs share: tracers (cx:trace_many, cx:trace_one) that note
-- "phase:tag:name", a stamina kind, one field of every type (cx:vals), field flags, rules,
-- validate and migrate. note(s) records a hook call; take(name) gives (and forgets) the
-- function cx:actor's update runs for the entity of that name, or nil. Both are optional.
function H.declare_cx_kinds(note, take)
  local keel = require "keel"
  note = note or function() end
  take = take or function() return nil end
  local function tracer(tag)
    return {
      awake = function(self, e) note("awake:" .. tag .. ":" .. e.name) end,
      start = function(self, e) note("start:" .. tag .. ":" .. e.name) end,
      fixed_update = function(self, e, dt) note("fixed:" .. tag .. ":" .. e.name) end,
      update = function(self, e, dt) note("update:" .. tag .. ":" .. e.name) end,
      late_update = function(self, e, dt) note("late:" .. tag .. ":" .. e.name) end,
      on_destroy = function(self, e) note("destroy:" .. tag .. ":" .. e.name) end,
    }
  end
  local a = tracer("a"); a.key = "cx:trace_many"; a.multiplicity = "many"; a.fields = { { "x", "float", default = 0 } }
  keel.kind(a)
  local b = tracer("b"); b.key = "cx:trace_one"; b.fields = { { "x", "float", default = 0 } }
  keel.kind(b)
  keel.kind{ key = "cx:stamina", display = "Stamina", category = "Gameplay",
    version = 1, multiplicity = "one",
    requires = { "core:transform" }, rejects = {},
    fields = {
      { "value", "float", default = 100, min = 0, max = 100 },
      { "max", "float", default = 100, min = 1, max = 500 },
      { "sprinting", "bool" },
      { "mode", "enum", choices = { "walk", "run" }, default = "walk" },
    },
    update = function(self, entity, dt)
      if self.sprinting then self.value = self.value - 20 * dt end
    end,
  }
  keel.kind{ key = "cx:vals", multiplicity = "many", fields = {
    { "i", "int", default = 3, min = 0, max = 10 },
    { "f", "float", default = 0 },
    { "s", "string", default = "hi" },
    { "v2", "vec2" }, { "v3", "vec3", default = { 1, 2, 3 } }, { "v4", "vec4" },
    { "q", "quat" }, { "c", "color", default = { 1, 1, 1, 1 } },
    { "a", "asset" }, { "target", "entity" },
    { "e", "enum", choices = { "x", "y" }, default = "x" },
  } }
  keel.kind{ key = "cx:flags", fields = {
    { "tr", "int", default = 1, transient = true },
    { "ro", "int", default = 2, readonly = true },
    { "hid", "int", default = 3, hidden = true },
  }, update = function(self) self.ro = self.ro + 1 end }
  keel.kind{ key = "cx:nosave", nosave = true, fields = { { "x", "int", default = 0 } } }
  keel.kind{ key = "cx:capped", multiplicity = "many", max = 2, fields = {} }
  keel.kind{ key = "cx:b", fields = {} }
  keel.kind{ key = "cx:a", fields = {}, rejects = { "cx:b" } }
  keel.kind{ key = "cx:needs_b", fields = {}, requires = { "cx:b" } }
  keel.kind{ key = "cx:valid", fields = { { "lo", "int", default = 1 }, { "hi", "int", default = 2 } },
    validate = function(self, field) if self.lo > self.hi then return false, "lo must not exceed hi" end end }
  keel.kind{ key = "cx:actor", multiplicity = "many", fields = { { "n", "int", default = 0 } },
    update = function(self, e, dt)
      note("u:" .. e.name)
      local f = take(e.name)
      if f then f(self, e) end
    end }
  keel.kind{ key = "cx:mig", version = 3, fields = { { "speed", "float", default = 1 }, { "trail", "string", default = "" } },
    migrate = {
      [2] = function(body) body.speed = body.velocity / 3.6; body.velocity = nil; body.trail = "2"; return body end,
      [3] = function(body) body.trail = body.trail .. "3"; return body end,
    } }
end

-- The small scene the save-game specs share: Player (a transform at (0, 1, 0) and an audio
-- source), an empty Doomed, a Crate with a default transform. `tag` picks the UUIDs: scene
-- ...0000000000a<tag>, entities ...0000000000<tag>1..3 (each spec file its own).
function H.persist_scene(tag, name)
  local function u(tail) return "00000000-0000-4000-8000-0000000000" .. tail end
  local audio = [[
      - kind: core:audio_source
        version: 1
        slot: 0
        body: {}
]]
  return ([[
keel: 1
scene:
  uuid: 5a5e0000-0000-4000-8000-0000000000a%s
  name: %s
entities:
  - uuid: %s
    name: Player
    components:
      - kind: core:transform
        version: 1
        slot: 0
        body:
          position: [0, 1, 0]
%s  - uuid: %s
    name: Doomed
    components: []
  - uuid: %s
    name: Crate
    components:
      - kind: core:transform
        version: 1
        slot: 0
        body: {}
]]):format(tag, name, u(tag .. "1"), audio, u(tag .. "2"), u(tag .. "3"))
end

-- Records `frames` frames of w to `path` (between(i, w) runs before frame i); returns path and
-- each frame's dump after it (the replay specs compare a replay's worlds with them).
function H.record(w, path, frames, between, opts)
  local rec = assert(require("keel").record(w, path, opts))
  local dumps = {}
  for i = 1, frames do
    if between then between(i, w) end
    w:step(1 / 60)
    dumps[i] = w:dump()
  end
  assert.is_true(rec:close())
  return path, dumps
end

return H
