-- vim.lsp.Config for Neovim 0.11+: `vim.lsp.enable('raggrep')` works with this alone;
-- require('raggrep').setup{...} overrides it with your options (and enables it).
---@type vim.lsp.Config
return require('raggrep.config').lsp_config()
