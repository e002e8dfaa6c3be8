---@meta keel
-- meta.lua — LuaLS (lua-language-server) annotations for `require "keel"`.
-- Never loaded at run time; editors read it for completion and type checks.
-- spec/meta_spec.lua checks that every public function is annotated here.

---@class KeelDiagnostic
---@field code string        # "NotFound", "InvalidOperation", ...
---@field message string
---@field path string        # e.g. "entities[3].components[1].body.range"
---@field file? string
---@field line? integer
---@field col? integer
---@field severity "error"|"warning"

---A failed operation raises one of these (file operations return `nil, KeelError`).
---`tostring(err)` gives "Code: message", or "where: Code: message" when raised from Lua code.
---@class KeelError
---@field code string
---@field message string
---@field diagnostics KeelDiagnostic[]
---@field where? string             # "chunk:line" of the Lua call into keel that raised it

---@alias KeelFieldType "bool"|"int"|"float"|"vec2"|"vec3"|"vec4"|"quat"|"color"|"enum"|"string"|"asset"|"entity"

---@class KeelFieldInfo
---@field key string
---@field type KeelFieldType
---@field default any
---@field min? number
---@field max? number
---@field choices? string[]
---@field transient boolean
---@field readonly boolean
---@field hidden boolean
---@field runtime? true               # saved in save games, never in scene files (absent when not)
---@field sync? true                  # replicated to client worlds (absent when not)
---@field tooltip? string             # help text (absent when none)
---@field derived? true               # shown and saved through get/set (absent when not)

---@class KeelKindInfo
---@field key string
---@field display string
---@field category string
---@field version integer
---@field multiplicity "one"|"many"
---@field max? integer
---@field requires string[]
---@field rejects string[]
---@field builtin boolean
---@field nosave boolean                 # never written to any file
---@field editor_only boolean            # kept in YAML, dropped by cooking
---@field root_only boolean              # only on the scene root
---@field not_on_root boolean            # never on the scene root
---@field sync? { interval: integer, radius?: number } # replicated (absent when not)
---@field tooltip? string                # help text (absent when none)
---@field summon? false                  # present when the channel may not add or spawn it
---@field fields KeelFieldInfo[]

---A field declaration: `{ "name", "type", default = ..., min = ..., max = ..., choices = {...},
---transient = true, readonly = true, hidden = true }`.
---@class KeelFieldDecl
---@field [1] string
---@field [2] KeelFieldType
---@field default? any
---@field min? number
---@field max? number
---@field choices? string[]
---@field transient? boolean
---@field readonly? boolean
---@field hidden? boolean
---@field runtime? boolean              # saved in save games, never in scene files
---@field sync? boolean                 # replicated to client worlds (keel.net)
---@field tooltip? string               # UTF-8, at most 1 KiB
---@field get? fun(self: table): any    # derived field: both get and set, no storage of its own
---@field set? fun(self: table, value: any)

---@class KeelKindDecl
---@field key string                     # "ns:name"
---@field display? string
---@field category? string
---@field version? integer               # default 1
---@field multiplicity? "one"|"many"     # default "one"
---@field max? integer                   # many kinds only
---@field requires? string[]
---@field rejects? string[]
---@field nosave? boolean
---@field editor_only? boolean
---@field root_only? boolean          # only on the scene root
---@field not_on_root? boolean               # never on the scene root (as core:transform)
---@field sync? { interval?: integer, radius?: number }  # deltas every Nth tick, 1..1200; radius (0, 10000]
---@field tooltip? string                # UTF-8, at most 1 KiB
---@field summon? boolean                # false: the channel and MCP cannot add or spawn it
---@field renames? table<integer, table<string, string>> # [version] = { old = "new" }, before migrate[version]
---@field client_update? fun(self: KeelComponent, entity: KeelEntity, dt: number) # only on clients, in cl:service()
---@field fields? KeelFieldDecl[]
---@field awake? fun(self: KeelComponent, entity: KeelEntity)
---@field start? fun(self: KeelComponent, entity: KeelEntity)
---@field update? fun(self: KeelComponent, entity: KeelEntity, dt: number)
---@field fixed_update? fun(self: KeelComponent, entity: KeelEntity, dt: number)
---@field late_update? fun(self: KeelComponent, entity: KeelEntity, dt: number)
---@field on_destroy? fun(self: KeelComponent, entity: KeelEntity)
---@field on_transfer? fun(self: KeelComponent, entity: KeelEntity, from_world: KeelWorld)
---@field on_message? fun(self: KeelComponent, entity: KeelEntity, name: string, data: any, sender: KeelEntity?)
---@field validate? fun(self: KeelComponent, field: string): boolean?, string?
---@field migrate? table<integer, fun(body: table): table>

