-- raggrep for Neovim: starts `raggrep lsp` and maps its commands to Neovim UI.
-- All search logic lives in the server; this plugin only sends requests and shows results.
local config = require('raggrep.config')

local M = {}

local has_011 = config.has_011

--- Last `raggrep/indexUpdated` params per client id.
M.index_updates = {}

local notify, value = require('raggrep.ui').notify, require('raggrep.ui').value

-- Client methods are called with `:` on 0.11 (the `.` form is deprecated there) and `.` on 0.10.
local function request(client, method, params, handler, bufnr)
  if has_011 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

local function client_root(client)
  return client.root_dir or (client.config and client.config.root_dir)
end

--- The raggrep client for a buffer: the one attached to it, else the one whose root holds the
--- buffer's file (or the current directory), else any running one.
function M.get_client(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local attached = vim.lsp.get_clients({ name = 'raggrep', bufnr = bufnr })
  if attached[1] then
    return attached[1]
  end
  local all = vim.lsp.get_clients({ name = 'raggrep' })
  local path = vim.api.nvim_buf_get_name(bufnr)
  if path == '' or vim.bo[bufnr].buftype ~= '' then
    path = vim.fn.getcwd()
  end
  path = vim.fs.normalize(path)
  for _, client in ipairs(all) do
    local root = client_root(client)
    if type(root) == 'string' and (path == root or vim.startswith(path, root .. '/')) then
      return client
    end
  end
  return all[1]
end

--- Runs a raggrep command on the server (workspace/executeCommand) and calls
--- callback(result, client) on success; errors are shown with vim.notify.
--- opts: client, bufnr.
function M.execute(command, args, callback, opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local client = opts.client or M.get_client(bufnr)
  if not client then
    notify('no raggrep language server is running; open a file of your project (see :checkhealth raggrep)', vim.log.levels.WARN)
    return false
  end
  local params = { command = command, arguments = args ~= nil and { args } or {} }
  request(client, 'workspace/executeCommand', params, function(err, result)
    if err then
      notify(('%s failed: %s'):format(command, err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    if callback then
      callback(result or {}, client)
    end
  end, bufnr)
  return true
end

--- Semantic search. opts: k, mode ('hybrid'|'semantic'|'lexical'…), path (glob), lang, ui.
function M.search(query, opts)
  opts = opts or {}
  query = vim.trim(query or '')
  if query == '' then
    notify('empty query', vim.log.levels.WARN)
    return
  end
  local args = { query = query, k = opts.k or config.options.k, mode = opts.mode, path = opts.path, lang = opts.lang }
  return M.execute('raggrep.search', args, function(result)
    local title = M.search_title(query, result)
    -- With the `team` setting, `result.team` holds the team index's hits (other repositories).
    require('raggrep.ui').show(result.results, { title = title, kind = 'search', ui = opts.ui, team = value(result.team) })
  end)
end

--- The title of a search's list: the query, and what the server says about the answer.
function M.search_title(query, result)
  local title = 'raggrep: ' .. query
  if value(result.partial) then
    title = title .. ' (index still building)'
  end
  -- The server's calibrated "probably nothing here": the hits are only the closest code.
  if value(result.no_confident_match) == true and #(value(result.results) or {}) > 0 then
    title = title .. ' (no confident match: closest code)'
  end
  -- Why the ranking is worse than usual (part of an index damaged, or one another model built,
  -- searched by its words only until it is rebuilt): an empty list must not read as "nothing
  -- matches".
  local degraded = value(result.degraded)
  if type(degraded) == 'string' and degraded ~= '' then
    title = title .. ' (degraded: ' .. degraded .. ')'
  end
  return title
end

local function similar_title(uri, range)
  local name = type(uri) == 'string' and vim.fn.fnamemodify(vim.uri_to_fname(uri), ':~:.') or '?'
  local first = range and range.start and range.start.line + 1 or 0
  local last = range and range['end'] and range['end'].line or first
  if range and range['end'] and range['end'].character ~= 0 then
    last = last + 1
  end
  return ('raggrep: similar to %s:%d-%d'):format(name, first, math.max(first, last))
end

local function show_similar(uri, range, opts)
  return function(result)
    require('raggrep.ui').show(result.results, { title = similar_title(uri, range), kind = 'similar', ui = opts and opts.ui })
  end
end

--- Code similar to lines line1..line2 (1-based) of a buffer, or to the code under the cursor.
--- opts: bufnr, line1, line2 (both or neither), k, ui.
function M.similar(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local line1, line2 = opts.line1, opts.line2
  if not line1 then
    -- The cursor line: the server widens it to the chunk (function, method, …) under it.
    line1 = vim.api.nvim_win_get_cursor(0)[1]
    line2 = line1
  end
  local uri = vim.uri_from_bufnr(bufnr)
  local range = { start = { line = line1 - 1, character = 0 }, ['end'] = { line = line2, character = 0 } }
  local args = { uri = uri, range = range, k = opts.k or config.options.k }
  return M.execute('raggrep.findSimilar', args, show_similar(uri, range, opts), { bufnr = bufnr })
end

--- Client-side handler of the `raggrep.findSimilar` command that the "Find similar code" code
--- action returns (vim.lsp.buf.code_action runs it): executes it on the server, shows results.
function M.run_similar_command(command, ctx)
  local args = command.arguments and command.arguments[1] or {}
  local client = ctx and ctx.client_id and vim.lsp.get_client_by_id(ctx.client_id) or nil
  if config.options.k and args.k == nil then
    args.k = config.options.k
  end
  M.execute(command.command, args, show_similar(args.uri, args.range), { client = client, bufnr = ctx and ctx.bufnr })
end

--- Handler of the server's `raggrep/indexUpdated` notification; fires `User RaggrepIndexUpdated`.
function M.on_index_updated(_, result, ctx)
  if type(result) ~= 'table' then
    return
  end
  M.index_updates[ctx.client_id] = result
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'RaggrepIndexUpdated',
    modeline = false,
    data = { client_id = ctx.client_id, root = result.root, stats = result.stats },
  })
end

--- One line per root from a `raggrep.status` result.
function M.format_status(status)
  local roots = status.roots
  if type(roots) ~= 'table' or #roots == 0 then
    if status.root == nil then
      return 'no workspace folder yet (the server is starting)'
    end
    roots = { status }
  end
  local lines = {}
  for _, s in ipairs(roots) do
    local parts = {}
    if s.chunks ~= nil then
      parts[#parts + 1] = ('%d files, %d chunks'):format(s.files or 0, s.chunks or 0)
      if (s.pending or 0) > 0 then
        parts[#parts + 1] = ('%d pending'):format(s.pending)
      end
    else
      parts[#parts + 1] = 'no index yet'
    end
    if s.enabled == false then
      parts[#parts + 1] = 'disabled'
    end
    if value(s.indexing) then
      parts[#parts + 1] = 'indexing'
    end
    if value(s.partial) then
      parts[#parts + 1] = 'partial'
    end
    if value(s.reason) then
      parts[#parts + 1] = s.reason
    end
    if value(s.last_error) then
      parts[#parts + 1] = 'error: ' .. s.last_error
    end
    lines[#lines + 1] = ('%s: %s'):format(vim.fn.fnamemodify(s.root or '?', ':~'), table.concat(parts, ', '))
  end
  return table.concat(lines, '\n')
end

--- Calls callback(status) with the `raggrep.status` result; fires `User RaggrepStatus`.
function M.status(callback)
  return M.execute('raggrep.status', nil, function(status)
    if callback then
      callback(status)
    end
    vim.api.nvim_exec_autocmds('User', { pattern = 'RaggrepStatus', modeline = false, data = status })
  end)
end

function M.reindex()
  return M.execute('raggrep.reindex', nil, function(result)
    notify(('reindexing %d workspace folder(s)'):format(result.queued or 0))
  end)
end

--- Turns indexing of the current buffer's workspace on/off (remembered by the server).
function M.toggle(enabled)
  local args = { uri = vim.uri_from_bufnr(0), enabled = enabled }
  return M.execute('raggrep.toggle', args, function(result)
    if #(result.roots or {}) == 0 then
      notify('no workspace folder to toggle yet (the server is starting)', vim.log.levels.WARN)
    end
    for _, r in ipairs(result.roots or {}) do
      notify(('%s: indexing %s'):format(vim.fn.fnamemodify(r.root, ':~'), r.enabled and 'on' or 'off'))
    end
  end)
end

--- Pauses (pause = true, `raggrep.pause`) or resumes (false, `raggrep.resume`) indexing: while
--- paused the update under way stops after its current embedding batch, file changes are queued
--- and searches keep working. Says which from the server's answer `{paused}` and fires
--- `User RaggrepPaused` (data: client_id, paused). The server does not remember it across restarts.
function M.set_paused(pause)
  return M.execute(pause and 'raggrep.pause' or 'raggrep.resume', nil, function(result, client)
    local paused = value(result.paused)
    if type(paused) ~= 'boolean' then
      paused = pause
    end
    notify(paused and 'indexing paused' or 'indexing resumed')
    vim.api.nvim_exec_autocmds('User', {
      pattern = 'RaggrepPaused',
      modeline = false,
      data = { client_id = client.id, paused = paused },
    })
  end)
end

function M.pause()
  return M.set_paused(true)
end

function M.resume()
  return M.set_paused(false)
end

--- The best chunks for a question under a token budget, in a scratch buffer.
function M.context(query, max_tokens)
  query = vim.trim(query or '')
  if query == '' then
    notify('empty query', vim.log.levels.WARN)
    return
  end
  return M.execute('raggrep.context', { query = query, maxTokens = max_tokens }, function(result)
    require('raggrep.ui').show_context(result, query)
  end)
end

--- What a commit changed (in one path, or all of it), by buffer name: `raggrep-commit://ID/PATH`
--- buffers, filled by `git show` when opened (read-only, filetype diff).
M.commit_buffers = {}

--- The name of the buffer that shows `commit`'s change of `path` (nil: the whole commit).
function M.commit_buffer(root, commit, path)
  require('raggrep.ui').scratch_buffers('raggrep-commit', function(name)
    local entry = M.commit_buffers[name]
    if not (entry and entry.root) then
      return { 'This commit is no longer in memory: run :RaggrepHistory again.' }, 'diff'
    end
    local cmd = { 'git', '-C', entry.root, 'show', '--no-color', '--no-ext-diff', entry.commit }
    if entry.path then
      vim.list_extend(cmd, { '--', entry.path })
    end
    local lines = vim.fn.systemlist(cmd)
    if vim.v.shell_error ~= 0 then
      table.insert(lines, 1, 'git show failed:')
    end
    return lines, 'diff'
  end)
  local name = ('raggrep-commit://%s/%s'):format(commit:sub(1, 12), path or '')
  M.commit_buffers[name] = { root = root, commit = commit, path = path }
  return name
end

--- The history of the function under the cursor, or the commits a question describes, into
--- the quickfix list (one entry per commit: its id, date and subject). opts: query, bufnr,
--- line (1-based; default the cursor's), k. Also the client-side handler of the "Show history of
--- this code" code action.
function M.history(opts)
  opts = opts or {}
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local file = vim.api.nvim_buf_get_name(bufnr)
  local args = { k = opts.k or config.options.k }
  local title
  local query = vim.trim(opts.query or '')
  if query ~= '' then
    args.query = query
    title = 'raggrep history: ' .. query
  elseif file ~= '' then
    args.uri = vim.uri_from_bufnr(bufnr)
    args.line = (opts.line or vim.api.nvim_win_get_cursor(0)[1]) - 1
    title = ('raggrep history: %s:%d'):format(vim.fn.fnamemodify(file, ':~:.'), args.line + 1)
  else
    notify('no file and no question: nothing to look up', vim.log.levels.WARN)
    return
  end
  return M.execute('raggrep.history', args, function(result, client)
    local root = client and client.config and client.config.root_dir
    -- An entry opens what the commit changed: in the function's file, or (a question) all of it.
    local rel = args.uri and root and vim.startswith(file, root .. '/') and file:sub(#root + 2) or nil
    local items = {}
    for _, commit in ipairs(value(result.results) or {}) do
      local files = value(commit.files) or {}
      items[#items + 1] = {
        filename = M.commit_buffer(root, commit.commit or '', rel),
        module = ('%s %s'):format((commit.commit or ''):sub(1, 12), rel or files[1] or ''),
        lnum = 1,
        text = ('%s %s %s'):format((commit.commit or ''):sub(1, 12), commit.date or '', commit.subject or ''),
      }
    end
    if #items == 0 then
      notify(title .. ': no commit found')
    end
    vim.fn.setqflist({}, ' ', { title = title, items = items })
    if #items > 0 then
      vim.cmd('copen')
    end
  end, { bufnr = bufnr })
end

local function with_query(fn)
  return function(o)
    if o.args ~= '' then
      return fn(o.args)
    end
    vim.ui.input({ prompt = 'raggrep: ' }, function(query)
      if query and query ~= '' then
        fn(query)
      end
    end)
  end
end

--- Defines the user commands (idempotent).
function M.create_commands()
  local command = vim.api.nvim_create_user_command
  command('Raggrep', with_query(function(q) M.search(q) end), { nargs = '*', desc = 'raggrep: semantic code search' })
  command('RaggrepSimilar', function(o)
    if o.range > 0 then
      M.similar({ line1 = o.line1, line2 = o.line2 })
    else
      M.similar()
    end
  end, { range = true, desc = 'raggrep: code similar to the selection or the function under the cursor' })
  command('RaggrepStatus', function()
    M.status(function(status)
      notify(M.format_status(status))
    end)
  end, { desc = 'raggrep: index status' })
  command('RaggrepReindex', function() M.reindex() end, { desc = 'raggrep: re-scan the workspace' })
  command('RaggrepToggle', function(o)
    if o.bang then
      M.toggle(false)
    else
      M.toggle()
    end
  end, { bang = true, desc = 'raggrep: toggle indexing of this workspace (! turns it off)' })
  command('RaggrepPause', function() M.pause() end, { desc = 'raggrep: pause indexing (changes are queued, search goes on)' })
  command('RaggrepResume', function() M.resume() end, { desc = 'raggrep: resume indexing' })
  command('RaggrepContext', with_query(function(q) M.context(q) end), { nargs = '*', desc = 'raggrep: context for a question' })
  command('RaggrepHistory', function(o)
    M.history({ query = o.args })
  end, { nargs = '*', desc = 'raggrep: the commits that changed the function under the cursor, or that a question describes' })
end

--- Starts (or reuses) the client for a buffer with vim.lsp.start (the 0.10 way).
function M.start(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if vim.bo[bufnr].buftype ~= '' then
    return
  end
  local root = config.find_root(bufnr)
  if not root then
    return
  end
  local cfg = config.lsp_config()
  cfg.root_dir = root
  return vim.lsp.start(cfg, { bufnr = bufnr })
end

--- setup(opts): see the README for the options.
function M.setup(opts)
  local options = config.set(opts)
  M.create_commands()
  local group = vim.api.nvim_create_augroup('raggrep', { clear = true })
  local method = options.method
  if method == 'auto' then
    method = has_011 and 'enable' or 'start'
  end
  if method == 'enable' then
    -- Replaces (not merges) earlier setup() calls; lsp/raggrep.lua stays the base.
    vim.lsp.config['raggrep'] = config.lsp_config()
    vim.lsp.enable('raggrep', options.autostart)
    return
  end
  if has_011 and vim.lsp.is_enabled and vim.lsp.is_enabled('raggrep') then
    vim.lsp.enable('raggrep', false)
  end
  if not options.autostart then
    return
  end
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = options.filetypes,
    callback = function(ev)
      M.start(ev.buf)
    end,
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.tbl_contains(options.filetypes, vim.bo[buf].filetype) then
      M.start(buf)
    end
  end
end

return M
