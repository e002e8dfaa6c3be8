-- new.lua — `keel new NAME` (tools/verb_new.c checks NAME, makes the directories and writes the
-- files atomically): the scaffold's texts, from the templates in keel/cli/new/ beside this file.
local M = {}

-- The files, relative to NAME/, each with its template: the dot files' templates are named
-- dot.* so that they do not act on the source tree (git would obey a .gitattributes there).
local files = {
  { "kinds/spinner.lua", "kinds/spinner.lua" },
  { "kinds/spin.lua", "kinds/spin.lua" },
  { "scenes/main.yaml", "scenes/main.yaml" },
  { "spec/spinner_spec.lua", "spec/spinner_spec.lua" },
  { ".busted", "dot.busted" },
  { ".gitattributes", "dot.gitattributes" },
  { ".gitignore", "dot.gitignore" },
  { "README.md", "README.md" },
}

-- NAME's last part: after the last '/' unless that ends NAME (then NAME whole).
local function base_of(name)
  local last = name:match("/([^/]+)$")
  return last or name
end

-- NAME as a kind namespace ([a-z0-9_]+, lower case): its base up to a '/', other characters
-- made '_', at most 63 bytes; "game" when that leaves nothing.
function M.namespace(name)
  local ns = base_of(name):match("^[^/]*"):sub(1, 63):gsub("%W", "_"):lower()
  return ns == "" and "game" or ns
end

-- The directory of the templates: keel/cli/new/ beside this module, through package.path.
local function template_dir()
  local self, err = package.searchpath("keel.cli.new", package.path)
  return self and self:gsub("%.lua$", ""), err
end

-- The project NAME: { dirs = its directories below NAME/, in the order made; files = each
-- { path relative to NAME/, text }, in the order written; ns = its kind namespace }.
-- In the templates @NS@ is the namespace, @NAME@ NAME's last part, @U1@.. the `uuids`.
-- nil and the reason when a template cannot be read.
function M.scaffold(name, uuids)
  local dir, err = template_dir()
  if not dir then return nil, "new: keel.cli.new is not on package.path:" .. err end
  local ns = M.namespace(name)
  local values = { NS = ns, NAME = base_of(name) }
  for i, u in ipairs(uuids) do values["U" .. i] = u end
  local dirs, seen, out = {}, {}, {}
  for i, f in ipairs(files) do
    local sub = f[1]:match("^(.*)/")
    if sub and not seen[sub] then seen[sub] = true; dirs[#dirs + 1] = sub end
    local path = dir .. "/" .. f[2]
    local h, err = io.open(path, "rb")
    if not h then return nil, "new: the project templates are not installed: " .. err end
    local text = h:read("a")
    h:close()
    -- the texts are ours, the values plain (a table's values are not patterns)
    out[i] = { f[1], (text:gsub("@(%w+)@", values)) }
  end
  return { dirs = dirs, files = out, ns = ns }
end

return M
