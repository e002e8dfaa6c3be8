-- merge_spec.lua — `keel merge` (design/merge.md): scenes merged as data, in real git repositories
-- with the installed driver, each conflict class, --take, text merges, and a property test of
-- random disjoint edits.

local H = require "helper"
local q, slurp, spit, tmpdir, rmrf = H.shell_quote, H.slurp, H.spit, H.tmpdir, H.rmrf

local KEEL = H.find_keel()
local BINDIR = KEEL:match("^(.*)/[^/]*$")
local keel_api = require "keel"

-- A shell command in `cwd` with the built keel first on PATH (git runs the driver through it)
-- and no user or system git configuration. Returns exit code and output (stdout + stderr).
local function sh(cwd, cmd)
  local out = os.tmpname()
  local env = "env -u LD_PRELOAD GIT_CONFIG_NOSYSTEM=1 HOME=" .. q(cwd) .. " PATH=" .. q(BINDIR .. ":" .. os.getenv("PATH"))
  local _, _, code = os.execute("cd " .. q(cwd) .. " && " .. env .. " sh -c " .. q(cmd) .. " >" .. out .. " 2>&1")
  local text = slurp(out) or ""
  os.remove(out)
  return code, text
end

local function ok_sh(cwd, cmd)
  local code, text = sh(cwd, cmd)
  assert.are.equal(0, code, cmd .. "\n" .. text)
  return text
end

-- ---- scene documents as tables, written as YAML ----

local function uuid(n) return ("%08x-0000-4000-8000-%012x"):format(0x5ce9e, n) end
local SCENE = "5ce9e000-0000-4000-8000-000000000000"

local function scalar(v)
  if math.type(v) == "integer" then return tostring(v) end
  if type(v) == "number" then return ("%.17g"):format(v) end
  if type(v) == "boolean" then return tostring(v) end
  return '"' .. v .. '"'
end

local function value(v)
  if type(v) ~= "table" then return scalar(v) end
  local t = {}
  for i, x in ipairs(v) do t[i] = scalar(x) end
  return "[" .. table.concat(t, ", ") .. "]"
end

