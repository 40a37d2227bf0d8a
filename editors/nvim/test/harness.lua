-- What every Lua test of the Neovim client shares: `ok` / `FAIL` lines on stdout, and at the
-- end the tally, "<passed> <failed>" in the results file run.sh / install.sh read, and the exit
-- code. Loaded with dofile() by test.lua, options.lua and install.lua.
local H = { passed = 0, failed = 0 }

function H.out(line)
  io.stdout:write(line .. '\n')
  io.stdout:flush()
end

function H.check(name, ok, detail)
  if ok then
    H.passed = H.passed + 1
    H.out('ok   ' .. name)
  else
    H.failed = H.failed + 1
    H.out('FAIL ' .. name .. (detail and (': ' .. tostring(detail)) or ''))
  end
  return ok
end

--- Prints "<label>: N passed, M failed" (after the LSP log's path when something failed), writes
--- the counts to `results_file` (when given) and quits, with status 1 if a check failed.
function H.finish(label, results_file)
  if H.failed > 0 then
    H.out('lsp log: ' .. vim.lsp.get_log_path())
  end
  H.out(('%s: %d passed, %d failed'):format(label, H.passed, H.failed))
  if results_file then
    local f = assert(io.open(results_file, 'w'))
    f:write(('%d %d\n'):format(H.passed, H.failed))
    f:close()
  end
  vim.cmd(H.failed == 0 and 'qall!' or 'cquit 1')
end

return H