---@class KeelLoadOptions
---@field strict? boolean
---@field assets? string|false    # an assets.yaml manifest (keel.load: the one beside the scene; false: none)
---@field limits? table<string, integer>

---@class KeelSpawnSpec
---@field name? string
---@field parent? KeelEntity
---@field enabled? boolean
---@field components? (string|table)[]  # "kind" or { "kind", field = value, ... }

---@class KeelFault
---@field entity string
---@field kind string
---@field slot integer
---@field phase string
---@field message string
---@field timer? integer            # a timer's failure: its `t.id` (kind "", entity its owner's or the root's)
---@field system? string            # a system's failure: its name
---@field where? string             # "chunk:line" of the Lua code that raised it (also in message)
---@field count integer             # the same failure in the same step is one entry: how many times

---@class KeelWorld
---@field uuid string
---@field seed integer               # the world's random generator's seed (w:random); settable
---@field name string
---@field root KeelEntity
---@field playing boolean           # between w:play() and w:stop()
---@field revision integer
---@field path string?              # the scene file it was loaded from (keel.load) or adopted; nil otherwise
---@field saved_revision integer   # the revision at that load or the last save to w.path (else at its making)
---@field dirty boolean            # revision ~= saved_revision: changes not saved
---@field settings KeelSettings     # the scene settings, live: w.settings.grid.base_spacing = 2
---@field profiling boolean        # frame statistics collected (w:stats()); off by default
local World = {}

---@class KeelGridSettings
---@field enabled boolean
---@field origin number[]
---@field orientation number[]       # a normalized quaternion
---@field base_spacing number        # > 0
---@field major_line_every integer   # >= 1
---@field minor_color number[]       # r, g, b, a in [0, 1]
---@field major_color number[]
---@field u_color number[]
---@field v_color number[]
---@field fade number                # >= 0; 0: never
---@field display "lines"|"dots"|"none"

---@class KeelSettings
---@field grid KeelGridSettings

---@param name_or_spec string|KeelSpawnSpec
---@return KeelEntity
function World:spawn(name_or_spec) end

---A UUID string first, else the first entity with that name.
---@param uuid_or_name string
---@return KeelEntity?
function World:find(uuid_or_name) end

---Entities in run order (hierarchy pre-order).
---@return fun(): KeelEntity
function World:entities() end

---Enabled components of `kind` on active entities; a trailing `{ all = true }` lists disabled ones too.
---@param kind string
---@param opts? { all: boolean }
---@return fun(): KeelEntity, KeelComponent
function World:each(kind, opts) end

---@param ... string kind keys
---@return fun(): KeelEntity, KeelComponent, ...
function World:query(...) end

---Entities (no kind), or enabled components of `kind` on active entities (`{ all = true }`: all).
---@param kind? string
---@param opts? { all: boolean }
---@return integer
function World:count(kind, opts) end

---@param dt? number
function World:step(dt) end

---@param frames integer
---@param dt? number
function World:run(frames, dt) end

---@return KeelFault[]
function World:errors() end

---Warnings of the load that made this world (unknown kinds, skipped fields).
---@return KeelDiagnostic[]
function World:warnings() end

---Saves to `path`, or to `w.path` when none is given (InvalidArgument when nil; the world is
---then clean). Another path is a copy (w.path and the checkpoint stay) unless `opts.adopt`.
---@param path? string
---@param opts? { adopt: boolean? }
---@return true|nil ok
---@return KeelError? err
function World:save(path, opts) end

---A save taken off the frame (design/saving.md): the world is captured now, a worker encodes and
---writes it. Refused as `w:save` is (raised inside a callback; nil, err while lifted, or when a
---job to the same file is pending); the job's own failure comes only from `done()`/`wait()`.
---@param path? string
---@param opts? { adopt: boolean? }
---@return KeelJob|nil job
---@return KeelError? err
function World:save_async(path, opts) end

