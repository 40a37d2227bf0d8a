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

--- Quickfix items for results: `path:line` with `symbol — first snippet line`.
function M.to_items(results)
  local items = {}
  for _, r in ipairs(results or {}) do
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
  return items
end

function M.jump(item)
  vim.cmd.edit(vim.fn.fnameescape(item.filename))
  pcall(vim.api.nvim_win_set_cursor, 0, { item.lnum, 0 })
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

--- Shows results. opts: title, kind ('search'|'similar'), ui (default: setup's `ui`).
--- Fires `User RaggrepResults` with { kind, title, results, items } afterwards.
function M.show(results, opts)
  opts = opts or {}
  local ui = opts.ui or require('raggrep.config').options.ui
  local title = opts.title or 'raggrep'
  local items = M.to_items(results)
  if #items == 0 then
    notify(('no results (%s)'):format(title), vim.log.levels.WARN)
  elseif ui == 'select' then
    vim.ui.select(items, {
      prompt = title,
      format_item = function(item)
        return ('%s:%d  %s'):format(vim.fn.fnamemodify(item.filename, ':~:.'), item.lnum, item.text)
      end,
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
