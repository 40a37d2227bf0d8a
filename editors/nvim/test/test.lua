-- Headless end-to-end test of the raggrep Neovim client against the real server.
-- Usage: nvim --clean --headless -l test.lua <fixture-dir> [method] [results-file]
--   method: 'auto' (default), 'enable' (vim.lsp.config/enable) or 'start' (FileType + vim.lsp.start)
--   results-file: gets "<passed> <failed>" for run.sh
-- RAGGREP_TEST_TEAM_URL (run.sh sets it): a team index holding gitlab.example/finance/ledger@trunk,
-- its password in PGPASSWORD; the client then runs with settings.team = that URL.
local fixture = assert(arg[1], 'usage: nvim --clean --headless -l test.lua <fixture-dir> [method] [results-file]')
fixture = vim.fn.resolve(vim.fn.fnamemodify(fixture, ':p')):gsub('/$', '')
local method = arg[2] or 'auto'
local results_file = arg[3]
local team_url = vim.env.RAGGREP_TEST_TEAM_URL ~= '' and vim.env.RAGGREP_TEST_TEAM_URL or nil
local team_repo = 'gitlab.example/finance/ledger@trunk'
local plugin_dir = vim.fn.fnamemodify(arg[0], ':p:h:h')

local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h') .. '/harness.lua')
local out, check = H.out, H.check
local function wait(ms, predicate)
  return vim.wait(ms, predicate, 20)
end

