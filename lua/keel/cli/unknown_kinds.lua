-- unknown_kinds.lua — the one stderr line after a load whose scene holds components of kinds
-- not declared (tools/kinds_find.c): how many of which, and where kinds were looked for.
local M = {}

-- Counts the "KIND is not declared: N components kept" warnings among `warnings` (a world's
-- w:warnings()) and prints them as one line; prints nothing when there are none.
function M.summary(warnings, path, progname)
  local kinds, total = {}, 0
  for _, w in ipairs(warnings) do
    local key, n = tostring(w.message):match('^(%S+) is not declared: (%d+) component')
    if key then kinds[#kinds + 1] = key .. ' ' .. n; total = total + tonumber(n) end
  end
  if #kinds == 0 then return end
  local ok, kf = pcall(require, 'keel.kindfiles')
  local where = ok and kf.searched and #kf.searched > 0 and table.concat(kf.searched, ', ')
    or (ok and #kf.dirs > 0 and table.concat(kf.dirs, ', ')) or 'nowhere'
  io.stderr:write(string.format('%s: %s: %d component%s of %d unknown kind%s, not simulated (%s); '
    .. 'kinds were looked for in: %s (--kinds DIR adds more)\n',
    progname, path, total, total == 1 and '' or 's', #kinds, #kinds == 1 and '' or 's',
    table.concat(kinds, ', '), where))
end

return M