---Copies a fragment (`e:dump()`) in with fresh UUIDs, as duplicate does (entity fields inside it
---remapped, ones naming an entity outside it kept when this world holds it, cleared otherwise),
---under `parent` (default: the top level); awake runs. A fragment that would not load is
---refused whole (raises with the load's diagnostics). Returns the new top entities.
---@param text string
---@param parent? KeelEntity
---@return KeelEntity[]
function World:paste(text, parent) end

---@return string yaml canonical YAML text
function World:dump() end

---@class keel.Watcher
---@field poll fun(self: keel.Watcher): table|nil   # { reloaded | merged, changes } | { conflicts = { { path, base, ours, theirs } } } | { errors } | { kinds }
---@field resolve fun(self: keel.Watcher, take: "ours"|"theirs", paths?: string[]): table
---@field conflicts fun(self: keel.Watcher): table|nil
---@field close fun(self: keel.Watcher)

---Watches the world's scene file (and the kinds folders in use): poll() applies a change on disk in
---place (one history entry), merges it with live edits, or reports conflicts (design/editing.md).
---@param opts? { interval?: number, path?: string }
---@return keel.Watcher
function World:watch(opts) end

---A number from the world's own generator (seeded by w.seed), with math.random's signature:
---no argument a float in [0, 1), (m) an integer in [1, m], (m, n) one in [m, n].
---@param m? integer
---@param n? integer
---@return number
function World:random(m, n) end

---Moves `e` and its subtree into `other` (under `parent`, an entity of `other`), as one:
---checked first (a refusal moves nothing), then UUIDs, names, bodies, slots, versions, flags
---and unknown components kept, no awake or on_destroy, then each component's on_transfer.
---Returns `e`'s handle in `other`; the old handles refuse (NotFound).
---@param e KeelEntity
---@param other KeelWorld
---@param parent? KeelEntity
---@return KeelEntity
function World:transfer(e, other, parent) end

---Copies every entity of the prefab's document into this world with fresh UUIDs (entity
---references inside it remapped), under `opts.parent` (default: the top level), the top-level
---copies renamed to `opts.name`; `opts.set` ({ [kind key] = { field = value } }) is written
---to the top-level copies' components before any awake runs (pre-order). Returns the copy of
---the single top-level entity, or an array of them when the document has several. A failure
---(a bad set, a validate refusal, kind rules) raises and leaves the world untouched, no hook
---run. Allowed inside a callback: a rollback of it takes the copies back.
---@param p KeelPrefab
---@param opts? KeelInstantiateOptions
---@return KeelEntity|KeelEntity[]
function World:instantiate(p, opts) end

---Play mode: remembers the world as it is now (entities, components, fields, unknown
---components, settings, the revision); `w:stop()` puts it back. InvalidOperation when already
---playing or inside a callback.
function World:play() end

---Puts the world back exactly as it was at `w:play()`, as a new epoch: every handle taken
---before (the root's too) refuses afterwards; the World handle itself stays good. Then what
---`w:keep` marked is written into it (authored fields only) as one history entry ("keep play
---changes"); returns the entries refused there (InvalidOperation error objects; empty when all
---applied) and that entry's inverse command (nil when nothing changed).
---@return table[] refused
---@return userdata? inverse
function World:stop() end

---While playing: carries `e` (or its component `kind` at `slot`) back into the world `w:stop()`
---restores. InvalidOperation outside play mode.
---@param e KeelEntity
---@param kind? string
---@param slot? integer
function World:keep(e, kind, slot) end

---Sends `name` with a copy of `data` (plain data) to every component with on_message, in run
---order, at the end of the current phase (or the start of the next step).
---@param name string
---@param data? any
function World:broadcast(name, data) end

---What the renderer's C snapshot (`keel_snapshot_extract`) holds now, read-only (a write
---raises Unsupported): `drawables` and `lights` in run order, each with its `entity` and
---`world` matrix (16 numbers, column-major), `camera` (nil when none) and `ambient`.
---@return KeelSnapshot
function World:snapshot() end

---The last step measured while `w.profiling` was on (zeros and empty lists when none was): per
---phase, per system and per (kind, phase) of hooks in ms, counts, and the last 300 frame times.
---`{ history = false }` leaves `history` and `phase_history` out.
---@param opts? { history: boolean? }
---@return { frame: integer, frame_ms: number, phases: { name: string, ms: number }[], systems: { name: string, ms: number, calls: integer, entities: integer }[], kinds: { kind: string, phase: string, ms: number, calls: integer }[], messages: integer, timers: integer, spawned: integer, destroyed: integer, faults: integer, lua_kb: number, history: number[]?, phase_history: table<string, number[]>?, profiling: boolean }
function World:stats(opts) end