-- Everything the plugin reports, recorded.
local notes = {}
vim.notify = function(msg, level)
  notes[#notes + 1] = msg
  out(('  [notify %s] %s'):format(level or vim.log.levels.INFO, msg))
end
local updates, progress, shown, statuses = {}, {}, {}, {}
vim.api.nvim_create_autocmd('User', {
  pattern = 'RaggrepIndexUpdated',
  callback = function(ev) updates[#updates + 1] = ev.data end,
})
vim.api.nvim_create_autocmd('User', {
  pattern = 'RaggrepResults',
  callback = function(ev) shown[#shown + 1] = ev.data end,
})
vim.api.nvim_create_autocmd('User', {
  pattern = 'RaggrepStatus',
  callback = function(ev) statuses[#statuses + 1] = ev.data end,
})
vim.api.nvim_create_autocmd('LspProgress', {
  callback = function(ev)
    local value = ev.data and ev.data.params and ev.data.params.value or {}
    progress[#progress + 1] = { kind = value.kind, title = value.title, message = value.message }
  end,
})

-- 'start' also runs the plugin's Neovim 0.10 code paths (client.request(), vim.validate{...}),
-- which 0.11 still accepts (with deprecation notices): no 0.10 binary is on PyPI.
vim.g.raggrep_compat_010 = method == 'start'

local ok_run, err_run = xpcall(function()
  vim.opt.rtp:prepend(plugin_dir)
  vim.cmd('filetype on')
  vim.cmd.runtime('plugin/raggrep.lua')
  vim.fn.chdir(fixture)
  out(('nvim %s, method %s, fixture %s'):format(tostring(vim.version()), method, fixture))

  local raggrep = require('raggrep')
  check(method == 'start' and 'plugin runs its 0.10 code paths' or 'plugin runs its 0.11 code paths',
    require('raggrep.config').has_011 == (method ~= 'start') or vim.fn.has('nvim-0.11') == 0)
  check('commands defined by plugin/raggrep.lua', vim.fn.exists(':Raggrep') == 2 and vim.fn.exists(':RaggrepSimilar') == 2
    and vim.fn.exists(':RaggrepPause') == 2 and vim.fn.exists(':RaggrepResume') == 2)
  check('setup rejects a bad setting', not pcall(raggrep.setup, { settings = { logLevel = 'loud' } }))
  check('setup rejects an unknown option', not pcall(raggrep.setup, { bogus = true }))
  check('setup rejects a bad ui', not pcall(raggrep.setup, { ui = 'nope' }))
  -- The server's `degraded` (here: a root whose index another model built, searched by its words
  -- only, as workspace.rs says it) is in the list's title, so an empty answer says why; JSON null
  -- says nothing.
  local refused = '/work/app: searched by words only: its index was built with model all-minilm-l6-v2-int8 (384-d) and this server embeds with all-minilm-l6-v2-code2-int8 (384-d); it is being rebuilt'
  local title = raggrep.search_title('parse a date', { results = {}, partial = true, degraded = refused })
  check('the search title says why nothing was searched',
    title == 'raggrep: parse a date (index still building) (degraded: ' .. refused .. ')', title)
  title = raggrep.search_title('parse a date', { results = {}, partial = false, degraded = vim.NIL })
  check('a null degraded adds nothing to the title', title == 'raggrep: parse a date', title)
  -- With run.sh's team index, as a user sets it up (docs/team.md): every search
  -- below also gets a team section, which must not disturb the local results.
  raggrep.setup({ method = method, settings = { logLevel = 'info', defaultK = 10, team = team_url } })
  if not team_url then
    out('  (no RAGGREP_TEST_TEAM_URL: the real team index is not searched)')
  end

  -- The `team` setting: a search answer's `team` section (built here, no database needed) is
  -- shown after the local hits, marked with each hit's repository; a team hit opens a read-only
  -- scratch buffer, also again from the quickfix list; a team error is one warning.
  local validate_settings = require('raggrep.config').validate_settings
  check('settings.team takes true or a URL, not a number', pcall(validate_settings, { team = true })
    and pcall(validate_settings, { team = 'postgres://dev@db.internal/code' }) and not pcall(validate_settings, { team = 1 }))
  check('settings.indexThreads takes a count (0: one per CPU), indexPriority low or normal',
    pcall(validate_settings, { indexThreads = 0, indexPriority = 'low' }) and pcall(validate_settings, { indexThreads = 2, indexPriority = 'normal' })
    and not pcall(validate_settings, { indexThreads = -1 }) and not pcall(validate_settings, { indexThreads = 1.5 })
    and not pcall(validate_settings, { indexPriority = 'idle' }))
  do
    local ui = require('raggrep.ui')
    local local_file = vim.fn.tempname() .. '.txt'
    vim.fn.writefile({ 'def validate_token(store, token):' }, local_file)
    local local_hit = { location = 'notes.txt:1-1', path = 'notes.txt', start_line = 1, end_line = 1, symbol = vim.NIL, kind = 'text',
      language = 'text', score = 0.9, snippet = 'def validate_token(store, token):', uri = vim.uri_from_fname(local_file) }
    local team = { source = 'postgres://dev:***@db.internal/code', took_ms = 18.5, results = { {
      location = 'src/auth/token.rs:12-30', path = 'src/auth/token.rs', start_line = 12, end_line = 30,
      symbol = 'TokenValidator::validate', kind = 'method', language = 'rust', score = 0.735,
      snippet = 'pub fn validate(&self, token: &str) -> Result<Claims> {\n    self.decode(token)\n}\n', repo = 'github.com/acme/billing@main',
    } } }
    local items = ui.search_items({ query = 'validate token', results = { local_hit }, team = team })
    check('team: its hits follow the local ones', #items == 2 and items[1].filename == local_file and items[2].repo == 'github.com/acme/billing@main', vim.inspect(items))
    local label = items[2] and ui.format_item(items[2])
    check('team: an entry names its repository', label == '[github.com/acme/billing@main] src/auth/token.rs:12  TokenValidator::validate — pub fn validate(&self, token: &str) -> Result<Claims> {', label)
    local real_select = vim.ui.select
    vim.ui.select = function(entries, _, on_choice) on_choice(entries[2]) end
    local notes_before = #notes
    ui.show({ local_hit }, { title = 'team test', kind = 'search', ui = 'select', team = team })
    vim.ui.select = real_select
    local function team_buffer_ok()
      local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
      return vim.bo.buftype == 'nofile' and not vim.bo.modifiable and vim.bo.filetype == 'rust' and #lines == 4
        and lines[1] == '// github.com/acme/billing@main · src/auth/token.rs:12-30 · TokenValidator::validate (team index, read-only; first 3 of 19 lines)'
        and lines[2] == 'pub fn validate(&self, token: &str) -> Result<Claims> {', vim.inspect(lines)
    end
    check('team: choosing a hit opens a read-only scratch buffer with a header and the snippet', team_buffer_ok())
    check('team: no warning when the team index answered', #notes == notes_before)
    ui.show({ local_hit }, { title = 'team test', kind = 'search', ui = 'quickfix', team = team })
    vim.cmd('cclose')
    vim.cmd('silent cfirst')
    vim.cmd('silent cnext')
    local first_visit = team_buffer_ok()
    vim.cmd('silent cprev')
    vim.cmd('silent cnext')
    check('team: the quickfix entry opens the hit, also a second time', first_visit and team_buffer_ok(), select(2, team_buffer_ok()))
    notes_before = #notes
    local down = { source = 'postgres://dev@db.internal/code', took_ms = 0.1, results = {},
      error = 'cannot connect to the team index at postgres://dev@db.internal/code: connection refused' }
    ui.show({ local_hit }, { title = 'team test', kind = 'search', ui = 'quickfix', team = down })
    vim.cmd('cclose')
    local warnings = vim.tbl_filter(function(m) return m:find('team index', 1, true) ~= nil end, vim.list_slice(notes, notes_before + 1))
    check('team: an unavailable team index is one warning, the local hits stay', #warnings == 1 and #vim.fn.getqflist() == 1, vim.inspect(warnings))
    vim.cmd('enew')
    os.remove(local_file)
  end

  -- Open a file: the client starts with the fixture as its root and indexes it.
  vim.cmd.edit(fixture .. '/src/auth.py')
  local attached = wait(20000, function()
    return #vim.lsp.get_clients({ name = 'raggrep', bufnr = 0 }) > 0
  end)
  check('client attaches to src/auth.py', attached, 'no client; see ' .. vim.lsp.get_log_path())
  if not attached then
    return
  end
  local client = vim.lsp.get_clients({ name = 'raggrep', bufnr = 0 })[1]
  local root = client.root_dir or client.config.root_dir
  check('client root is the fixture', root == fixture, root)

  local indexed = wait(180000, function()
    for _, u in ipairs(updates) do
      if u.stats and (u.stats.chunks or 0) > 0 then
        return true
      end
    end
  end)
  check('raggrep/indexUpdated arrives with chunks > 0', indexed, vim.inspect(updates))
  if not indexed then
    return
  end
  out(('  index: %s'):format(vim.inspect(updates[1].stats, { newline = ' ', indent = '' })))
  local began, ended = false, false
  for _, p in ipairs(progress) do
    began = began or (p.kind == 'begin' and (p.title or ''):find('raggrep: indexing', 1, true) ~= nil)
    ended = ended or p.kind == 'end'
  end
  check('$/progress shows through LspProgress (begin + end)', began and ended, vim.inspect(progress))

  -- :Raggrep {query} → quickfix list.
  local n = #shown
  vim.cmd('Raggrep check whether an API token is still valid')
  check(':Raggrep answers', wait(30000, function() return #shown > n end))
  local qf = vim.fn.getqflist({ title = 1, items = 1, winid = 1 })
  check(':Raggrep sets the quickfix title', qf.title == 'raggrep: check whether an API token is still valid', qf.title)
  check(':Raggrep opens the quickfix window', qf.winid ~= 0)
  n = #shown
  vim.cmd('Raggrep render a 3d mesh with shadows')
  check(':Raggrep about nothing here answers', wait(30000, function() return #shown > n end))
  local far = vim.fn.getqflist({ title = 1, items = 1 })
  check(':Raggrep says when there is no confident match', far.title == 'raggrep: render a 3d mesh with shadows (no confident match: closest code)' and #far.items > 0, far.title)
  vim.cmd('Raggrep check whether an API token is still valid')
  check(':Raggrep answers again', wait(30000, function() return #shown > n + 1 end))
  qf = vim.fn.getqflist({ title = 1, items = 1, winid = 1 })
  local found
  for i = 1, math.min(3, #qf.items) do
    local item = qf.items[i]
    local name = vim.api.nvim_buf_get_name(item.bufnr)
    out(('  #%d %s:%d-%d  %s'):format(i, name:sub(#fixture + 2), item.lnum, item.end_lnum, item.text))
    if name == fixture .. '/src/auth.py' and math.abs(item.lnum - 19) <= 2 and item.text:find('validate_token', 1, true) then
      found = found or i
    end
  end
  check('validate_token (src/auth.py:19) in the first 3 entries', found ~= nil, vim.inspect(qf.items[1]))
  check('entry text is "symbol — first snippet line"', found and qf.items[found].text:find('^validate_token — def validate_token') ~= nil, found and qf.items[found].text)
  vim.cmd('cclose') -- :copen focused the quickfix window

  -- The CLI's --vimgrep as Neovim's :grep program (issue 56): path:line:column:text lands in the
  -- quickfix list at the definition line and the name's column, from the same index.
  vim.o.grepprg = 'raggrep query --vimgrep -k 3'
  vim.o.grepformat = '%f:%l:%c:%m'
  vim.cmd('silent grep! "check whether an API token is still valid"')
  -- Only the hits: :grep also lists what the program wrote on stderr, as invalid entries.
  local grep = vim.tbl_filter(function(item) return item.valid == 1 end, vim.fn.getqflist())
  local first = grep[1] or {}
  local first_name = first.bufnr and vim.api.nvim_buf_get_name(first.bufnr) or ''
  check('raggrep query --vimgrep fills the quickfix list through :grep',
    #grep == 3 and first_name == fixture .. '/src/auth.py' and first.lnum == 19 and first.col == 5
      and first.text == 'def validate_token(store, token):', vim.inspect(grep[1]))

  -- settings.team against the real team index (run.sh's PostgreSQL): the local entries, then the
  -- team index's, each marked with its repository; the ledger's Balance opens as a read-only
  -- scratch buffer with its snippet.
  if team_url then
    n = #shown
    local notes_at = #notes
    vim.cmd('Raggrep sum the amounts of every posting of an account')
    check(':Raggrep with settings.team answers', wait(30000, function() return #shown > n end))
    qf = vim.fn.getqflist({ items = 1, winid = 1, qfbufnr = 1 })
    local shown_lines = qf.qfbufnr ~= 0 and vim.api.nvim_buf_get_lines(qf.qfbufnr, 0, -1, false) or {}
    local first_team, balance
    for i, item in ipairs(qf.items) do
      local is_team = item.module ~= '' and vim.startswith(item.module, '[')
      out(('  #%d %s'):format(i, shown_lines[i] or vim.inspect(item)))
      if is_team then
        first_team = first_team or i
        if item.module:find('[' .. team_repo .. '] src/ledger.go:', 1, true) == 1 and item.text:find('Balance', 1, true) then
          balance = balance or i
        end
      end
    end
    local locals_first = first_team ~= nil and first_team > 1
    for i, item in ipairs(qf.items) do
      local name = vim.api.nvim_buf_get_name(item.bufnr)
      local is_local = vim.startswith(name, fixture .. '/') and item.lnum > 0
      if (first_team and i >= first_team) == is_local then
        locals_first = false
      end
    end
    check('settings.team: the local entries first, then the team index\'s', locals_first, vim.inspect(shown_lines))
    check('settings.team: an entry "[' .. team_repo .. '] src/ledger.go:N || Balance — …" in the quickfix window',
      balance ~= nil and vim.startswith(shown_lines[balance] or '', '[' .. team_repo .. '] src/ledger.go:')
        and (shown_lines[balance] or ''):find('Balance', 1, true) ~= nil, vim.inspect(shown_lines))
    check('settings.team: the team index answered without a warning',
      #vim.tbl_filter(function(m) return m:find('team index', 1, true) ~= nil end, vim.list_slice(notes, notes_at + 1)) == 0,
      vim.inspect(vim.list_slice(notes, notes_at + 1)))
    vim.cmd('cclose')
    if balance then
      vim.cmd(('silent cc %d'):format(balance))
      local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
      local text = table.concat(lines, '\n')
      check('settings.team: :cc opens Balance in a read-only nofile buffer with its whole chunk',
        vim.api.nvim_buf_get_name(0):find('raggrep-team://' .. team_repo .. '/src/ledger.go:', 1, true) == 1
          and vim.bo.buftype == 'nofile' and not vim.bo.modifiable and vim.bo.filetype == 'go'
          and (lines[1] or ''):find(team_repo .. ' · src/ledger.go:', 1, true) ~= nil
          and text:find('func Balance(postings []Posting, account string) int64 {', 1, true) ~= nil
          and text:find('return total', 1, true) ~= nil,
        ('%s buftype=%s modifiable=%s filetype=%s\n%s'):format(vim.api.nvim_buf_get_name(0), vim.bo.buftype, vim.bo.modifiable, vim.bo.filetype, text))
      vim.cmd('enew')
    end
  end

  local function none_overlaps(items, file, first, last)
    for _, item in ipairs(items) do
      if vim.api.nvim_buf_get_name(item.bufnr) == file and item.lnum <= last and item.end_lnum >= first then
        return false, ('%s:%d-%d'):format(file, item.lnum, item.end_lnum)
      end
    end
    return true
  end

  -- :RaggrepSimilar on a range.
  vim.cmd.edit(fixture .. '/lib/unique.js')
  check('client attaches to lib/unique.js', wait(10000, function()
    return #vim.lsp.get_clients({ name = 'raggrep', bufnr = 0 }) > 0
  end))
  check('one client for the workspace', #vim.lsp.get_clients({ name = 'raggrep' }) == 1)
  n = #shown
  vim.cmd('4,14RaggrepSimilar')
  check(':4,14RaggrepSimilar answers', wait(30000, function() return #shown > n end))
  qf = vim.fn.getqflist({ title = 1, items = 1 })
  check(':RaggrepSimilar (range) has results', #qf.items > 0)
  check(':RaggrepSimilar title names the range', qf.title:find('unique.js:4-14', 1, true) ~= nil, qf.title)
  check(':RaggrepSimilar excludes the source range', none_overlaps(qf.items, fixture .. '/lib/unique.js', 4, 14))
  vim.cmd('cclose')

  -- :RaggrepSimilar without a range: the function under the cursor (sumAll, lines 16-18).
  vim.api.nvim_win_set_cursor(0, { 17, 2 })
  n = #shown
  vim.cmd('RaggrepSimilar')
  check(':RaggrepSimilar (cursor) answers', wait(30000, function() return #shown > n end))
  qf = vim.fn.getqflist({ items = 1 })
  check(':RaggrepSimilar (cursor) has results', #qf.items > 0)
  check(':RaggrepSimilar (cursor) excludes the function itself', none_overlaps(qf.items, fixture .. '/lib/unique.js', 17, 17))
  vim.cmd('cclose')

  -- The code action, through Neovim's own vim.lsp.buf.code_action.
  vim.cmd.edit(fixture .. '/src/auth.py')
  vim.api.nvim_win_set_cursor(0, { 22, 4 })
  local params = vim.lsp.util.make_range_params(0, client.offset_encoding)
  params.context = { diagnostics = {} }
  local responses = vim.lsp.buf_request_sync(0, 'textDocument/codeAction', params, 10000) or {}
  local action
  for _, response in pairs(responses) do
    for _, a in ipairs(response.result or {}) do
      if a.title == 'Find similar code' then
        action = a
      end
    end
  end
  check('"Find similar code" is offered inside validate_token', action ~= nil, vim.inspect(responses))
  local range = action and action.command and action.command.arguments[1].range
  check('the action covers validate_token (lines 19-25)', range and range.start.line == 18 and range['end'].line == 25, vim.inspect(range))
  n = #shown
  vim.fn.setqflist({}, ' ', { title = 'before the code action' })
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(a) return a.title == 'Find similar code' end,
  })
  check('code action runs the client-side raggrep.findSimilar handler', wait(30000, function() return #shown > n end))
  qf = vim.fn.getqflist({ title = 1, items = 1 })
  check('code action results in the quickfix list', #qf.items > 0 and qf.title:find('similar to src/auth.py:19-25', 1, true) ~= nil, qf.title)
  check('code action results exclude validate_token itself', none_overlaps(qf.items, fixture .. '/src/auth.py', 19, 25))
  vim.cmd('cclose')

  -- ui = 'select' (vim.ui.select, stubbed here) and a missing picker falling back to quickfix.
  local select_items, select_label
  local real_select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    select_items, select_label = items, opts.format_item(items[1])
    on_choice(items[1])
  end
  n = #shown
  raggrep.search('multiply two matrices', { ui = 'select' })
  check("ui = 'select' answers", wait(30000, function() return #shown > n end))
  vim.ui.select = real_select
  check("ui = 'select' offers matmul first", select_label and select_label:find('^lib/matrix%.c:%d+  matmul') ~= nil, select_label)
  check("ui = 'select' jumps to the choice", vim.api.nvim_buf_get_name(0) == fixture .. '/lib/matrix.c')
  n = #shown
  local notes_before = #notes
  raggrep.search('multiply two matrices', { ui = 'telescope' })
  check('a missing picker falls back to the quickfix list', wait(30000, function() return #shown > n end)
    and vim.fn.getqflist({ winid = 1 }).winid ~= 0
    and table.concat(vim.list_slice(notes, notes_before + 1), '\n'):find('not installed', 1, true) ~= nil)
  vim.cmd('cclose')

  -- vim.lsp.buf.workspace_symbol(): semantic results, unfiltered, in the quickfix list.
  vim.fn.setqflist({}, ' ', { title = 'before workspace_symbol' })
  vim.lsp.buf.workspace_symbol('multiply two matrices')
  local symbols = wait(30000, function() return vim.fn.getqflist({ title = 1 }).title ~= 'before workspace_symbol' end)
  qf = vim.fn.getqflist({ items = 1 })
  check('workspace_symbol lists matmul first', symbols and #qf.items > 0 and qf.items[1].text:find('matmul', 1, true) ~= nil, qf.items[1] and qf.items[1].text)
  vim.cmd('cclose')

  -- :RaggrepContext → scratch buffer with cited chunks.
  vim.cmd('RaggrepContext multiply two matrices')
  check(':RaggrepContext opens the context', wait(30000, function()
    return vim.api.nvim_buf_get_name(0):find('raggrep-context://', 1, true) ~= nil
  end))
  local context = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  check(':RaggrepContext cites lib/matrix.c', context:find('lib/matrix.c', 1, true) ~= nil, context:sub(1, 200))
  vim.cmd('close')

  -- :RaggrepStatus
  n = #statuses
  notes_before = #notes
  vim.cmd('RaggrepStatus')
  check(':RaggrepStatus answers', wait(10000, function() return #statuses > n end))
  local status = statuses[#statuses] or {}
  check('status has chunks > 0', (status.chunks or 0) > 0, vim.inspect(status))
  local summary = table.concat(vim.list_slice(notes, notes_before + 1), '\n')
  check(':RaggrepStatus prints a summary', summary:find('chunks', 1, true) ~= nil, summary)

  -- :RaggrepPause / :RaggrepResume: the server's answer is announced, :RaggrepStatus gives its
  -- reason while paused (and not after), and searching goes on while paused.
  local function paused_reasons(st)
    local found = {}
    for _, r in ipairs(type(st.roots) == 'table' and st.roots or { st }) do
      local reason = r.reason ~= vim.NIL and r.reason or nil
      if type(reason) == 'string' and reason:find('paused', 1, true) then
        found[#found + 1] = reason
      end
    end
    return found
  end
  local function status_now()
    local before_statuses, before_notes = #statuses, #notes
    vim.cmd('RaggrepStatus')
    local answered = wait(10000, function() return #statuses > before_statuses end)
    return answered and statuses[#statuses] or {}, table.concat(vim.list_slice(notes, before_notes + 1), '\n'), answered
  end
  local pause_events = {}
  vim.api.nvim_create_autocmd('User', {
    pattern = 'RaggrepPaused',
    callback = function(ev) pause_events[#pause_events + 1] = ev.data end,
  })
  notes_before = #notes
  vim.cmd('RaggrepPause')
  check(':RaggrepPause notifies "raggrep: indexing paused"', wait(10000, function()
    return vim.tbl_contains(vim.list_slice(notes, notes_before + 1), 'raggrep: indexing paused')
  end), vim.inspect(vim.list_slice(notes, notes_before + 1)))
  check(':RaggrepPause fires User RaggrepPaused with paused = true', pause_events[1] ~= nil and pause_events[1].paused == true
    and pause_events[1].client_id == client.id, vim.inspect(pause_events))
  local paused_status, paused_summary, paused_answered = status_now()
  check('while paused, the status reason says "indexing is paused"', paused_answered and #paused_reasons(paused_status) > 0
    and paused_reasons(paused_status)[1]:find('^indexing is paused') ~= nil, vim.inspect(paused_status))
  check('while paused, :RaggrepStatus prints it', paused_summary:find('indexing is paused', 1, true) ~= nil, paused_summary)
  n = #shown
  vim.cmd('Raggrep check whether an API token is still valid')
  check(':Raggrep still answers while paused', wait(30000, function() return #shown > n end)
    and #(shown[#shown].items or {}) > 0, vim.inspect(shown[#shown] and shown[#shown].title))
  vim.cmd('cclose')
  notes_before = #notes
  vim.cmd('RaggrepResume')
  check(':RaggrepResume notifies "raggrep: indexing resumed"', wait(10000, function()
    return vim.tbl_contains(vim.list_slice(notes, notes_before + 1), 'raggrep: indexing resumed')
  end), vim.inspect(vim.list_slice(notes, notes_before + 1)))
  check(':RaggrepResume fires User RaggrepPaused with paused = false', pause_events[2] ~= nil and pause_events[2].paused == false, vim.inspect(pause_events))
  local resumed_status, resumed_summary, resumed_answered = status_now()
  check('after :RaggrepResume the status no longer says paused', resumed_answered and #paused_reasons(resumed_status) == 0
    and not resumed_summary:find('paused', 1, true) and (resumed_status.chunks or 0) > 0, vim.inspect(resumed_status) .. '\n' .. resumed_summary)

  -- :RaggrepToggle! turns indexing of the workspace off (the status says so), :RaggrepToggle
  -- turns it back on.
  local function said_since(before, text)
    return table.concat(vim.list_slice(notes, before + 1), '\n'):find(text, 1, true) ~= nil
  end
  notes_before = #notes
  vim.cmd('RaggrepToggle!')
  check(':RaggrepToggle! says indexing is off', wait(10000, function() return said_since(notes_before, ': indexing off') end),
    vim.inspect(vim.list_slice(notes, notes_before + 1)))
  local _, off_summary = status_now()
  check('while off, :RaggrepStatus says indexing is turned off', off_summary:find('turned off', 1, true) ~= nil, off_summary)
  notes_before = #notes
  vim.cmd('RaggrepToggle')
  check(':RaggrepToggle turns it back on', wait(10000, function() return said_since(notes_before, ': indexing on') end),
    vim.inspect(vim.list_slice(notes, notes_before + 1)))

  -- :RaggrepReindex
  notes_before = #notes
  vim.cmd('RaggrepReindex')
  check(':RaggrepReindex queues the workspace', wait(10000, function()
    return table.concat(vim.list_slice(notes, notes_before + 1), '\n'):find('reindexing 1', 1, true) ~= nil
  end))

  -- The "Show history of this code" code action runs the client-side handler: the same list.
  vim.cmd.edit(fixture .. '/src/auth.py')
  vim.api.nvim_win_set_cursor(0, { 22, 4 })
  vim.fn.setqflist({}, ' ', { title = 'before' })
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(a) return a.title == 'Show history of this code' end,
  })
  check('the history code action fills the quickfix list', wait(60000, function()
    return vim.fn.getqflist({ title = 1 }).title:find('src/auth.py:22', 1, true) ~= nil
  end), vim.fn.getqflist({ title = 1 }).title)
  vim.cmd('cclose')

  -- :RaggrepHistory: the commits that changed the function under the cursor (validate_token:
  -- run.sh's second commit), then the commits a question describes.
  vim.cmd.edit(fixture .. '/src/auth.py')
  vim.api.nvim_win_set_cursor(0, { 21, 4 })
  vim.fn.setqflist({}, ' ', { title = 'before' })
  vim.cmd('RaggrepHistory')
  check(':RaggrepHistory answers', wait(60000, function()
    return vim.fn.getqflist({ title = 1 }).title:find('^raggrep history: ') ~= nil
  end), vim.fn.getqflist({ title = 1 }).title)
  qf = vim.fn.getqflist({ title = 1, items = 1 })
  check(':RaggrepHistory lists the one commit that changed validate_token', #qf.items == 1
    and qf.items[1].text:find('Say that a token must not have expired', 1, true) ~= nil, vim.inspect(qf))
  check(':RaggrepHistory titles the list with the file and line', qf.title:find('src/auth.py:21', 1, true) ~= nil, qf.title)
  vim.cmd('cclose')
  if #qf.items == 1 then
    vim.cmd('silent cc 1')
    local diff = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    check(':cc opens what the commit changed in src/auth.py, read-only, as a diff',
      vim.api.nvim_buf_get_name(0):find('^raggrep%-commit://') ~= nil and vim.bo.filetype == 'diff' and not vim.bo.modifiable
        and diff:find('+    """Check that an API token exists and has not expired."""', 1, true) ~= nil
        and diff:find('diff --git a/src/auth.py b/src/auth.py', 1, true) ~= nil,
      vim.api.nvim_buf_get_name(0) .. '\n' .. diff)
    vim.cmd('enew')
  end
  vim.fn.setqflist({}, ' ', { title = 'before' })
  vim.cmd('RaggrepHistory adding the fixture')
  check(':RaggrepHistory QUESTION answers', wait(60000, function()
    return vim.fn.getqflist({ title = 1 }).title == 'raggrep history: adding the fixture'
  end), vim.fn.getqflist({ title = 1 }).title)
  qf = vim.fn.getqflist({ items = 1 })
  check(':RaggrepHistory QUESTION puts the commit it describes first', #qf.items == 2
    and qf.items[1].text:find('Add the fixture', 1, true) ~= nil, vim.inspect(qf.items))
  vim.cmd('cclose')

  -- :checkhealth raggrep
  local ok_health, err_health = pcall(vim.cmd, 'checkhealth raggrep')
  io.stdout:write('\n') -- after nvim's own "Running healthchecks..."
  check(':checkhealth raggrep runs', ok_health, err_health)
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  if vim.env.RAGGREP_TEST_VERBOSE then
    out(report)
  end
  local exe = vim.fn.exepath('raggrep')
  check('checkhealth names the binary and its version', report:find(exe, 1, true) ~= nil and report:find('raggrep %d+%.%d+') ~= nil, report)
  check('checkhealth finds the model assets', report:find('model: ', 1, true) ~= nil and report:find('ONNX Runtime: ', 1, true) ~= nil, report)
  check('checkhealth sees the running client', report:find('client %d+ attached') ~= nil and report:find('chunks') ~= nil, report)
  check('checkhealth reports no errors', report:find('ERROR') == nil, report)

  -- The same server binary inside a release bundle, with an empty cache: the assets are the
  -- bundle's, as the server finds them.
  if vim.env.RAGGREP_TEST_BUNDLE then
    local options = require('raggrep.config').options
    local saved_cmd, saved_env = options.cmd, options.cmd_env
    local bundle = vim.env.RAGGREP_TEST_BUNDLE
    options.cmd = { vim.fs.joinpath(bundle, 'bin', 'raggrep'), 'lsp' }
    options.cmd_env = { RAGGREP_HOME = vim.env.RAGGREP_TEST_EMPTY_CACHE }
    pcall(vim.cmd, 'checkhealth raggrep')
    io.stdout:write('\n')
    local bundled = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n')
    options.cmd, options.cmd_env = saved_cmd, saved_env
    check('checkhealth finds a release bundle\'s model and runtime (empty cache)',
      bundled:find('release bundle: ' .. bundle, 1, true) ~= nil
        and bundled:find('model: ' .. bundle .. '/share/raggrep/models/', 1, true) ~= nil
        and bundled:find('ONNX Runtime: ' .. bundle .. '/share/raggrep/runtime/', 1, true) ~= nil,
      bundled)
    check('checkhealth with the bundle reports no errors', bundled:find('ERROR') == nil, bundled)
  end
end, debug.traceback)
check('test script ran without a Lua error', ok_run, err_run)

-- Stop the server cleanly.
for _, client in ipairs(vim.lsp.get_clients({ name = 'raggrep' })) do
  if vim.fn.has('nvim-0.11') == 1 then
    client:stop()
  else
    client.stop()
  end
end
check('server exits on shutdown', wait(15000, function() return #vim.lsp.get_clients({ name = 'raggrep' }) == 0 end))

H.finish(method, results_file)
