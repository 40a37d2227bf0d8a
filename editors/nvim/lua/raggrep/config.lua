-- Options, their validation, root detection and the vim.lsp config built from them.
local M = {}

--- Server settings (sent as initializationOptions; see the server README for their meaning).
M.setting_keys = {
  'enabled', 'include', 'exclude', 'maxFileSize', 'memoryBudgetMb', 'modelDir', 'defaultK', 'logLevel', 'team',
  'indexThreads', 'indexPriority',
}

M.defaults = {
  -- Without cmd or bundle: the server of the release bundle this plugin came in, else PATH's.
  cmd = { 'raggrep', 'lsp' },
  -- A release bundle's directory (where the tarball unpacked, holding bin/raggrep): its server.
  bundle = nil,
  -- Extra environment for the server, e.g. { RAGGREP_HOME = '/path/to/cache' }.
  cmd_env = nil,
  -- Languages raggrep indexes (plus docs/config formats); the server indexes the whole
  -- workspace, these only decide which buffers start/attach the client.
  filetypes = {
    'bash', 'c', 'cpp', 'cs', 'dart', 'elixir', 'go', 'haskell', 'java', 'javascript',
    'javascriptreact', 'julia', 'kotlin', 'lua', 'markdown', 'objc', 'ocaml', 'php', 'python', 'r',
    'ruby', 'rust', 'scala', 'sh', 'swift', 'toml', 'typescript', 'typescriptreact', 'yaml', 'json',
    'zig',
  },
  -- A directory holding one of these is the workspace root (nearest first).
  root_markers = {
    '.git', '.hg', '.jj', '.svn', 'Cargo.toml', 'go.mod', 'package.json', 'pyproject.toml',
    'setup.py', 'pom.xml', 'build.gradle', 'build.gradle.kts', 'CMakeLists.txt', 'Makefile',
    'composer.json', 'Gemfile', '.raggrep',
  },
  -- string or function(bufnr): string|nil, overriding root_markers.
  root_dir = nil,
  -- Without a marker: use the current directory if the file is inside it (the server then asks
  -- before indexing it). false: do not start.
  cwd_fallback = true,
  settings = {},
  -- How results are shown: 'quickfix', 'select' (vim.ui.select), or a picker if installed:
  -- 'telescope', 'fzf-lua', 'snacks' (falls back to the quickfix list).
  ui = 'quickfix',
  -- Results per query (nil: the server's defaultK).
  k = nil,
  -- Start the client automatically for `filetypes`.
  autostart = true,
  -- 'auto': vim.lsp.config + vim.lsp.enable on 0.11+, a FileType autocmd + vim.lsp.start on 0.10.
  -- 'enable' / 'start' force one of the two (0.11+ only for 'enable').
  method = 'auto',
}

--- The release bundle this plugin was unpacked in (its files are <bundle>/share/raggrep/nvim/…),
--- or nil. Resolved through links: a package dir linked to the bundle's copy counts.
M.plugin_bundle = (function()
  local file = vim.uv.fs_realpath((debug.getinfo(1, 'S').source:gsub('^@', '')))
  local root = file and vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(file)))
  return root and root:match('^(.*)/share/raggrep/nvim$') or nil
end)()

local function bundle_bin(bundle)
  return vim.fs.joinpath(bundle, 'bin', 'raggrep')
end

--- cmd when the user gave neither cmd nor bundle, and where it came from (for :checkhealth):
--- the bundle's own server when the plugin came in one (no PATH needed), else PATH's `raggrep`.
local function default_cmd()
  if M.plugin_bundle and vim.fn.executable(bundle_bin(M.plugin_bundle)) == 1 then
    return { bundle_bin(M.plugin_bundle), 'lsp' }, 'plugin'
  end
  return vim.deepcopy(M.defaults.cmd), 'path'
end

M.options = vim.deepcopy(M.defaults)
--- Where options.cmd came from: 'cmd' or 'bundle' (setup options), 'plugin' (the plugin's
--- bundle) or 'path'.
M.options.cmd, M.cmd_origin = default_cmd()