---Takes `e`'s subtree out of play without destroying it (not alive to lookups, queries,
---steps, dumps or saves; no hook runs). InvalidOperation inside a callback.
---@param e KeelEntity
---@return KeelLift
function World:lift(e) end

---Calls `fn(w)` once, after `seconds` (finite, >= 0) of world time (the sum of the dt given
---to `w:step`): at the start of the update phase of the step in which it falls due, in due-time
---order (ties: creation order). Each call is a transaction: an error rolls back its writes and
---structural changes, is recorded once in `w:errors()` (with `timer = t.id`) and ends the timer;
---the step goes on. Timers are runtime state: never in scene files, dumps or save games;
---`w:stop()` and `w:close()` cancel them. A timer made while timers fire waits for the next step.
---@param seconds number
---@param fn fun(w: KeelWorld)
---@return KeelTimer
function World:after(seconds, fn) end

---As `w:after`, repeating every `seconds` (finite, > 0); it fires at most once per step (the
---periods a long step passes are dropped: its next due time is the first period end after now).
---@param seconds number
---@param fn fun(w: KeelWorld)
---@return KeelTimer
function World:every(seconds, fn) end

---@class KeelTimer
---@field remaining number?  # seconds until due (0 while firing); nil once it ended (fired once, cancelled, failed, its owner or world gone)
---@field id integer         # the `timer` of its entry in `w:errors()`
local Timer = {}
---Cancels it; true when it was pending (cancelling an ended timer does nothing). A timer may
---cancel itself from its own callback.
---@return boolean
function Timer:cancel() end

---@class KeelInstantiateOptions
---@field parent? KeelEntity
---@field name? string
---@field set? table<string, table<string, any>>

---A scene document used as a template (`keel.prefab`): loaded with the checks of `keel.load`,
---no awake; its scene root's components are ignored, with a warning.
---@class KeelPrefab
---@field path string
local Prefab = {}
---@return KeelDiagnostic[] warnings the load's warnings, the ignored root components among them
function Prefab:warnings() end

---@class KeelSnapDrawable
---@field entity KeelEntity
---@field world number[]       # 16 numbers, column-major
---@field mesh string?         # asset UUID
---@field material string?
---@field color number[]
---@field metallic number
---@field roughness number
---@field casts_shadow boolean

---@class KeelSnapLight
---@field entity KeelEntity
---@field type "point"|"spot"|"directional"
---@field world number[]
---@field color number[]
---@field intensity number
---@field range number
---@field inner_angle number
---@field outer_angle number

---@class KeelSnapCamera
---@field entity KeelEntity
---@field world number[]
---@field projection string
---@field fov number
---@field near number
---@field far number

---@class KeelSnapshot
---@field drawables KeelSnapDrawable[]
---@field lights KeelSnapLight[]
---@field camera KeelSnapCamera?
---@field ambient number[]

---@class KeelLift
local Lift = {}
---Puts the subtree back exactly: same handles, fields, versions and place in run order.
function Lift:restore() end
---Removes the subtree for good: on_destroy once for each component.
function Lift:discard() end

---Frees the world now instead of at collection (also `local w <close> = ...`); its
---handles go stale. Refused (InvalidOperation) inside its own step and inside any callback of
---it (a hook, validate) or any migrate step; closing twice is a no-op.
function World:close() end

---@class KeelEntity
---@field uuid string
---@field name string
---@field parent KeelEntity?
---@field enabled boolean
---@field world KeelWorld
local Entity = {}

---Sends `name` with a copy of `data` (plain data: nil, booleans, numbers, strings, entity
---handles and tables of those) to every component of this entity with on_message, delivered
---at the end of the current phase (or the start of the next step).
---@param name string
---@param data? any
function Entity:send(name, data) end

---@return boolean
function Entity:alive() end

---@return KeelEntity[]
function Entity:children() end

---@param kind string
---@param body? table
---@param slot? integer
---@return KeelComponent
function Entity:add(kind, body, slot) end

---Where the entity is in the world: its `core:transform` composed with its parents' (those
---without one count as identity), as the C snapshot composes it. nil when it has no
---`core:transform`; NotFound on a stale handle. rotation is a unit quaternion with w >= 0;
---scale is each axis's length (x negative when mirrored).
---@return number[]? position
---@return number[]? rotation
---@return number[]? scale
function Entity:world_transform() end

