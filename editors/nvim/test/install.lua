-- Checks of one install of the plugin (install.sh): run with `nvim --headless -c 'luafile install.lua'`
-- after the user's own init.lua has installed and set it up (a package, or lazy.nvim).
-- Environment: RAGGREP_INSTALL_{NAME, WS, BUNDLE, PLUGIN, ORIGIN, RESULT}, RAGGREP_INSTALL_PARTIAL
-- (a copy of the bundle without model and runtime, for the missing-pieces report).
local name = vim.env.RAGGREP_INSTALL_NAME
local ws = vim.env.RAGGREP_INSTALL_WS
local bundle = vim.env.RAGGREP_INSTALL_BUNDLE
local bundle_bin = bundle .. '/bin/raggrep'

local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')
local out, check = H.out, H.check
local function has(text, part)
  return text:find(part, 1, true) ~= nil
end
local function health_report()
  pcall(vim.cmd, 'checkhealth raggrep')
  io.stderr:write('\n') -- after nvim's own "Running healthchecks..." (on stderr)
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  if vim.env.RAGGREP_TEST_VERBOSE then
    out(report)
  end
  return report
end

local updates, shown = {}, {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'RaggrepIndexUpdated',
  callback = function(ev) updates[#updates + 1] = ev.data end,
})
vim.api.nvim_create_autocmd('User', {
  pattern = 'RaggrepResults',
  callback = function(ev) shown[#shown + 1] = ev.data end,
})

local ok_run, err_run = xpcall(function()
  out(('%s: nvim %s, bundle %s'):format(name, tostring(vim.version()), bundle))
  check('no raggrep on PATH', vim.fn.exepath('raggrep') == '', vim.fn.exepath('raggrep'))
  local source = debug.getinfo(require('raggrep').setup, 'S').source:gsub('^@', '')
  check('plugin loaded from ' .. vim.env.RAGGREP_INSTALL_PLUGIN,
    vim.startswith(vim.uv.fs_realpath(source) or source, vim.env.RAGGREP_INSTALL_PLUGIN .. '/'), source)
  check('plugin/raggrep.lua sourced by the plugin loader', vim.g.loaded_raggrep == true and vim.fn.exists(':Raggrep') == 2)
  if name:find('^lazy') then
    local lazy_config = require('lazy.core.config')
    local spec = lazy_config.plugins.raggrep
    check(('lazy.nvim %s loaded the plugin'):format(lazy_config.version), spec and spec._.loaded ~= nil, vim.inspect(spec and spec._))
  end
  local config = require('raggrep.config')
  check(("cmd is the bundle's bin/raggrep (from '%s')"):format(vim.env.RAGGREP_INSTALL_ORIGIN),
    config.options.cmd[1] == bundle_bin and config.cmd_origin == vim.env.RAGGREP_INSTALL_ORIGIN,
    vim.inspect({ config.options.cmd, config.cmd_origin }))

  vim.fn.chdir(ws)
  vim.cmd.edit(ws .. '/src/auth.py')
  local attached = vim.wait(20000, function()
    return #vim.lsp.get_clients({ name = 'raggrep', bufnr = 0 }) > 0
  end, 20)
  check('client attaches to src/auth.py', attached, 'no client; see ' .. vim.lsp.get_log_path())
  if not attached then
    return
  end
  -- The process really running, not only the configured command.
  local exes = {}
  for _, pid in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
    exes[#exes + 1] = vim.uv.fs_readlink(('/proc/%d/exe'):format(pid))
  end
  check("the server process is the bundle's binary", vim.tbl_contains(exes, vim.uv.fs_realpath(bundle_bin)), vim.inspect(exes))

  local indexed = vim.wait(180000, function()
    for _, u in ipairs(updates) do
      if u.stats and (u.stats.chunks or 0) > 0 then
        return true
      end
    end
  end, 20)
  check('the workspace is indexed with the bundle\'s model (chunks > 0)', indexed, vim.inspect(updates))
  if not indexed then
    return
  end
  vim.cmd('Raggrep check whether an API token is still valid')
  check(':Raggrep answers', vim.wait(30000, function() return #shown > 0 end, 20))
  local items = vim.fn.getqflist()
  local found
  for i = 1, math.min(3, #items) do
    local file = vim.api.nvim_buf_get_name(items[i].bufnr)
    out(('  #%d %s:%d  %s'):format(i, file:sub(#ws + 2), items[i].lnum, items[i].text))
    if file == ws .. '/src/auth.py' and items[i].text:find('validate_token', 1, true) then
      found = found or i
    end
  end
  check('validate_token (src/auth.py) in the first 3 entries', found ~= nil)
  vim.cmd('cclose')

  local from = ({
    plugin = 'the release bundle this plugin is in, ' .. bundle,
    bundle = 'setup{ bundle = ' .. bundle .. ' }',
  })[vim.env.RAGGREP_INSTALL_ORIGIN]
  local report = health_report()
  check(':checkhealth raggrep names the binary, its version and where it came from',
    report:find('raggrep %d+%.%d+') ~= nil and has(report, ('command: %s lsp (from %s)'):format(bundle_bin, from)), report)
  check(":checkhealth raggrep finds the bundle's model and runtime (empty RAGGREP_HOME)",
    has(report, 'release bundle: ' .. bundle .. '/share/raggrep')
      and has(report, 'model: ' .. bundle .. '/share/raggrep/models/')
      and has(report, 'ONNX Runtime: ' .. bundle .. '/share/raggrep/runtime/'), report)
  check(':checkhealth raggrep reports no errors', not has(report, 'ERROR') and report:find('client %d+ attached') ~= nil, report)

  -- Each missing piece, with its fix: what a plugin from a checkout sees with nothing installed,
  -- then a bundle whose model and runtime are gone.
  local partial = vim.env.RAGGREP_INSTALL_PARTIAL
  if partial then
    local saved = { config.options, config.cmd_origin, config.plugin_bundle }
    config.options = vim.tbl_extend('force', config.options, { cmd = { 'raggrep', 'lsp' } })
    config.cmd_origin, config.plugin_bundle = 'path', nil
    report = health_report()
    check(':checkhealth raggrep: no binary → the bundle or a build as the fix',
      has(report, 'ERROR `raggrep` not found') and has(report, "setup{ bundle = '/path/to/raggrep-<version>-linux-x64' }")
        and has(report, 'cargo build --release'), report)
    check(':checkhealth raggrep: no model and no runtime → the bundle or bootstrap.sh as the fix',
      report:find('ERROR model directory not found: [^\n]*\n[^\n]*ADVICE:\n[^\n]*use the release bundle') ~= nil
        and report:find('ERROR ONNX Runtime library not found: [^\n]*\n[^\n]*ADVICE:\n[^\n]*use the release bundle') ~= nil
        and has(report, 'bootstrap.sh'), report)
    config.options.cmd, config.cmd_origin = { partial .. '/bin/raggrep', 'lsp' }, 'cmd'
    report = health_report()
    local again = 'unpack the release tarball again: ' .. partial .. '/share/raggrep is incomplete'
    check(':checkhealth raggrep: a bundle without model and runtime → unpack it again',
      report:find('ERROR model directory not found: [^\n]*\n[^\n]*ADVICE:\n[^\n]*' .. vim.pesc(again)) ~= nil
        and report:find('ERROR ONNX Runtime library not found: [^\n]*\n[^\n]*ADVICE:\n[^\n]*' .. vim.pesc(again)) ~= nil
        and not has(report, 'ERROR `'), report)
    config.options, config.cmd_origin, config.plugin_bundle = unpack(saved)
  end

  if vim.env.RAGGREP_INSTALL_ORIGIN == 'bundle' then
    local ok, err = pcall(require('raggrep').setup, { bundle = ws })
    check('setup{ bundle } without bin/raggrep is a clear error', not ok and has(tostring(err), 'has no executable bin/raggrep'), err)
    ok, err = pcall(require('raggrep').setup, { bundle = bundle, cmd = { 'raggrep', 'lsp' } })
    check('setup{ bundle, cmd } is an error', not ok and has(tostring(err), 'not both'), err)
  end
end, debug.traceback)
check('install checks ran without a Lua error', ok_run, err_run)

for _, client in ipairs(vim.lsp.get_clients({ name = 'raggrep' })) do
  client:stop()
end
check('server exits on shutdown', vim.wait(15000, function() return #vim.lsp.get_clients({ name = 'raggrep' }) == 0 end, 20))
H.finish(name, assert(vim.env.RAGGREP_INSTALL_RESULT, 'RAGGREP_INSTALL_RESULT is not set'))