--- Neovim 0.11+ APIs (vim.lsp.config, client:method(), vim.validate(name, …)). The test sets
--- g:raggrep_compat_010 to run the 0.10 code paths (which 0.11 still accepts) on 0.11.
M.has_011 = vim.fn.has('nvim-0.11') == 1 and not vim.g.raggrep_compat_010
local has_011 = M.has_011

--- vim.validate in the 0.11 form, or the 0.10 table form.
local function validate(name, value, validator, optional, message)
  local ok, err
  if has_011 then
    ok, err = pcall(vim.validate, name, value, validator, optional, message)
  else
    ok, err = pcall(vim.validate, { [name] = { value, validator, message or optional } })
  end
  if not ok then
    error('raggrep: ' .. (tostring(err):gsub('^[^\n]-:%d+: ', '')), 0)
  end
end

local function list_of_strings(v)
  if type(v) ~= 'table' then
    return false
  end
  for _, s in ipairs(v) do
    if type(s) ~= 'string' then
      return false
    end
  end
  return true
end

local function log_level(v)
  return v == 'error' or v == 'warn' or v == 'info' or v == 'debug'
end

local function positive(v)
  return type(v) == 'number' and v > 0
end

local function nilable(fn)
  return function(v)
    return v == nil or fn(v)
  end
end

local function one_of(list)
  return function(v)
    return vim.tbl_contains(list, v)
  end
end