---@param kind string
---@param slot? integer
---@return KeelComponent?
function Entity:get(kind, slot) end

---@param kind string
---@return boolean
function Entity:has(kind) end

---@param kind string
---@param slot? integer
---@return table body the removed body
function Entity:remove(kind, slot) end

---@return KeelComponent[]
function Entity:components() end

---@param parent? KeelEntity
---@return KeelEntity
function Entity:duplicate(parent) end

---The entity and its subtree as a scene fragment (canonical YAML, the scene file's syntax) for
---`w:paste`. ProtectedEntity for the root.
---@return string yaml
function Entity:dump() end

function Entity:destroy() end

---`w:after` owned by `e`: calls `fn(e)`; cancelled when `e` is destroyed, transferred out of
---the world, or its world is closed or stopped. NotFound on a stale handle.
---@param seconds number
---@param fn fun(e: KeelEntity)
---@return KeelTimer
function Entity:after(seconds, fn) end

---`w:every` owned by `e` (see Entity:after).
---@param seconds number
---@param fn fun(e: KeelEntity)
---@return KeelTimer
function Entity:every(seconds, fn) end

---@class KeelComponent
---@field kind string
---@field slot integer
---@field entity KeelEntity
---@field loaded boolean
---@field version integer
---@field enabled boolean
---@field faulted boolean          # a hook failed; set false to run it again
---@field [string] any
local Component = {}

---@param values table<string, any>
function Component:set(values) end

---@return table<string, any>
function Component:body() end

---@param field? string
function Component:reset(field) end

---@param field string
---@return number ...
function Component:unpack(field) end

---@class KeelBaseline

---@class KeelSlotInfo
---@field title? string
---@field saved_at? integer
---@field play_seconds? number
---@field [string] any

---A save running on a worker thread (`w:save_async`, `keel.persist.save_async`).
---@class KeelJob
---@field path string the path given to the call
local Job = {}

---nil while writing; then true, or false and the error object the synchronous save would return.
---@return boolean|nil ok
---@return KeelError? err
function Job:done() end

---Blocks until the job is done; returns what `done()` returns.
---@return boolean ok
---@return KeelError? err
function Job:wait() end

---@class KeelPersist
local persist = {}

---As `persist.save`, off the frame: the capture now, the writing on a worker.
---@param w KeelWorld
---@param base KeelBaseline
---@param path string
---@param info? KeelSlotInfo
---@return KeelJob|nil job
---@return KeelError? err
function persist.save_async(w, base, path, info) end

---What `persist.save` would write, as text (`keel_save: 1`, details, spawned, destroyed, changed).
---@param w KeelWorld
---@param base KeelBaseline
---@param info? KeelSlotInfo
---@return string|nil text
---@return KeelError? err
function persist.dump(w, base, info) end

---As `persist.load`, from a save game's text (ParseError with file:line:col when malformed).
---@param w KeelWorld
---@param text string
---@param name? string the file name diagnostics give
---@return true|nil ok
---@return KeelError? err
function persist.load_text(w, text, name) end

---@param w KeelWorld
---@return KeelBaseline
function persist.baseline(w) end

---@param w KeelWorld
---@param base KeelBaseline
---@param path string
---@param info? KeelSlotInfo
---@return true|nil ok
---@return KeelError? err
function persist.save(w, base, path, info) end

---@param w KeelWorld
---@param path string
---@return true|nil ok
---@return KeelError? err
function persist.load(w, path) end

---@param path string
---@return KeelSlotInfo|nil info
---@return KeelError? err
function persist.info(path) end

---Rotations in degrees: Z, then X, then Y about fixed axes (Unity's order), q = qY·qX·qZ.
---@class KeelQuat
local quat = {}

---@param x number|number[]  # degrees, or one table { x, y, z }
---@param y? number
---@param z? number
---@return number[] q        # { x, y, z, w }, unit length, w >= 0
function quat.from_euler(x, y, z) end

---@param q number[]
---@return number x
---@return number y
---@return number z
function quat.to_euler(q) end

---@param q number[]
---@return number[] q        # unit length, w >= 0
function quat.canonical(q) end

---@class keel
---@field persist KeelPersist
---@field quat KeelQuat
local keel = {}

---@class KeelSystemSpec
---@field name string
---@field phase "start"|"fixed_update"|"update"|"late_update"
---@field query? string[]             # each: the kinds an entity must hold (lowest slot of each)
---@field after? string[]             # systems of the phase that run first
---@field each? fun(e: KeelEntity, ...: KeelComponent|number)  # components in query order, then dt
---@field run? fun(w: KeelWorld, dt: number)
---@field columns? fun(n: integer, ...: table|number)  # a batch: each kind's field arrays (a.x[i]), then dt
---@field writes? string[]            # columns: the kinds read back after the call (none when absent)
---@field entities? boolean           # columns: a.entity[i] holds the entity handles

---@class KeelSystemInfo
---@field name string
---@field phase string
---@field query string[]
---@field after string[]
---@field faulted boolean

---Declares (or redeclares, clearing its fault) a system: after a phase's component hooks, in
---`after` order (ties: declaration order; a cycle is InvalidArgument). Each call is a
---transaction; a failure faults the system (skipped until redeclared or system_reset) and is
---recorded once in `w:errors()` with `system = name`.
---@param spec KeelSystemSpec
---@return string name
function keel.system(spec) end

---@return KeelSystemInfo[]
function keel.systems() end

---Clears a system's fault: it runs again.
---@param name string
function keel.system_reset(name) end


---Declares (or redeclares: hot reload) a kind; returns its key, and its warnings when there are
---some (a carried-over value outside the new bounds reset to its default, an unknown component
---left unadopted). Raises InvalidOperation, changing nothing, when a live component would break
---the new rules.
---@param decl KeelKindDecl
---@return string key
---@return KeelDiagnostic[]? warnings
function keel.kind(decl) end

---@return KeelKindInfo[]
function keel.kinds() end

---@param key string
---@return KeelKindInfo?
function keel.kind_info(key) end

---@param name? string
---@return KeelWorld
function keel.world(name) end

---@param path string
---@param opts? KeelLoadOptions
---@return KeelWorld|nil world
---@return KeelError? err
function keel.load(path, opts) end

-- ---- recording and replaying (design/replay.md) ----

---@class KeelRecorder
---@field frames integer   # frames written
---@field bytes integer    # bytes written
---@field closed boolean   # closed by rec:close() or with its world
local Recorder = {}
---Writes the last keyframe and closes the file; nil and an error when a write failed.
---@return true|nil ok
---@return KeelError? err
function Recorder:close() end

---@class KeelReplay
---@field frames integer          # frames recorded
---@field frame integer           # the frame the replay's world is at (0: keyframe 0)
---@field world KeelWorld         # the replay's world (read-only: writes are InvalidOperation)
---@field keyframes integer[]     # the frames that have a keyframe
---@field truncated boolean       # the file ended in a torn write (it replays to its last whole frame)
---@field hash string             # the state hash of the world now (16 hex digits)
---@field diverged integer?       # the first frame verification failed at
---@field differences { entity: string, kind?: string, slot: integer, field?: string, recorded: string, replayed: string }[]?
local Replay = {}
---Re-simulates n frames (default 1), verifying each; raises Diverged at the first that differs.
---@param n? integer
---@return integer frame
function Replay:step(n) end
---Jumps to `frame`: from the nearest keyframe at or before it, re-simulating the rest.
---@param frame integer
---@return integer frame
function Replay:seek(frame) end
---A live world at the current frame (the one rp.world was); the replay goes on in a new world.
---@return KeelWorld
function Replay:branch() end
function Replay:close() end

---Records the session of `w` into `path` (design/replay.md); InvalidOperation when timers or
---messages are pending, the world records already or is a replay's; nil and an IOError when the
---file cannot be written.
---@param w KeelWorld
---@param path string
---@param opts? { keyframe_every?: integer }
---@return KeelRecorder|nil rec
---@return KeelError? err
function keel.record(w, path, opts) end

---Opens a recording: nil and an error when damaged (ParseError with the offset), missing
---(IOError) or recorded with kinds that differ (InvalidOperation, unless allow_changed_kinds).
---@param path string
---@param opts? { allow_changed_kinds?: boolean, verify?: boolean }
---@return KeelReplay|nil rp
---@return KeelError? err
function keel.replay(path, opts) end

---A scene file as a template for `w:instantiate`, cached by path: the same Prefab while the
---file's content is unchanged (its bytes are compared on every call, so any edit is seen), else
---the file read again. nil and an error (as `keel.load`'s, with file:line:col) on failure.
---@param path string
---@return KeelPrefab|nil prefab
---@return KeelError? err
function keel.prefab(path) end

---@param yaml string
---@param opts? KeelLoadOptions
---@return KeelWorld|nil world
---@return KeelError? err
function keel.parse(yaml, opts) end

---@class KeelServeOptions
---@field port? integer 27760 by default; 0 picks a free port
---@field token? string the access token (default: 32 random hex digits per start)
---@field bind? string the address to listen on (default "127.0.0.1")
---@field scene? string the scene's file: world.save's default and the folder it may write in
---@field paused? boolean nothing steps until a client asks (keel serve)
---@field dt? number the frame time of world.step and the serve loop (default 1/60)

---@class KeelServer
---@field url string "http://127.0.0.1:PORT/#token=TOKEN"
---@field token string
---@field port integer
---@field channel table the JSON-RPC dispatcher (`require "keel.channel"`): ch:handle(text), ch:call(method, params)
local Server = {}
---Answers the requests that arrived, waiting at most `seconds` (default 0), then publishes to watchers.
---@param seconds? number
---@return boolean
function Server:poll(seconds) end
function Server:close() end

---The live channel over HTTP (README "The live channel"): requests are answered when the server
---is polled, at the start of every step of `w`, and while `keel serve` or the REPL waits.
---nil and a message when the port cannot be listened on.
---@param w KeelWorld
---@param opts? KeelServeOptions
---@return KeelServer|nil server
---@return string? err
function keel.serve(w, opts) end

---`require "keel.history"`: the undo stack module.
---@class KeelHistoryModule
local history = {}

---A history of `w`; misuse (not a world) raises InvalidArgument.
---@param w KeelWorld
---@return KeelHistory
function history.new(w) end

---@class KeelHistory
local History = {}

---@param spec string|KeelSpawnSpec
---@return KeelEntity
function History:spawn(spec) end
---@param e KeelEntity
function History:destroy(e) end
---@param e KeelEntity
---@param kind string
---@param body? table
---@return KeelComponent
function History:add(e, kind, body) end
---@param e KeelEntity
---@param kind string
---@param slot? integer
function History:remove(e, kind, slot) end
---@param c KeelComponent
---@param field string
---@param value any
function History:set(c, field, value) end
---@param e KeelEntity
---@param parent KeelEntity?
function History:reparent(e, parent) end
---@param e KeelEntity
---@param name string
function History:rename(e, name) end
---@param e KeelEntity
---@param parent? KeelEntity
---@return KeelEntity copy
function History:duplicate(e, parent) end
---@param x KeelEntity|KeelComponent
---@param on boolean
function History:enable(x, on) end
---@param text string a fragment (e:dump())
---@param parent? KeelEntity
---@return KeelEntity[]
function History:paste(text, parent) end
---A scene setting ("grid.KEY", or "grid" with a table of keys) as one entry.
---@param path string
---@param value any
function History:set_setting(path, value) end
---@return boolean
function History:undo() end
---@return boolean
function History:redo() end


---Replication (README "Replication"): a host serves a world's synced state to client worlds.
---@class KeelNetHostOptions
---@field port? integer                  # default 27761; 0: any free port
---@field bind? string
---@field max_clients? integer           # 1..4095, default 32
---@field interest? { radius: number }   # default: everything
---@field budget? integer                # bytes per client per tick, default 65536
---@field tick? number                   # seconds of w:step between network ticks, > 0, default 1/30

---@class KeelNetHost
local NetHost = {}
---@return true|nil ok, KeelError? err
function NetHost:service() end
---@return { name: string }[]
function NetHost:clients() end
---@param client string|{ name: string }
---@param e KeelEntity
function NetHost:focus(client, e) end
---@return integer
function NetHost:port() end
function NetHost:close() end

---@class KeelNetClient
---@field world KeelWorld                 # the mirror (closed with the client)
---@field connected boolean               # joined: the handshake was accepted
---@field reason string?                  # why it was refused or dropped
local NetClient = {}
---@return true|nil ok, KeelError? err
function NetClient:service() end
function NetClient:close() end

keel.net = {}
---@param w KeelWorld
---@param opts? KeelNetHostOptions
---@return KeelNetHost
function keel.net.host(w, opts) end
---@param addr string
---@param port integer
---@param opts? { name?: string }
---@return KeelNetClient
function keel.net.connect(addr, port, opts) end

return keel
