-- Server results → Neovim UI (quickfix list, vim.ui.select, optional pickers).
local M = {}

--- vim.notify with the plugin's prefix and title.
function M.notify(msg, level)
  vim.notify('raggrep: ' .. msg, level or vim.log.levels.INFO, { title = 'raggrep' })
end

--- JSON null (vim.NIL) as nil.
function M.value(v)
  if v == vim.NIL then
    return nil
  end
  return v
end

local notify, value = M.notify, M.value

local function first_line(snippet)
  for line in (value(snippet) or ''):gmatch('[^\n]+') do
    local trimmed = vim.trim(line)
    if trimmed ~= '' then
      return trimmed
    end
  end
  return ''
end

--- Absolute file name of a result.
function M.filename(result)
  if type(result.uri) == 'string' then
    return vim.uri_to_fname(result.uri)
  end
  if type(result.root) == 'string' and type(result.path) == 'string' then
    return vim.fs.joinpath(result.root, result.path)
  end
  return result.path
end

-- Team index hits (the `team` setting): hits of other repositories, each with its `repo`
-- (`remote@branch`) and without `uri`: the file is not on this machine. Such an entry names a
-- `raggrep-team://<repo>/<path>:<start>-<end>` buffer, which a BufReadCmd autocmd fills with a
-- header line and the hit's snippet, read-only. The quickfix list, `vim.ui.select` and the
-- pickers' quickfix views all open it like a file.

--- The snippet and filetype of each team buffer, by buffer name (kept for the session, so
--- that the entries of older quickfix lists still open).
M.team_buffers = {}

--- raggrep's languages (server `Language`) → filetypes.
local team_filetypes = {
  rust = 'rust', python = 'python', javascript = 'javascript', typescript = 'typescript',
  tsx = 'typescriptreact', go = 'go', java = 'java', c = 'c', cpp = 'cpp', markdown = 'markdown',
  ruby = 'ruby', php = 'php', csharp = 'cs', kotlin = 'kotlin', swift = 'swift', scala = 'scala',
  elixir = 'elixir', lua = 'lua', bash = 'sh', zig = 'zig', haskell = 'haskell', yaml = 'yaml',
  toml = 'toml', json = 'jsonc', dart = 'dart', objc = 'objc', ocaml = 'ocaml', r = 'r', julia = 'julia',
}

--- A line comment's opening in each language that does not use `//`.
local comment_leaders = {
  python = '#', ruby = '#', elixir = '#', bash = '#', yaml = '#', toml = '#', r = '#', julia = '#',
  lua = '--', haskell = '--',
}

--- Whether a result is a team index hit (a repository, and no file of this machine).
function M.is_team_hit(r)
  local repo = value(r.repo)
  return type(repo) == 'string' and repo ~= '' and type(value(r.uri)) ~= 'string'
end

local function comment(language, text)
  if comment_leaders[language] then
    return comment_leaders[language] .. ' ' .. text
  elseif language == 'markdown' then
    return '<!-- ' .. text .. ' -->'
  elseif language == 'ocaml' then
    return '(* ' .. text .. ' *)'
  elseif team_filetypes[language] then
    return '// ' .. text
  end
  return text
end