--- Validates server settings (camelCase keys). Errors on unknown keys and wrong types.
function M.validate_settings(settings)
  validate('settings', settings, 'table')
  for key in pairs(settings) do
    if not vim.tbl_contains(M.setting_keys, key) then
      error(('raggrep: unknown setting %q (known: %s)'):format(key, table.concat(M.setting_keys, ', ')), 0)
    end
  end
  local s = settings
  validate('settings.enabled', s.enabled, 'boolean', true)
  validate('settings.include', s.include, nilable(list_of_strings), false, 'list of glob strings')
  validate('settings.exclude', s.exclude, nilable(list_of_strings), false, 'list of glob strings')
  validate('settings.maxFileSize', s.maxFileSize, nilable(positive), false, 'positive number of bytes')
  validate('settings.memoryBudgetMb', s.memoryBudgetMb, nilable(positive), false, 'positive number of MB')
  validate('settings.modelDir', s.modelDir, 'string', true)
  validate('settings.defaultK', s.defaultK, nilable(positive), false, 'positive number')
  validate('settings.logLevel', s.logLevel, nilable(log_level), false, "'error', 'warn', 'info' or 'debug'")
  -- false (the server's default), true (the team index configured for the CLI) or a URL.
  validate('settings.team', s.team, { 'boolean', 'string' }, true)
  local function count(v)
    return type(v) == 'number' and v >= 0 and v == math.floor(v)
  end
  validate('settings.indexThreads', s.indexThreads, nilable(count), false, 'number of threads (0: one per CPU)')
  validate('settings.indexPriority', s.indexPriority, nilable(one_of({ 'low', 'normal' })), false, "'low' or 'normal'")
end

--- Merges user options over the defaults, validates, and stores them.
--- Server settings go in `settings`; for convenience they are also accepted at the top level.
function M.set(user)
  user = user or {}
  validate('opts', user, 'table')
  local opts = vim.deepcopy(M.defaults)
  local settings = {}
  for key, value in pairs(user) do
    if vim.tbl_contains(M.setting_keys, key) then
      settings[key] = value
    elseif key == 'settings' then
      validate('settings', value, 'table')
      settings = vim.tbl_extend('force', settings, value)
    elseif M.defaults[key] ~= nil or key == 'cmd_env' or key == 'root_dir' or key == 'k' or key == 'bundle' then
      opts[key] = value
    else
      error(('raggrep: unknown option %q'):format(key), 0)
    end
  end
  opts.settings = settings

  local origin = 'cmd'
  validate('bundle', opts.bundle, 'string', true)
  if opts.bundle then
    if user.cmd then
      error('raggrep: give cmd or bundle, not both', 0)
    end
    local bin = bundle_bin(vim.fs.normalize(vim.fn.fnamemodify(opts.bundle, ':p')))
    if vim.fn.executable(bin) == 0 then
      error(('raggrep: bundle %s has no executable bin/raggrep (%s); give the directory the release tarball unpacked to'):format(opts.bundle, bin), 0)
    end
    opts.cmd, origin = { bin, 'lsp' }, 'bundle'
  elseif not user.cmd then
    opts.cmd, origin = default_cmd()
  end
  validate('cmd', opts.cmd, function(v) return list_of_strings(v) and #v > 0 end, false, 'non-empty list of strings')
  validate('cmd_env', opts.cmd_env, 'table', true)
  validate('filetypes', opts.filetypes, list_of_strings, false, 'list of filetypes')
  validate('root_markers', opts.root_markers, list_of_strings, false, 'list of file names')
  validate('root_dir', opts.root_dir, { 'string', 'function' }, true)
  validate('cwd_fallback', opts.cwd_fallback, 'boolean')
  validate('ui', opts.ui, one_of({ 'quickfix', 'select', 'telescope', 'fzf-lua', 'snacks' }), false, "'quickfix', 'select', 'telescope', 'fzf-lua' or 'snacks'")
  validate('k', opts.k, nilable(positive), false, 'positive number')
  validate('autostart', opts.autostart, 'boolean')
  validate('method', opts.method, one_of({ 'auto', 'enable', 'start' }), false, "'auto', 'enable' or 'start'")
  if opts.method == 'enable' and not has_011 then
    error("raggrep: method = 'enable' needs Neovim 0.11 (vim.lsp.config)", 0)
  end
  M.validate_settings(settings)
  M.options, M.cmd_origin = opts, origin
  return opts
end

--- The workspace root for a buffer, or nil (then no client is started).
function M.find_root(bufnr)
  local opts = M.options
  if type(opts.root_dir) == 'string' then
    return vim.fs.normalize(opts.root_dir)
  elseif type(opts.root_dir) == 'function' then
    return opts.root_dir(bufnr)
  end
  local root = vim.fs.root(bufnr, opts.root_markers)
  if root then
    return root
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  if opts.cwd_fallback and name ~= '' and vim.startswith(vim.fs.normalize(name), cwd .. '/') then
    return cwd
  end
  return nil
end

--- The vim.lsp config (0.11: vim.lsp.Config; 0.10: the vim.lsp.start config minus root_dir).
function M.lsp_config()
  local opts = M.options
  return {
    name = 'raggrep',
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    filetypes = opts.filetypes,
    -- Omitted when empty: an empty Lua table would be sent as a JSON array.
    init_options = next(opts.settings) and opts.settings or nil,
    root_dir = function(bufnr, on_dir)
      local root = M.find_root(bufnr)
      if root then
        on_dir(root)
      end
    end,
    -- The command of the "Find similar code" code action runs here, on the client: it executes
    -- raggrep.findSimilar on the server and shows the results.
    commands = {
      ['raggrep.findSimilar'] = function(command, ctx)
        require('raggrep').run_similar_command(command, ctx)
      end,
      -- "Show history of this code": the commits of the definition at that line, as :RaggrepHistory.
      ['raggrep.history'] = function(command, ctx)
        local a = (command.arguments or {})[1] or {}
        local bufnr = type(a.uri) == 'string' and vim.uri_to_bufnr(a.uri) or ctx.bufnr
        require('raggrep').history({ bufnr = bufnr, line = type(a.line) == 'number' and a.line + 1 or nil })
      end,
    },
    handlers = {
      ['raggrep/indexUpdated'] = function(err, result, ctx)
        require('raggrep').on_index_updated(err, result, ctx)
      end,
    },
  }
end

return M