-- doc = { name = "S", entities = { { uuid, name, parent?, comps = { { kind, slot, body = { {k, v}, ... } } } } } }
local function yaml(doc)
  local out = { "keel: 1", "scene:", "  uuid: " .. SCENE, "  name: " .. doc.name, "root: []" }
  out[#out + 1] = #doc.entities == 0 and "entities: []" or "entities:"
  for _, e in ipairs(doc.entities) do
    out[#out + 1] = "- uuid: " .. e.uuid
    out[#out + 1] = "  name: " .. e.name
    if e.parent then out[#out + 1] = "  parent: " .. e.parent end
    out[#out + 1] = #e.comps == 0 and "  components: []" or "  components:"
    for _, c in ipairs(e.comps) do
      out[#out + 1] = "  - kind: " .. c.kind
      out[#out + 1] = "    version: 1"
      out[#out + 1] = "    slot: " .. c.slot
      out[#out + 1] = #c.body == 0 and "    body: {}" or "    body:"
      for _, kv in ipairs(c.body) do out[#out + 1] = "      " .. kv[1] .. ": " .. value(kv[2]) end
    end
  end
  return table.concat(out, "\n") .. "\n"
end

local function copy(t)
  if type(t) ~= "table" then return t end
  local c = {}
  for k, v in pairs(t) do c[k] = copy(v) end
  return c
end

local function find_ent(doc, u)
  for i, e in ipairs(doc.entities) do
    if e.uuid == u then return e, i end
  end
end

local function find_comp(e, kind, slot)
  for i, c in ipairs(e.comps) do
    if c.kind == kind and c.slot == slot then return c, i end
  end
end

local function transform(x) return { kind = "core:transform", slot = 0, body = { { "position", { x, 0, 0 } } } } end

-- Edits, applied to a document table as keel applies them to a world.
local function apply(doc, op)
  local e, i = find_ent(doc, op.uuid)
  if op.type == "add_entity" then
    doc.entities[#doc.entities + 1] = { uuid = op.uuid, name = op.name, parent = op.parent, comps = { transform(op.x) } }
  elseif op.type == "remove_entity" then
    table.remove(doc.entities, i)
  elseif op.type == "reparent" then -- the entity becomes its new parent's last child
    table.remove(doc.entities, i)
    e.parent = op.parent
    doc.entities[#doc.entities + 1] = e
  elseif op.type == "rename" then
    e.name = op.name
  elseif op.type == "set" then
    local c = find_comp(e, op.kind, op.slot)
    for _, kv in ipairs(c.body) do
      if kv[1] == op.key then kv[2] = op.value end
    end
  elseif op.type == "add_comp" then
    e.comps[#e.comps + 1] = { kind = op.kind, slot = op.slot, body = copy(op.body) }
  elseif op.type == "remove_comp" then
    local _, j = find_comp(e, op.kind, op.slot)
    table.remove(e.comps, j)
  end
end

-- A base scene of `n` entities: a hierarchy, transforms, audio sources, lights and a kind no
-- script declares (its body compared as a tree).
local function random_base(n)
  local doc = { name = "Base", entities = {} }
  for i = 1, n do
    local e = { uuid = uuid(i), name = "E" .. i, comps = { transform(i) } }
    if i > 3 and math.random() < 0.5 then e.parent = uuid(math.random(1, i - 1)) end
    if math.random() < 0.5 then
      e.comps[#e.comps + 1] = { kind = "core:audio_source", slot = 0, body = { { "volume", 1 } } }
    end
    if math.random() < 0.3 then e.comps[#e.comps + 1] = { kind = "core:point_light", slot = 0, body = {} } end
    if math.random() < 0.3 then
      e.comps[#e.comps + 1] = { kind = "mod:thing", slot = 0, body = { { "level", i }, { "tag", "t" .. i } } }
    end
    doc.entities[#doc.entities + 1] = e
  end
  return doc
end

local serial = 1000
local function fresh_uuid()
  serial = serial + 1
  return uuid(serial)
end

-- Up to `count` valid edits on `doc` (applied to it as they are made) touching only the
-- entities `mine` allows; new entities join `mine`. `base` says which entities had children.
local function random_edits(doc, mine, count)
  local ops, gone, parents = {}, {}, {}
  for _, e in ipairs(doc.entities) do
    if e.parent then parents[e.parent] = true end
  end
  local new_tops = {}
  for _ = 1, count do
    local pool = {}
    for _, e in ipairs(doc.entities) do
      if mine[e.uuid] and not gone[e.uuid] then pool[#pool + 1] = e end
    end
    if #pool == 0 then break end
    local e = pool[math.random(#pool)]
    local r, op = math.random(9), nil
    if r == 1 then
      op = { type = "set", uuid = e.uuid, kind = "core:transform", slot = 0, key = "position",
             value = { math.random(-50, 50), math.random(0, 9), 0 } }
    elseif r == 2 then
      op = { type = "rename", uuid = e.uuid, name = "R" .. math.random(1000) }
    elseif r == 3 then
      local u = fresh_uuid()
      op = { type = "add_entity", uuid = u, name = "N" .. serial, parent = math.random() < 0.5 and e.uuid or nil,
             x = math.random(100) }
      if op.parent then parents[e.uuid] = true else new_tops[#new_tops + 1] = u end
      mine[u] = true
    elseif r == 4 and not parents[e.uuid] then
      op = { type = "remove_entity", uuid = e.uuid }
      gone[e.uuid] = true
    elseif r == 5 then -- to the top level, or under an entity this side added at the top
      local target = #new_tops > 0 and math.random() < 0.5 and new_tops[math.random(#new_tops)] or nil
      if target ~= e.uuid and target ~= e.parent then -- a move among the same siblings is not merged (ours' order)
        op = { type = "reparent", uuid = e.uuid, parent = target }
        if target then parents[target] = true end
      end
    elseif r == 6 then
      local slot = -1
      for _, c in ipairs(e.comps) do
        if c.kind == "core:audio_source" and c.slot > slot then slot = c.slot end
      end
      op = { type = "add_comp", uuid = e.uuid, kind = "core:audio_source", slot = slot + 1,
             body = { { "volume", math.random(0, 4) / 4 } } }
    elseif r == 7 then
      local removable = {}
      for _, c in ipairs(e.comps) do
        if c.kind ~= "core:transform" then removable[#removable + 1] = c end
      end
      if #removable > 0 then
        local c = removable[math.random(#removable)]
        op = { type = "remove_comp", uuid = e.uuid, kind = c.kind, slot = c.slot }
      end
    elseif r == 8 and find_comp(e, "mod:thing", 0) then
      op = { type = "set", uuid = e.uuid, kind = "mod:thing", slot = 0, key = "level", value = math.random(1000) }
    elseif r == 9 and not find_comp(e, "core:point_light", 0) then
      op = { type = "add_comp", uuid = e.uuid, kind = "core:point_light", slot = 0, body = {} }
    end
    if op then
      apply(doc, op)
      ops[#ops + 1] = op
    end
  end
  return ops
end

local function keel_run(dir, args) return sh(dir, "keel " .. args) end

describe("keel merge", function()
  local dir
  before_each(function() dir = tmpdir() end)
  after_each(function() rmrf(dir) end)

  -- base/ours/theirs from three document tables, made canonical; returns the merge's code and output
  -- (`also`: more files to make canonical in the same run)
  local function merge3(b, o, t, also)
    spit(dir .. "/base.yaml", yaml(b))
    spit(dir .. "/ours.yaml", yaml(o))
    spit(dir .. "/theirs.yaml", yaml(t))
    ok_sh(dir, "keel fmt base.yaml ours.yaml theirs.yaml " .. (also or ""))
    local code, out = keel_run(dir, "merge base.yaml ours.yaml theirs.yaml -o out.yaml")
    return code, out, slurp(dir .. "/out.yaml")
  end

  local function small()
    return { name = "S", entities = {
      { uuid = uuid(1), name = "A", comps = { transform(1),
        { kind = "core:audio_source", slot = 0, body = { { "volume", 1 } } },
        { kind = "mod:thing", slot = 0, body = { { "level", 1 }, { "tag", "x" } } } } },
      { uuid = uuid(2), name = "B", parent = uuid(1), comps = { transform(2) } },
      { uuid = uuid(3), name = "C", comps = { transform(3) } },
    } }
  end

  local function conflicts_of(text)
    local paths = {}
    for p in (text or ""):gmatch("\n%- path: ([^\n]+)") do paths[#paths + 1] = p end
    table.sort(paths)
    return table.concat(paths, " ")
  end

  describe("conflict classes", function()
    local function expect(o_ops, t_ops, want)
      local b, o, t = small(), small(), small()
      for _, op in ipairs(o_ops) do apply(o, op) end
      for _, op in ipairs(t_ops) do apply(t, op) end
      local code, out, text = merge3(b, o, t)
      assert.are.equal(1, code, out)
      assert.are.equal(want, conflicts_of(text))
      assert.is_nil(text:find("<<<<<<<", 1, true))
      -- a complete scene with ours' values: keel check reports each entry, and --take ours clears them
      local ccode, cout = keel_run(dir, "check out.yaml")
      assert.are.equal(1, ccode)
      local _, n = cout:gsub("error: Conflict: ", "")
      local _, m = want:gsub("%S+", "")
      assert.are.equal(m, n, cout)
      ok_sh(dir, "cp out.yaml ours_kept.yaml && keel merge --take ours ours_kept.yaml && keel check ours_kept.yaml")
      return text
    end

    it("a field changed differently on both sides", function()
      local text = expect({ { type = "set", uuid = uuid(1), kind = "core:transform", slot = 0, key = "position", value = { 5, 0, 0 } } },
                          { { type = "set", uuid = uuid(1), kind = "core:transform", slot = 0, key = "position", value = { 6, 0, 0 } } },
                          uuid(1) .. "/core:transform[0]/position")
      assert.truthy(text:find("ours: [5, 0, 0]", 1, true), text)
      assert.truthy(text:find("theirs: [6, 0, 0]", 1, true), text)
      assert.truthy(text:find("base: [1, 0, 0]", 1, true), text)
      assert.truthy(text:find("position: [5, 0, 0]", 1, true), "ours' value kept in the scene")
    end)

    it("a field of an undeclared kind, the entity's name", function()
      expect({ { type = "set", uuid = uuid(1), kind = "mod:thing", slot = 0, key = "level", value = 2 },
               { type = "rename", uuid = uuid(3), name = "Ours" } },
             { { type = "set", uuid = uuid(1), kind = "mod:thing", slot = 0, key = "level", value = 3 },
               { type = "rename", uuid = uuid(3), name = "Theirs" } },
             uuid(1) .. "/mod:thing[0]/level " .. uuid(3) .. "/name")
    end)

    it("an edit against a removal, of an entity and of a component", function()
      expect({ { type = "remove_entity", uuid = uuid(3) },
               { type = "set", uuid = uuid(1), kind = "core:audio_source", slot = 0, key = "volume", value = 0.5 } },
             { { type = "rename", uuid = uuid(3), name = "Kept" },
               { type = "remove_comp", uuid = uuid(1), kind = "core:audio_source", slot = 0 } },
             uuid(1) .. "/core:audio_source[0] " .. uuid(3))
    end)

    it("the same (kind, slot) added with different bodies", function()
      expect({ { type = "add_comp", uuid = uuid(3), kind = "core:audio_source", slot = 0, body = { { "volume", 0.25 } } } },
             { { type = "add_comp", uuid = uuid(3), kind = "core:audio_source", slot = 0, body = { { "volume", 0.75 } } } },
             uuid(3) .. "/core:audio_source[0]")
    end)

    it("different new parents", function()
      expect({ { type = "reparent", uuid = uuid(2), parent = uuid(3) } },
             { { type = "reparent", uuid = uuid(2), parent = nil } },
             uuid(2) .. "/parent")
    end)

    it("a cycle only the merged hierarchy has", function()
      expect({ { type = "reparent", uuid = uuid(1), parent = uuid(3) } },
             { { type = "reparent", uuid = uuid(3), parent = uuid(2) } },
             uuid(3) .. "/parent")
    end)

    it("a kind rule only the merged stack breaks (requires)", function()
      -- ours removes the transform (and what needs it), theirs adds a light that requires it
      local b, o, t = small(), small(), small()
      for _, d in ipairs({ b, o, t }) do
        local e = find_ent(d, uuid(3))
        e.comps = { transform(3), { kind = "mod:thing", slot = 0, body = {} } }
      end
      apply(o, { type = "remove_comp", uuid = uuid(3), kind = "core:transform", slot = 0 })
      apply(t, { type = "add_comp", uuid = uuid(3), kind = "core:point_light", slot = 0, body = {} })
      local code, out, text = merge3(b, o, t)
      assert.are.equal(1, code, out)
      assert.are.equal(uuid(3) .. "/core:point_light[0]", conflicts_of(text)) -- theirs' addition, refused
      ok_sh(dir, "keel merge --take ours out.yaml && keel check out.yaml")
    end)

    it("a kind rule only the merged stack breaks (rejects)", function()
      local text = expect({ { type = "add_comp", uuid = uuid(3), kind = "core:point_light", slot = 0, body = {} } },
                          { { type = "add_comp", uuid = uuid(3), kind = "core:spot_light", slot = 0, body = {} } },
                          uuid(3) .. "/core:spot_light[0]")
      assert.truthy(text:find("kind: core:point_light", 1, true), "ours' light kept")
    end)

    it("judges the rules of kinds declared in ./kinds (max), and not of undeclared ones", function()
      local b, o, t = small(), small(), small()
      apply(o, { type = "add_comp", uuid = uuid(3), kind = "mt:charm", slot = 0, body = {} })
      apply(t, { type = "add_comp", uuid = uuid(3), kind = "mt:charm", slot = 1, body = {} })
      local code, out, text = merge3(b, o, t)
      assert.are.equal(0, code, out) -- undeclared: two charms are fine
      os.execute("mkdir -p " .. q(dir .. "/kinds"))
      spit(dir .. "/kinds/charm.lua", 'require("keel").kind{ key = "mt:charm", multiplicity = "many", max = 1, fields = {} }\n')
      code, out = keel_run(dir, "merge base.yaml ours.yaml theirs.yaml -o out.yaml")
      assert.are.equal(1, code, out)
      text = slurp(dir .. "/out.yaml")
      assert.are.equal(uuid(3) .. "/mt:charm[1]", conflicts_of(text))
      ok_sh(dir, "keel merge --take ours out.yaml && keel check out.yaml")
    end)

    it("--take theirs puts theirs' value in, for the paths named", function()
      local b, o, t = small(), small(), small()
      apply(o, { type = "rename", uuid = uuid(1), name = "O1" })
      apply(t, { type = "rename", uuid = uuid(1), name = "T1" })
      apply(o, { type = "rename", uuid = uuid(2), name = "O2" })
      apply(t, { type = "rename", uuid = uuid(2), name = "T2" })
      assert.are.equal(1, (merge3(b, o, t)))
      ok_sh(dir, "keel merge --take theirs out.yaml " .. uuid(2) .. "/name")
      local text = slurp(dir .. "/out.yaml")
      assert.are.equal(uuid(1) .. "/name", conflicts_of(text))
      local code, out = keel_run(dir, "merge --take theirs out.yaml no/such/path")
      assert.are.equal(1, code)
      assert.truthy(out:find("NotFound", 1, true), out)
      ok_sh(dir, "keel merge --take theirs out.yaml && keel check out.yaml")
      local w = assert(keel_api.load(dir .. "/out.yaml"))
      assert.are.equal("T1", w:find(uuid(1)).name)
      assert.are.equal("T2", w:find(uuid(2)).name)
    end)

    it("--take theirs of a removed entity removes it, its children going to the top level", function()
      local b, o, t = small(), small(), small()
      apply(o, { type = "rename", uuid = uuid(1), name = "Edited" })
      apply(t, { type = "remove_entity", uuid = uuid(1) })
      find_ent(t, uuid(2)).parent = nil
      local code, out, text = merge3(b, o, t)
      assert.are.equal(1, code, out)
      assert.are.equal(uuid(1), conflicts_of(text))
      ok_sh(dir, "keel merge --take theirs out.yaml " .. uuid(1) .. " && keel check out.yaml")
      local w = assert(keel_api.load(dir .. "/out.yaml"))
      assert.is_nil(w:find(uuid(1)))
      assert.is_nil(w:find(uuid(2)).parent)
    end)

    it("settings by key and the scene root's components", function()
      local function with_root(d, exposure, grid)
        local text = yaml(d):gsub("root: %[%]\n", "settings:\n  grid:\n    enabled: " .. grid .. "\nroot:\n"
          .. "- kind: core:world_settings\n  version: 1\n  slot: 0\n  body:\n    exposure: " .. exposure .. "\n")
        return text
      end
      spit(dir .. "/base.yaml", with_root(small(), 1, "true"))
      spit(dir .. "/ours.yaml", with_root(small(), 2, "false"))
      spit(dir .. "/theirs.yaml", with_root(small(), 3, "true"))
      ok_sh(dir, "keel fmt base.yaml ours.yaml theirs.yaml")
      local code, out = keel_run(dir, "merge base.yaml ours.yaml theirs.yaml -o out.yaml")
      assert.are.equal(1, code, out)
      local text = slurp(dir .. "/out.yaml")
      assert.are.equal("root/core:world_settings[0]/exposure", conflicts_of(text))
      assert.truthy(text:find("enabled: false", 1, true), "ours' grid change merged")
      ok_sh(dir, "keel merge --take theirs out.yaml && keel check out.yaml")
      local w = assert(keel_api.load(dir .. "/out.yaml"))
      assert.are.equal(3, w.root:get("core:world_settings").exposure)
      spit(dir .. "/theirs.yaml", with_root(small(), 1, "false"))
      spit(dir .. "/ours.yaml", with_root(small(), 1, "true"):gsub("enabled: true", "enabled: true\n    base_spacing: 2"))
      ok_sh(dir, "keel fmt ours.yaml theirs.yaml")
      code, out = keel_run(dir, "merge base.yaml ours.yaml theirs.yaml -o out.yaml")
      assert.are.equal(0, code, out) -- different keys of settings.grid: both stand
      text = slurp(dir .. "/out.yaml")
      assert.truthy(text:find("enabled: false", 1, true), text)
      assert.truthy(text:find("base_spacing: 2", 1, true), text)
    end)

    it("keel.load refuses a scene with conflicts left (Conflict)", function()
      local b, o, t = small(), small(), small()
      apply(o, { type = "rename", uuid = uuid(1), name = "O1" })
      apply(t, { type = "rename", uuid = uuid(1), name = "T1" })
      assert.are.equal(1, (merge3(b, o, t)))
      local w, err = keel_api.load(dir .. "/out.yaml")
      assert.is_nil(w)
      assert.are.equal("Conflict", err.code)
      local code = keel_run(dir, "run out.yaml --frames 1")
      assert.are.equal(1, code)
    end)
  end)

  it("is deterministic and canonical; a side that does not parse exits 2 leaving OURS alone", function()
    local b, o, t = small(), small(), small()
    apply(o, { type = "rename", uuid = uuid(1), name = "O1" })
    apply(t, { type = "add_entity", uuid = uuid(9), name = "New", parent = uuid(3), x = 4 })
    local code, out, first = merge3(b, o, t)
    assert.are.equal(0, code, out)
    ok_sh(dir, "keel fmt --check out.yaml && keel check out.yaml")
    ok_sh(dir, "keel merge base.yaml ours.yaml theirs.yaml -o again.yaml")
    assert.are.equal(first, slurp(dir .. "/again.yaml"))
    spit(dir .. "/broken.yaml", "keel: 1\nscene: [unclosed\n")
    local before = slurp(dir .. "/ours.yaml")
    local bcode, bout = keel_run(dir, "merge base.yaml ours.yaml broken.yaml")
    assert.are.equal(2, bcode)
    assert.truthy(bout:find("broken.yaml:", 1, true), bout)
    assert.are.equal(before, slurp(dir .. "/ours.yaml"))
  end)

  it("refuses a side keel check refuses (one UUID listed twice) with exit 2, leaving OURS alone", function()
    local b, o, t = small(), small(), small()
    apply(o, { type = "rename", uuid = uuid(1), name = "O1" })
    spit(dir .. "/base.yaml", yaml(b))
    spit(dir .. "/ours.yaml", yaml(o))
    ok_sh(dir, "keel fmt base.yaml ours.yaml")
    -- theirs lists C's UUID a second time: keel check refuses it, so merge must not drop one
    local twice = small()
    twice.entities[#twice.entities + 1] = { uuid = uuid(3), name = "C2", comps = { transform(4) } }
    spit(dir .. "/theirs.yaml", yaml(twice))
    local ccode = sh(dir, "keel check theirs.yaml")
    assert.are_not.equal(0, ccode)
    local before = slurp(dir .. "/ours.yaml")
    local code, out = keel_run(dir, "merge base.yaml ours.yaml theirs.yaml")
    assert.are.equal(2, code, out)
    assert.truthy(out:find("duplicate entity uuid", 1, true), out)
    -- at the second one's line in theirs (theirs shares base's nodes while merging, not its lines)
    local text, line, seen = yaml(twice), 0, 0
    for l in text:gmatch("[^\n]*\n") do
      line = line + 1
      if l == "- uuid: " .. uuid(3) .. "\n" then seen = seen + 1 end
      if seen == 2 then break end
    end
    assert.truthy(out:find("theirs.yaml:" .. line .. ":", 1, true), out)
    assert.are.equal(before, slurp(dir .. "/ours.yaml"))
  end)

  it("writes an undeclared kind's scalars as keel fmt does (quoting and block scalars kept)", function()
    local function doc(level)
      return yaml(small()) .. "- uuid: " .. uuid(7) .. "\n  name: Q\n"
        .. "  components:\n  - kind: mod:note\n    version: 1\n    slot: 0\n    body:\n"
        .. "      a: 'single'\n      b: |\n        lit\n      c: \"1\"\n      level: " .. level .. "\n"
    end
    spit(dir .. "/base.yaml", doc(1))
    spit(dir .. "/ours.yaml", doc(1):gsub("name: A\n", "name: A2\n", 1))
    spit(dir .. "/theirs.yaml", doc(2))
    local code, out = keel_run(dir, "merge base.yaml ours.yaml theirs.yaml -o out.yaml")
    assert.are.equal(0, code, out)
    local text = slurp(dir .. "/out.yaml")
    assert.truthy(text:find("a: 'single'\n", 1, true), text)
    assert.truthy(text:find("b: |\n", 1, true), text)
    assert.truthy(text:find("level: 2\n", 1, true), text)
    assert.truthy(text:find("name: A2\n", 1, true), text)
    ok_sh(dir, "keel fmt --check out.yaml && keel check out.yaml")
  end)

  describe("maps inside bodies and settings, key by key at every depth", function()
    -- a scene whose settings hold a grid and whose entity has an undeclared kind with a nested body
    local function doc(o)
      return "keel: 1\nscene:\n  uuid: " .. SCENE .. "\n  name: S\nsettings:\n  grid:\n"
        .. "    base_spacing: " .. (o.spacing or 1) .. "\n    major_line_every: " .. (o.every or 10) .. "\n"
        .. "root: []\nentities:\n- uuid: " .. uuid(1) .. "\n  name: A\n  components:\n"
        .. "  - kind: mod:box\n    version: 1\n    slot: 0\n    body:\n"
        .. (o.no_lid and "" or "      lid:\n        color: " .. (o.color or "red") .. "\n        open: " .. (o.open or "false") .. "\n"
          .. "        hinge:\n          side: " .. (o.side or "left") .. "\n")
        .. "      tags: [" .. (o.tags or "a, b") .. "]\n"
    end
    local function merge_docs(b, o, t)
      spit(dir .. "/base.yaml", doc(b))
      spit(dir .. "/ours.yaml", doc(o))
      spit(dir .. "/theirs.yaml", doc(t))
      local code, out = keel_run(dir, "merge base.yaml ours.yaml theirs.yaml -o out.yaml")
      return code, out, slurp(dir .. "/out.yaml")
    end
    local BOX = uuid(1) .. "/mod:box[0]"

    it("merges edits to different keys of one map cleanly", function()
      local code, out, text = merge_docs({}, { color = "blue", spacing = 2 }, { open = "true", every = 5, side = "right" })
      assert.are.equal(0, code, out)
      assert.truthy(text:find("color: blue\n", 1, true), text)
      assert.truthy(text:find("open: true\n", 1, true), text)
      assert.truthy(text:find("side: right\n", 1, true), text)
      assert.truthy(text:find("base_spacing: 2\n", 1, true), text)
      assert.truthy(text:find("major_line_every: 5\n", 1, true), text)
      assert.is_nil(text:find("conflicts:", 1, true), text)
      ok_sh(dir, "keel fmt --check out.yaml && keel check out.yaml")
    end)

    it("names the deepest key both sides changed; --take accepts those paths", function()
      local code, out, text = merge_docs({}, { color = "blue", side = "up", spacing = 2, open = "true" },
                                         { color = "green", side = "down", spacing = 3, every = 4 })
      assert.are.equal(1, code, out)
      assert.are.equal(BOX .. "/lid/color " .. BOX .. "/lid/hinge/side settings/grid/base_spacing",
                       conflicts_of(text))
      assert.truthy(text:find("open: true\n", 1, true), "ours' other edit merged")
      assert.truthy(text:find("major_line_every: 4\n", 1, true), "theirs' other edit merged")
      assert.truthy(text:find("ours: blue\n", 1, true), text)
      assert.truthy(text:find("theirs: green\n", 1, true), text)
      ok_sh(dir, "keel merge --take theirs out.yaml " .. BOX .. "/lid/hinge/side settings/grid/base_spacing")
      text = slurp(dir .. "/out.yaml")
      assert.are.equal(BOX .. "/lid/color", conflicts_of(text))
      assert.truthy(text:find("side: down\n", 1, true), text)
      assert.truthy(text:find("base_spacing: 3\n", 1, true), text)
      assert.truthy(text:find("color: blue\n", 1, true), "ours' value still in place")
      ok_sh(dir, "keel merge --take theirs out.yaml " .. BOX .. "/lid/color && keel check out.yaml")
      text = slurp(dir .. "/out.yaml")
      assert.truthy(text:find("color: green\n", 1, true), text)
      assert.truthy(text:find("open: true\n", 1, true), text)
      -- a path into a map that is not listed is refused
      local c2, o2 = keel_run(dir, "merge --take theirs out.yaml " .. BOX .. "/lid/nope")
      assert.are.equal(1, c2, o2)
    end)

    it("keeps lists whole, and an edit inside a map against its removal is one conflict", function()
      local code, out, text = merge_docs({}, { tags = "a, c" }, { tags = "b, b" })
      assert.are.equal(1, code, out)
      assert.are.equal(BOX .. "/tags", conflicts_of(text))
      assert.truthy(text:find("tags: [a, c]", 1, true), text)
      code, out, text = merge_docs({}, { no_lid = true }, { open = "true" })
      assert.are.equal(1, code, out)
      assert.are.equal(BOX .. "/lid", conflicts_of(text))
      ok_sh(dir, "keel merge --take theirs out.yaml && keel check out.yaml")
      assert.truthy(slurp(dir .. "/out.yaml"):find("open: true\n", 1, true))
    end)
  end)

  it("keeps ours' sibling order with theirs' insertions after their predecessor", function()
    local b = { name = "S", entities = {} }
    for i = 1, 4 do b.entities[i] = { uuid = uuid(i), name = "E" .. i, comps = {} } end
    local o, t = copy(b), copy(b)
    table.insert(o.entities, 2, { uuid = uuid(10), name = "O", comps = {} }) -- after E1
    table.insert(t.entities, 3, { uuid = uuid(11), name = "T", comps = {} }) -- after E2
    t.entities[#t.entities + 1] = { uuid = uuid(12), name = "Tend", comps = {} }
    o.entities[#o.entities + 1] = { uuid = uuid(13), name = "Oend", comps = {} }
    local code, out = merge3(b, o, t)
    assert.are.equal(0, code, out)
    local w = assert(keel_api.load(dir .. "/out.yaml"))
    assert.are.equal("E1,O,E2,T,E3,E4,Oend,Tend", H.joined_names(w.entities, w))
  end)

  describe("as the installed git driver", function()
    local function repo()
      ok_sh(dir, "git init -q -b main . && git config user.name Tester && git config user.email t@example.com"
                 .. " && git config commit.gpgsign false && keel merge --install")
      assert.are.equal("*.yaml merge=keel\n", slurp(dir .. "/.gitattributes"))
      assert.are.equal("keel merge %O %A %B\n", ok_sh(dir, "git config merge.keel.driver"))
      ok_sh(dir, "keel merge --install '*.scene.yaml' '*.yaml'")
      assert.are.equal("*.yaml merge=keel\n*.scene.yaml merge=keel\n", slurp(dir .. "/.gitattributes"))
    end

    local function commit_all(msg) ok_sh(dir, "git add -A && git commit -q -m " .. q(msg)) end

    local function branches(o_ops, t_ops)
      repo()
      local b = small()
      spit(dir .. "/level.yaml", yaml(b))
      ok_sh(dir, "keel fmt level.yaml")
      commit_all("base")
      ok_sh(dir, "git checkout -q -b theirs")
      local t = copy(b)
      for _, op in ipairs(t_ops) do apply(t, op) end
      spit(dir .. "/level.yaml", yaml(t))
      ok_sh(dir, "keel fmt level.yaml")
      commit_all("theirs")
      ok_sh(dir, "git checkout -q main")
      local o = copy(b)
      for _, op in ipairs(o_ops) do apply(o, op) end
      spit(dir .. "/level.yaml", yaml(o))
      ok_sh(dir, "keel fmt level.yaml")
      commit_all("ours")
    end

    local OURS = { { type = "rename", uuid = uuid(1), name = "Hero" },
                   { type = "set", uuid = uuid(2), kind = "core:transform", slot = 0, key = "position", value = { 7, 7, 7 } } }
    local THEIRS = { { type = "add_entity", uuid = uuid(20), name = "Added", parent = uuid(1), x = 9 },
                     { type = "set", uuid = uuid(1), kind = "mod:thing", slot = 0, key = "level", value = 42 },
                     { type = "remove_comp", uuid = uuid(1), kind = "core:audio_source", slot = 0 } }

    local function check_clean()
      ok_sh(dir, "keel check level.yaml && keel fmt --check level.yaml")
      local w = assert(keel_api.load(dir .. "/level.yaml"))
      assert.are.equal("Hero", w:find(uuid(1)).name)
      assert.are.equal("Added", w:find(uuid(20)).name)
      assert.are.equal(uuid(1), w:find(uuid(20)).parent.uuid)
      assert.are.equal(7, w:find(uuid(2)):get("core:transform").position.x)
      assert.is_nil(w:find(uuid(1)):get("core:audio_source"))
    end

    it("merges disjoint edits cleanly", function()
      branches(OURS, THEIRS)
      ok_sh(dir, "git merge -q --no-edit theirs")
      check_clean()
    end)

    it("rebases disjoint edits cleanly", function()
      branches(OURS, THEIRS)
      ok_sh(dir, "git rebase -q theirs")
      check_clean()
    end)

    it("leaves a conflicted scene with a conflicts list, no markers; --take resolves it", function()
      branches({ { type = "rename", uuid = uuid(1), name = "Ours" } }, { { type = "rename", uuid = uuid(1), name = "Theirs" } })
      local code, out = sh(dir, "git merge -q --no-edit theirs")
      assert.are_not.equal(0, code)
      local text = slurp(dir .. "/level.yaml")
      assert.is_nil(text:find("<<<<<<<", 1, true))
      assert.are.equal(uuid(1) .. "/name", conflicts_of(text), out)
      local ccode, cout = keel_run(dir, "check level.yaml")
      assert.are.equal(1, ccode)
      assert.truthy(cout:find("level.yaml:%d+:%d+: error: Conflict: "), cout)
      ok_sh(dir, "keel merge --take theirs level.yaml && keel check level.yaml && git add level.yaml"
                 .. " && git commit -q --no-edit")
      assert.are.equal("Theirs", assert(keel_api.load(dir .. "/level.yaml")):find(uuid(1)).name)
    end)

    it("merges YAML that is not a scene as text", function()
      repo()
      spit(dir .. "/config.yaml", "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\n")
      commit_all("base")
      ok_sh(dir, "git checkout -q -b theirs && sed -i 's/e: 5/e: 50/' config.yaml")
      commit_all("theirs")
      ok_sh(dir, "git checkout -q main && sed -i 's/a: 1/a: 10/' config.yaml")
      commit_all("ours")
      ok_sh(dir, "git merge -q --no-edit theirs")
      assert.are.equal("a: 10\nb: 2\nc: 3\nd: 4\ne: 50\n", slurp(dir .. "/config.yaml"))
      ok_sh(dir, "git checkout -q -b theirs2 && sed -i 's/c: 3/c: 30/' config.yaml")
      commit_all("theirs2")
      ok_sh(dir, "git checkout -q main && sed -i 's/c: 3/c: 31/' config.yaml")
      commit_all("ours2")
      assert.are_not.equal(0, (sh(dir, "git merge -q --no-edit theirs2")))
      local text = slurp(dir .. "/config.yaml")
      assert.truthy(text:find("<<<<<<<", 1, true), text)
      assert.truthy(text:find("c: 31", 1, true) and text:find("c: 30", 1, true), text)
    end)
  end)

  describe("property", function()
    it("random disjoint edits on two branches merge clean and equal applying both edit lists", function()
      math.randomseed(1414)
      for round = 1, 50 do
        local base = random_base(math.random(4, 12))
        local mine_o, mine_t = {}, {}
        for _, e in ipairs(base.entities) do
          local r = math.random(3)
          if r == 1 then mine_o[e.uuid] = true elseif r == 2 then mine_t[e.uuid] = true end
        end
        local o, t = copy(base), copy(base)
        local o_ops = random_edits(o, mine_o, math.random(1, 4))
        local t_ops = random_edits(t, mine_t, math.random(1, 4))
        local want = copy(base)
        for _, op in ipairs(o_ops) do apply(want, op) end
        for _, op in ipairs(t_ops) do apply(want, op) end
        spit(dir .. "/want.yaml", yaml(want))
        local code, out, got = merge3(base, o, t, "want.yaml")
        assert.are.equal(0, code, "round " .. round .. ": " .. out)
        if os.getenv("MERGE_DEBUG") and slurp(dir .. "/want.yaml") ~= got then
          os.execute("mkdir -p /tmp/mdebug && cp " .. dir .. "/*.yaml /tmp/mdebug/")
        end
        assert.are.equal(slurp(dir .. "/want.yaml"), got, "round " .. round)
      end
    end)

    it("random overlapping edits either merge or list conflicts, and the scene stays valid", function()
      math.randomseed(2718)
      for round = 1, 25 do
        local base = random_base(math.random(3, 8))
        local all_o, all_t = {}, {}
        for _, e in ipairs(base.entities) do all_o[e.uuid], all_t[e.uuid] = true, true end
        local o, t = copy(base), copy(base)
        random_edits(o, all_o, math.random(1, 5))
        random_edits(t, all_t, math.random(1, 5))
        local code, out = merge3(base, o, t)
        assert.truthy(code == 0 or code == 1, "round " .. round .. ": " .. out)
        if code == 0 then ok_sh(dir, "keel fmt --check out.yaml") end -- canonical: fmt changes nothing
        if code == 1 then ok_sh(dir, "keel merge --take ours out.yaml") end
        ok_sh(dir, "keel check out.yaml")
      end
    end)
  end)
end)
