-- prefab_spec.lua — keel.prefab(path) and w:instantiate(p, { parent, name, set })
-- (gameplay.md, "Prefabs").
local keel = require "keel"
local H = require "helper"

local key = H.key_maker("prefab")

local LOG = {}
local function note(s) LOG[#LOG + 1] = s end

-- hp: notes its awake with the value it sees; target: an entity field; validate refuses hp < 0
local HP = key("hp")
keel.kind{
  key = HP,
  fields = { { "hp", "int", default = 10 }, { "label", "string", default = "" }, { "target", "entity" } },
  awake = function(self, e) note(("awake:%s:%d"):format(e.name, self.hp)) end,
  on_destroy = function(self, e) note("on_destroy:" .. e.name) end,
  validate = function(self) if self.hp < 0 then return false, "hp must not be negative" end end,
}

local U = { "a0000000-0000-4000-8000-000000000001", "a0000000-0000-4000-8000-000000000002",
            "a0000000-0000-4000-8000-000000000003", "a0000000-0000-4000-8000-000000000004" }

local function hp(n, target, label)
  return ("  - kind: %s\n    version: 1\n    slot: 0\n    body: {hp: %d%s%s}\n"):format(HP, n,
    target and (", target: " .. target) or "", label and (", label: " .. label) or "")
end

-- Enemy (hp 5, target Gun) > Gun (hp 2, target Enemy), Gun.target...; one top-level entity
local ENEMY = "keel: 1\nscene: {uuid: " .. H.SCENE_UUID .. ", name: Enemy}\nentities:\n"
  .. "- uuid: " .. U[1] .. "\n  name: Enemy\n  components:\n" .. hp(5, U[2])
  .. "- uuid: " .. U[2] .. "\n  name: Gun\n  parent: " .. U[1] .. "\n  components:\n" .. hp(2, U[1])

local dir
local function file(name, text)
  local p = dir .. "/" .. name
  H.spit(p, text)
  return p
end

setup(function() dir = H.tmpdir() end)
teardown(function() H.rmrf(dir) end)
before_each(function() LOG = {} end)

describe("keel.prefab()", function()
  it("reads a scene file as a template: a keel.Prefab, nothing awoken", function()
    local p = keel.prefab(file("enemy.yaml", ENEMY))
    assert.matches("^keel.Prefab", tostring(p))
    assert.are.equal(dir .. "/enemy.yaml", p.path)
    assert.are.same({}, LOG)
    assert.are.same({}, p:warnings())
  end)

  it("the example prefab under scenes/prefabs loads and instantiates", function()
    local p = assert(keel.prefab("scenes/prefabs/enemy.yaml"))
    local w = keel.world("W")
    local e = w:instantiate(p)
    assert.are.equal("Enemy", e.name)
    assert.are.equal("Weapon", e:children()[1].name)
  end)

  it("caches the parsed document by path", function()
    local path = file("cached.yaml", ENEMY)
    assert.are.equal(keel.prefab(path), keel.prefab(path))
  end)

  it("re-reads the file when it changes, an edit of the same size within the same second too", function()
    local path = file("edited.yaml", ENEMY)
    local p1 = keel.prefab(path)
    local edited = ENEMY:gsub("name: Gun", "name: Gum")
    assert.are.equal(#ENEMY, #edited)
    H.spit(path, edited) -- at once: same size, very likely the same mtime second
    local p2 = keel.prefab(path)
    assert.are_not.equal(p1, p2)
    local w = keel.world("W")
    assert.are.equal("Gum", w:instantiate(p2):children()[1].name)
    assert.are.equal("Gun", w:instantiate(p1):children()[1].name) -- an old handle keeps its template
    assert.are.equal(p2, keel.prefab(path))
  end)

  it("applies the same checks as a load: errors with file:line:col as keel.load's", function()
    local path = file("bad.yaml", ENEMY:gsub("hp: 5", "hp: five"))
    local p, err = keel.prefab(path)
    assert.is_nil(p)
    local lw, lerr = keel.load(path)
    assert.is_nil(lw)
    assert.are.equal(lerr.code, err.code)
    local d = err.diagnostics[1]
    assert.are.equal(path, d.file)
    assert.is_true(d.line > 0 and d.col > 0)
    assert.are.same(lerr.diagnostics, err.diagnostics)
    local _, missing = keel.prefab(dir .. "/absent.yaml")
    assert.are.equal("IOError", missing.code)
    H.fails("InvalidArgument", keel.prefab, 42)
  end)

  it("keeps unknown kinds, and instances carry them", function()
    local text = ENEMY .. "" -- Enemy gains an undeclared component
    text = text:gsub("(name: Enemy\n  components:\n)",
      "%1  - kind: mod:winch\n    version: 3\n    slot: 0\n    body: {rope_length: 12.5}\n")
    local p = assert(keel.prefab(file("unknown.yaml", text)))
    local w = keel.world("W")
    local e = w:instantiate(p)
    assert.are.equal("mod:winch#0," .. HP .. "#0", H.stack(e))
    assert.matches("rope_length: 12.5", w:dump())
  end)

  it("runs nothing in the template, not even when a kind declared later adopts its components", function()
    local LATE = key("late")
    local text = ENEMY:gsub("(name: Enemy\n  components:\n)",
      "%1  - kind: " .. LATE .. "\n    version: 1\n    slot: 0\n    body: {v: 3}\n")
    local p = assert(keel.prefab(file("late.yaml", text)))
    keel.kind{ key = LATE, fields = { { "v", "int" } }, awake = function(self, e) note("late:" .. e.name .. ":" .. self.v) end }
    assert.are.same({}, LOG)
    local w = keel.world("W")
    w:instantiate(p)
    assert.are.same({ "late:Enemy:3", "awake:Enemy:5", "awake:Gun:2" }, LOG)
  end)

  it("ignores the scene root's components, with a warning", function()
    local text = ENEMY:gsub("entities:\n", "root:\n- kind: core:world_settings\n  version: 1\n  slot: 0\n  body: {}\nentities:\n")
    local p = assert(keel.prefab(file("rooted.yaml", text)))
    local warns = p:warnings()
    assert.are.equal(1, #warns)
    assert.are.equal("warning", warns[1].severity)
    assert.matches("root components are ignored", warns[1].message)
    local w = keel.world("W")
    w:instantiate(p)
    assert.are.equal(0, #w.root:components())
  end)
end)

describe("w:instantiate()", function()
  local p
  before_each(function() p = keel.prefab(file("enemy.yaml", ENEMY)) end)

  it("copies every entity with fresh UUIDs, entity references inside remapped", function()
    local w = keel.world("W")
    local a = w:instantiate(p)
    local b = w:instantiate(p)
    local ga, gb = a:children()[1], b:children()[1]
    for _, e in ipairs { a, b, ga, gb } do
      assert.matches(H.UUID_PATTERN, e.uuid)
      assert.are_not.equal(U[1], e.uuid)
      assert.are_not.equal(U[2], e.uuid)
    end
    assert.are_not.equal(a.uuid, b.uuid)
    assert.are.equal(ga, a:get(HP).target)
    assert.are.equal(a, ga:get(HP).target)
    assert.are.equal(gb, b:get(HP).target)
    assert.are.equal(5, a:get(HP).hp)
    assert.are.equal(4, #H.entities(w))
  end)

  it("puts the copy under parent, at the top level by default, named by name", function()
    local w = keel.world("W")
    local spawner = w:spawn("Spawner")
    local e = w:instantiate(p, { parent = spawner, name = "Enemy 7" })
    assert.are.equal(spawner, e.parent)
    assert.are.equal("Enemy 7", e.name)
    assert.are.equal("Gun", e:children()[1].name)
    local top = w:instantiate(p)
    assert.is_nil(top.parent)
    assert.are.equal("Enemy", top.name)
  end)

  it("returns the single top-level copy, or an array when the document has several", function()
    local w = keel.world("W")
    assert.are.equal("userdata", type(w:instantiate(p)))
    local two = ENEMY .. "- uuid: " .. U[3] .. "\n  name: Second\n  components:\n" .. hp(1, U[1])
    local q = assert(keel.prefab(file("two.yaml", two)))
    local list = w:instantiate(q, { parent = w:spawn("Group") })
    assert.are.equal("table", type(list))
    assert.are.same({ "Enemy", "Second" }, H.names(list))
    assert.are.equal(list[1], list[2]:get(HP).target) -- remapped across top-level entities too
  end)

  it("applies set to that entity's components after the copy, before awake", function()
    local w = keel.world("W")
    local e = w:instantiate(p, { set = { [HP] = { hp = 42, label = "boss" },
                                         ["core:transform"] = nil } })
    assert.are.equal(42, e:get(HP).hp)
    assert.are.equal("boss", e:get(HP).label)
    assert.are.same({ "awake:Enemy:42", "awake:Gun:2" }, LOG) -- awake saw the set value, pre-order
  end)

  it("set takes entity handles of the destination world", function()
    local w = keel.world("W")
    local other = w:spawn("Other")
    local e = w:instantiate(p, { set = { [HP] = { target = other } } })
    assert.are.equal(other, e:get(HP).target)
  end)

  it("a failure publishes nothing and runs no hook", function()
    local w = keel.world("W")
    local rev = w.revision
    local function nothing()
      assert.are.equal(0, #H.entities(w))
      assert.are.same({}, LOG)
      assert.are.equal(rev, w.revision)
    end
    H.fails("InvalidArgument", w.instantiate, w, p, { set = { [HP] = { hp = "many" } } })
    nothing()
    H.fails("NotFound", w.instantiate, w, p, { set = { [HP] = { nope = 1 } } })
    nothing()
    H.fails("NotFound", w.instantiate, w, p, { set = { ["core:transform"] = { position = { 1, 2, 3 } } } })
    nothing()
    local err = H.raises(w.instantiate, w, p, { set = { [HP] = { hp = -1 } } }) -- validate refuses
    assert.are.equal("table", type(err))
    nothing()
    H.fails("InvalidArgument", w.instantiate, w, p, { colour = "red" })
    H.fails("InvalidArgument", w.instantiate, w, p, { name = 7 })
    H.fails("InvalidArgument", w.instantiate, w, p, 7)
    H.fails("InvalidArgument", w.instantiate, w, {})
    nothing()
  end)

  it("a parent of another world is a stale handle", function()
    local w, v = keel.world("W"), keel.world("V")
    H.fails("NotFound", w.instantiate, w, p, { parent = v:spawn("X") })
    assert.are.equal(0, #H.entities(w))
  end)

  it("works inside a hook, and a rollback of the hook takes the copies back", function()
    local SPAWNER = key("spawner")
    local made
    keel.kind{ key = SPAWNER, fields = { { "boom", "bool", default = false } },
      update = function(self, e)
        made = e.world:instantiate(p, { parent = e })
        if self.boom then error("boom") end
      end }
    local w = keel.world("W")
    local s = w:spawn("S")
    s:add(SPAWNER)
    w:step(1 / 60)
    assert.are.equal(1, #s:children())
    assert.is_true(made:alive())
    s:get(SPAWNER).boom = true
    LOG = {}
    w:step(1 / 60)
    assert.are.equal(1, #s:children()) -- the second copy rolled back
    assert.is_false(made:alive())
  end)
end)
