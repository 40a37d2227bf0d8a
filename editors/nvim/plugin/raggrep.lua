-- Defines the :Raggrep* commands. Starting the server is left to require('raggrep').setup()
-- (or, on Neovim 0.11+, vim.lsp.enable('raggrep') with lsp/raggrep.lua).
if vim.g.loaded_raggrep then
  return
end
vim.g.loaded_raggrep = true
if vim.fn.has('nvim-0.10') == 0 then
  return
end
require('raggrep').create_commands()
