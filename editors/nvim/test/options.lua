-- The setup() options test.lua leaves at their defaults, against the real server: autostart,
-- filetypes, root_dir, cwd_fallback, k and cmd_env (a server without its model).
-- Usage: nvim --clean --headless -l options.lua <empty work dir> [results-file]
--   results-file: gets "<passed> <failed>" for run.sh
local work = assert(arg[1], 'usage: nvim --clean --headless -l options.lua <work-dir> [results-file]')
work = vim.fn.resolve(vim.fn.fnamemodify(work, ':p')):gsub('/$', '')
local results_file = arg[2]
local plugin_dir = vim.fn.fnamemodify(arg[0], ':p:h:h')

local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')
local out, check = H.out, H.check
vim.notify = function(msg, level)
  out(('  [notify %s] %s'):format(level or vim.log.levels.INFO, msg))
end
local function write(path, lines)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  vim.fn.writefile(lines, path)
end
local function clients()
  return vim.lsp.get_clients({ name = 'raggrep' })
end
local function roots()
  return vim.tbl_map(function(c) return c.root_dir or c.config.root_dir end, clients())
end
-- No client for a while: what "does not start" looks like from the outside.
local function stays_without_client(ms)
  return not vim.wait(ms, function() return #clients() > 0 end, 50)
end
-- Between scenarios: no client and no buffer left (setup() attaches to open buffers).
local function reset()
  for _, c in ipairs(clients()) do
    c:stop()
  end
  vim.wait(15000, function() return #clients() == 0 end, 50)
  vim.cmd('silent! %bwipeout!')
end

-- A repository (.git) with a Go module inside it, and a folder with no project marker at all.
local repo, module, plain = work .. '/repo', work .. '/repo/svc', work .. '/plain'
vim.fn.mkdir(repo .. '/.git', 'p')
write(module .. '/go.mod', { 'module svc' })
write(module .. '/geo.go', {
  'package svc', '', 'import "math"', '',
  '// Haversine returns the great-circle distance between two points on Earth in km.',
  'func Haversine(lat1, lon1, lat2, lon2 float64) float64 {',
  '\tdlat := (lat2 - lat1) * math.Pi / 180',
  '\treturn 6371 * 2 * math.Asin(math.Sqrt(math.Sin(dlat/2)*math.Sin(dlat/2)))',
  '}',
  '',
  '// Bearing returns the initial compass bearing from one point to another, in degrees.',
  'func Bearing(lat1, lon1, lat2, lon2 float64) float64 {',
  '\treturn math.Atan2(lon2-lon1, lat2-lat1) * 180 / math.Pi',
  '}',
  '',
  '// Midpoint returns the point halfway between two points.',
  'func Midpoint(lat1, lon1, lat2, lon2 float64) (float64, float64) {',
  '\treturn (lat1 + lat2) / 2, (lon1 + lon2) / 2',
  '}',
})
write(module .. '/auth.py', { 'def validate_token(store, token):', '    return token in store' })
write(plain .. '/notes.py', { 'def remember(note):', '    return note' })

local ok_run, err_run = xpcall(function()
  vim.opt.rtp:prepend(plugin_dir)
  vim.cmd('filetype on')
  vim.cmd.runtime('plugin/raggrep.lua')
  local raggrep = require('raggrep')
  vim.fn.chdir(work)

  -- autostart = false: opening a file of a listed type starts nothing.
  raggrep.setup({ autostart = false })
  vim.cmd.edit(module .. '/geo.go')
  check('autostart = false: no client for a Go file', stays_without_client(2000), vim.inspect(roots()))

  -- cwd_fallback = false: a file under the current directory but with no marker above it
  -- starts nothing (true would use the directory and have the server ask first).
  reset()
  raggrep.setup({ cwd_fallback = false })
  vim.fn.chdir(plain)
  vim.cmd.edit(plain .. '/notes.py')
  check('cwd_fallback = false: no client without a project marker', stays_without_client(2000), vim.inspect(roots()))
  vim.fn.chdir(work)

  -- filetypes, root_dir and k together: only Go starts the client, at the root the function
  -- gives (the module, not the repository that the markers would pick), and :Raggrep lists k.
  reset()
  local asked_for = {}
  raggrep.setup({
    filetypes = { 'go' },
    root_dir = function(bufnr)
      asked_for[#asked_for + 1] = vim.api.nvim_buf_get_name(bufnr)
      return module
    end,
    k = 2,
  })
  vim.cmd.edit(module .. '/auth.py')
  check('filetypes = { "go" }: no client for a Python file', stays_without_client(2000), vim.inspect(roots()))
  local updated = false
  vim.api.nvim_create_autocmd('User', { pattern = 'RaggrepIndexUpdated', callback = function() updated = true end })
  local shown = {}
  vim.api.nvim_create_autocmd('User', { pattern = 'RaggrepResults', callback = function(ev) shown[#shown + 1] = ev.data end })
  vim.cmd.edit(module .. '/geo.go')
  local attached = vim.wait(20000, function() return #vim.lsp.get_clients({ name = 'raggrep', bufnr = 0 }) > 0 end, 50)
  if not check('filetypes = { "go" }: the client attaches to a Go file', attached) then
    return
  end
  local client = clients()[1]
  local root = client.root_dir or client.config.root_dir
  check('root_dir (a function) gives the root, not the markers', root == module and #asked_for > 0, root)
  check('the index is built', vim.wait(180000, function() return updated end, 50))
  vim.cmd('Raggrep distance between two points on the globe')
  local answered = vim.wait(30000, function() return #shown > 0 end, 50)
  local items = answered and shown[#shown].items or {}
  check('k = 2: :Raggrep lists at most 2 results', answered and #items >= 1 and #items <= 2, vim.inspect(items))
  client:stop()

  -- Without its model (an empty asset cache, no bundle beside the binary): the server still
  -- starts, and a search and :checkhealth both show its one line, the cause and the fix.
  reset()
  local notes = {}
  local notify = vim.notify
  vim.notify = function(msg, level)
    notes[#notes + 1] = msg
    notify(msg, level)
  end
  vim.fn.mkdir(work .. '/empty-cache', 'p')
  raggrep.setup({ cmd_env = { RAGGREP_HOME = work .. '/empty-cache' } })
  vim.cmd.edit(module .. '/geo.go')
  attached = vim.wait(20000, function() return #vim.lsp.get_clients({ name = 'raggrep', bufnr = 0 }) > 0 end, 50)
  if not check('without its model: the client still attaches', attached) then
    return
  end
  vim.cmd('Raggrep distance between two points on the globe')
  local said = vim.wait(15000, function()
    return table.concat(notes, '\n'):find('raggrep is not ready: cannot load the embedding model', 1, true) ~= nil
  end, 50)
  check('without its model: a search says why', said, table.concat(notes, '\n'))
  pcall(vim.cmd, 'checkhealth raggrep')
  io.stdout:write('\n') -- after nvim's own "Running healthchecks..."
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  check("without its model: checkhealth shows the server's line",
    report:find('ERROR raggrep is not ready: cannot load the embedding model', 1, true) ~= nil
      and report:find(work .. '/empty-cache', 1, true) ~= nil,
    report)
  vim.notify = notify
  reset()
end, debug.traceback)
check('options test ran without a Lua error', ok_run, err_run)

H.finish('options', results_file)