--- The lines of a team hit's buffer: a header comment with the repository, `path:start-end`
--- and symbol, then the chunk's text (`text`; from an older server, the snippet: its first lines).
function M.team_lines(r)
  local first, last = r.start_line or 0, r.end_line or r.start_line or 0
  local snippet = (value(r.text) or value(r.snippet) or ''):gsub('\n+$', '')
  local lines = snippet ~= '' and vim.split(snippet, '\n', { plain = true }) or {}
  local parts = { value(r.repo), ('%s:%d-%d'):format(r.path, first, last) }
  if value(r.symbol) then
    parts[#parts + 1] = value(r.symbol)
  end
  local note = 'team index, read-only'
  if #lines < last - first + 1 then
    note = ('%s; first %d of %d lines'):format(note, #lines, last - first + 1)
  end
  table.insert(lines, 1, comment(value(r.language), ('%s (%s)'):format(table.concat(parts, ' · '), note)))
  return lines
end

--- The filetype of a team hit's buffer: from its language, else from its file name.
function M.team_filetype(r)
  local ft = team_filetypes[value(r.language)]
  if ft then
    return ft
  end
  local ok, match = pcall(vim.filetype.match, { filename = r.path })
  return ok and match or ''
end

local scratch_schemes = {}

--- Buffers named `SCHEME://…` that `fill(name)` fills when opened (returning their lines and
--- filetype): read-only, no file behind them. Defined once per scheme.
function M.scratch_buffers(scheme, fill)
  if scratch_schemes[scheme] then
    return
  end
  scratch_schemes[scheme] = true
  vim.api.nvim_create_autocmd('BufReadCmd', {
    group = vim.api.nvim_create_augroup('raggrep_' .. scheme:gsub('%W', '_'), { clear = true }),
    pattern = scheme .. '://*',
    callback = function(ev)
      local lines, filetype = fill(ev.match)
      local bo = vim.bo[ev.buf]
      bo.buftype = 'nofile'
      -- Unloaded, not wiped, when hidden: a quickfix entry keeps the buffer's number, and a
      -- wiped buffer would make the next jump to it fail (E92); this autocmd refills it.
      bo.bufhidden = 'delete'
      bo.swapfile = false
      bo.modifiable = true
      vim.api.nvim_buf_set_lines(ev.buf, 0, -1, false, lines)
      bo.modifiable = false
      bo.modified = false
      bo.filetype = filetype
    end,
  })
end

local function define_team_buffers()
  M.scratch_buffers('raggrep-team', function(name)
    local entry = M.team_buffers[name]
      or { lines = { 'This team index result is no longer in memory: run :Raggrep again.' }, filetype = '' }
    return entry.lines, entry.filetype
  end)
end

--- A team hit as an entry: `[repo] path:line` (the quickfix `module`, shown instead of the
--- buffer name) and `symbol — first snippet line`; it opens the hit's read-only buffer.
function M.team_item(r)
  define_team_buffers()
  local repo = value(r.repo)
  local first, last = r.start_line or 0, r.end_line or r.start_line or 0
  local name = ('raggrep-team://%s/%s:%d-%d'):format(repo, r.path, first, last)
  M.team_buffers[name] = { lines = M.team_lines(r), filetype = M.team_filetype(r) }
  local text = first_line(r.snippet)
  local symbol = value(r.symbol)
  if symbol then
    text = text ~= '' and (symbol .. ' — ' .. text) or symbol
  end
  return {
    filename = name,
    module = ('[%s] %s:%d'):format(repo, r.path, first),
    -- No line: the buffer is the hit (its line 1 is the header); valid, so :cnext visits it.
    lnum = 0,
    valid = 1,
    text = text,
    repo = repo,
  }
end

--- Quickfix items for results: `path:line` with `symbol — first snippet line`; team index hits
--- (with `repo`, no `uri`) as `team_item`s.
function M.to_items(results)
  local items = {}
  for _, r in ipairs(value(results) or {}) do
    if M.is_team_hit(r) then
      items[#items + 1] = M.team_item(r)
    else
      local text = first_line(r.snippet)
      local symbol = value(r.symbol)
      if symbol then
        text = text ~= '' and (symbol .. ' — ' .. text) or symbol
      end
      items[#items + 1] = {
        filename = M.filename(r),
        lnum = r.start_line,
        end_lnum = r.end_line,
        col = 1,
        text = text,
      }
    end
  end
  return items
end

--- The warning for a search answer's `team` section that could not answer, or nil.
function M.team_error(team)
  team = value(team)
  local err = type(team) == 'table' and value(team.error) or nil
  if type(err) ~= 'string' or err == '' then
    return nil
  end
  local source = value(team.source)
  if type(source) ~= 'string' or source == '' or err:find(source, 1, true) then
    return 'the team index did not answer: ' .. err
  end
  return ('the team index %s did not answer: %s'):format(source, err)
end

--- Entries of a `raggrep.search` answer: its hits, then its `team` section's (the `team` setting).
function M.search_items(result)
  local items = M.to_items(result.results)
  local team = value(result.team)
  if type(team) == 'table' then
    vim.list_extend(items, M.to_items(team.results))
  end
  return items
end

--- How vim.ui.select shows an entry: `path:line  text`, `[repo] path:line  text` for a team hit.
function M.format_item(item)
  if item.repo then
    return ('%s  %s'):format(item.module, item.text)
  end
  return ('%s:%d  %s'):format(vim.fn.fnamemodify(item.filename, ':~:.'), item.lnum, item.text)
end

function M.jump(item)
  vim.cmd.edit(vim.fn.fnameescape(item.filename))
  if not item.repo then
    pcall(vim.api.nvim_win_set_cursor, 0, { item.lnum, 0 })
  end
end

local pickers = {
  telescope = function()
    local ok, builtin = pcall(require, 'telescope.builtin')
    return ok and function() builtin.quickfix() end
  end,
  ['fzf-lua'] = function()
    local ok, fzf = pcall(require, 'fzf-lua')
    return ok and function() fzf.quickfix() end
  end,
  snacks = function()
    local ok, snacks = pcall(require, 'snacks')
    return ok and snacks.picker and function() snacks.picker.qflist() end
  end,
}

--- Shows results. opts: title, kind ('search'|'similar'), ui (default: setup's `ui`), team (a
--- search answer's `team` section: its hits follow the others, its error is a warning).
--- Fires `User RaggrepResults` with { kind, title, results, items } afterwards.
function M.show(results, opts)
  opts = opts or {}
  local ui = opts.ui or require('raggrep.config').options.ui
  local title = opts.title or 'raggrep'
  local items = M.search_items({ results = results, team = opts.team })
  local team_error = M.team_error(opts.team)
  if team_error then
    notify(team_error, vim.log.levels.WARN)
  end
  if #items == 0 then
    notify(('no results (%s)'):format(title), vim.log.levels.WARN)
  elseif ui == 'select' then
    vim.ui.select(items, {
      prompt = title,
      format_item = M.format_item,
    }, function(item)
      if item then
        M.jump(item)
      end
    end)
  else
    vim.fn.setqflist({}, ' ', { title = title, items = items })
    local open = pickers[ui] and pickers[ui]()
    if open then
      open()
    else
      if pickers[ui] then
        notify(('%s is not installed; showing the quickfix list'):format(ui), vim.log.levels.WARN)
      end
      vim.cmd('botright copen')
    end
  end
  vim.api.nvim_exec_autocmds('User', {
    pattern = 'RaggrepResults',
    modeline = false,
    data = { kind = opts.kind, title = title, results = results, items = items },
  })
end

--- Shows `raggrep.context` output in a scratch markdown buffer.
function M.show_context(result, query)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = 'wipe'
  vim.bo[buf].filetype = 'markdown'
  local lines = vim.split(value(result.text) or '', '\n', { plain = true })
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.cmd('botright split')
  vim.api.nvim_win_set_buf(0, buf)
  pcall(vim.api.nvim_buf_set_name, buf, ('raggrep-context://%s'):format(query))
  notify(('%d tokens from %d sources'):format(result.tokens or 0, #(result.sources or {})))
end

return M
