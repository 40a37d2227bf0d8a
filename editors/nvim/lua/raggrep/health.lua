-- :checkhealth raggrep
local M = {}

local health = vim.health
local BUNDLE = "the release bundle: unpack raggrep-<version>-linux-x64.tar.gz and call setup{ bundle = '/path/to/raggrep-<version>-linux-x64' } (or put its bin/ on PATH)"
local DEFAULT_MODEL = 'all-minilm-l6-v2-code2-int8'

--- An environment variable as the server will see it (cmd_env first), nil when empty.
local function env(name)
  local cmd_env = require('raggrep.config').options.cmd_env or {}
  local v = cmd_env[name] or vim.env[name]
  if v == nil or v == '' then
    return nil
  end
  return tostring(v)
end

--- The server's asset cache: $RAGGREP_HOME, else $XDG_CACHE_HOME/raggrep, else ~/.cache/raggrep.
local function cache_dir()
  if env('RAGGREP_HOME') then
    return env('RAGGREP_HOME')
  end
  if env('XDG_CACHE_HOME') then
    return vim.fs.joinpath(env('XDG_CACHE_HOME'), 'raggrep')
  end
  return vim.fs.joinpath(env('HOME') or vim.fn.expand('~'), '.cache', 'raggrep')
end

--- share/raggrep of a release bundle beside the server binary's bin/ (the server looks there
--- before the cache), nil when the binary is not in a bundle.
local function bundle_dir()
  local exe = vim.fn.exepath(require('raggrep.config').options.cmd[1])
  if exe == '' then
    return nil
  end
  local real = vim.uv.fs_realpath(exe) or exe
  local share = vim.fs.joinpath(vim.fs.dirname(vim.fs.dirname(real)), 'share', 'raggrep')
  if vim.fn.isdirectory(share) == 1 then
    return share
  end
  return nil
end

--- `parts` under the bundle when it has them, else under the cache (as the server decides).
local function shipped_or_cached(cache, ...)
  local bundle = bundle_dir()
  if bundle then
    local shipped = vim.fs.joinpath(bundle, ...)
    if vim.uv.fs_stat(shipped) then
      return shipped
    end
  end
  return vim.fs.joinpath(cache, ...)
end

--- How to get the model and runtime: where the server already runs from a bundle, that bundle
--- is incomplete; otherwise a bundle or the cache has to provide them.
local function asset_fix()
  local bundle = bundle_dir()
  if bundle then
    return { 'unpack the release tarball again: ' .. bundle .. ' is incomplete', 'or run `bash scripts/bootstrap.sh` from a raggrep checkout (fills the cache)' }
  end
  return { 'use ' .. BUNDLE, 'or run `bash scripts/bootstrap.sh` from a raggrep checkout (fills the cache)' }
end

local function is_file(path)
  return vim.fn.filereadable(path) == 1
end

local function check_nvim()
  health.start('raggrep: Neovim')
  local v = vim.version()
  local version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.10') == 0 then
    health.error('Neovim ' .. version .. ' is too old', 'raggrep needs Neovim 0.10 or newer')
    return
  end
  local options = require('raggrep.config').options
  local method = options.method
  if method == 'auto' then
    method = require('raggrep.config').has_011 and 'enable' or 'start'
  end
  health.ok(('Neovim %s; client started with %s'):format(
    version,
    method == 'enable' and 'vim.lsp.config + vim.lsp.enable' or 'a FileType autocmd + vim.lsp.start'
  ))
end

local function check_binary()
  health.start('raggrep: server binary')
  local config = require('raggrep.config')
  local cmd, origin = config.options.cmd, config.cmd_origin
  local from = ({
    cmd = 'setup{ cmd }',
    bundle = 'setup{ bundle = ' .. tostring(config.options.bundle) .. ' }',
    plugin = 'the release bundle this plugin is in, ' .. tostring(config.plugin_bundle),
    path = 'PATH',
  })[origin]
  local exe = vim.fn.exepath(cmd[1])
  if exe == '' then
    local fix = ({
      cmd = 'correct setup{ cmd }, or leave it out to use the release bundle or PATH',
      bundle = 'unpack the release tarball again there, or correct setup{ bundle }',
      plugin = 'unpack the release tarball again (its bin/raggrep is gone)',
    })[origin] or {
      'use ' .. BUNDLE,
      "or build it (cargo build --release in the raggrep checkout) and put target/release on PATH or in setup{ cmd = { '/path/to/raggrep', 'lsp' } }",
    }
    if origin == 'path' and config.plugin_bundle then
      -- The plugin came in a bundle without a server: PATH was only the fallback.
      fix = { 'unpack the release tarball again: ' .. config.plugin_bundle .. ' has no executable bin/raggrep' }
    end
    health.error(('`%s` not found (not executable or not on PATH; from %s)'):format(cmd[1], from), fix)
    return
  end
  local ok, result = pcall(function()
    return vim.system({ exe, '--version' }, { text = true, env = require('raggrep.config').options.cmd_env }):wait(10000)
  end)
  if not ok or result.code ~= 0 then
    health.error(('`%s --version` failed: %s'):format(exe, ok and (result.stderr or ('exit ' .. tostring(result.code))) or tostring(result)))
    return
  end
  health.ok(('%s: %s'):format(exe, vim.trim(result.stdout or '')))
  health.info(('command: %s (from %s)'):format(table.concat(cmd, ' '), from))
end

local function check_assets()
  health.start('raggrep: model assets')
  local cache = cache_dir()
  health.info('cache: ' .. cache .. (env('RAGGREP_HOME') and ' ($RAGGREP_HOME)' or ''))
  local settings = require('raggrep.config').options.settings or {}
  local spec = settings.modelDir or env('RAGGREP_MODEL_DIR')
  local model_dir
  if spec and (spec:find('/', 1, true) or vim.fn.isdirectory(spec) == 1) then
    model_dir = vim.fn.expand(spec)
  else
    model_dir = shipped_or_cached(cache, 'models', spec or DEFAULT_MODEL)
  end
  if bundle_dir() then
    health.info('release bundle: ' .. bundle_dir())
  end
  local missing = {}
  for _, file in ipairs({ 'model.onnx', 'tokenizer.json' }) do
    if not is_file(vim.fs.joinpath(model_dir, file)) then
      missing[#missing + 1] = file
    end
  end
  if vim.fn.isdirectory(model_dir) == 0 then
    health.error('model directory not found: ' .. model_dir, vim.list_extend(asset_fix(), { 'or set settings.modelDir / RAGGREP_MODEL_DIR' }))
  elseif #missing > 0 then
    health.error(('model directory %s has no %s'):format(model_dir, table.concat(missing, ', ')), asset_fix())
  else
    health.ok('model: ' .. model_dir)
  end
  local ort = env('ORT_DYLIB_PATH')
  if not ort then
    local runtime = shipped_or_cached(cache, 'runtime')
    local found = vim.fn.glob(vim.fs.joinpath(runtime, 'onnxruntime-*', 'libonnxruntime.so*'), true, true)
    ort = found[1] or vim.fs.joinpath(runtime, 'onnxruntime-*', 'libonnxruntime.so.*')
  end
  if is_file(ort) then
    health.ok('ONNX Runtime: ' .. ort)
  else
    health.error('ONNX Runtime library not found: ' .. ort, vim.list_extend(asset_fix(), { 'or set ORT_DYLIB_PATH' }))
  end
end

local function check_clients()
  health.start('raggrep: language server')
  local raggrep = require('raggrep')
  local clients = vim.lsp.get_clients({ name = 'raggrep' })
  if #clients == 0 then
    health.warn('no raggrep client is running', {
      'call require("raggrep").setup() and open a file of a project (a folder with .git, Cargo.toml, go.mod, …)',
      'start errors are in the LSP log: ' .. vim.lsp.get_log_path(),
    })
    return
  end
  for _, client in ipairs(clients) do
    local buffers = vim.tbl_keys(client.attached_buffers or {})
    health.ok(('client %d attached to %d buffer(s), root %s'):format(
      client.id,
      #buffers,
      tostring(client.root_dir or (client.config and client.config.root_dir))
    ))
    local response
    if require('raggrep.config').has_011 then
      response = client:request_sync('workspace/executeCommand', { command = 'raggrep.status', arguments = {} }, 5000)
    else
      response = client.request_sync('workspace/executeCommand', { command = 'raggrep.status', arguments = {} }, 5000)
    end
    if response and response.result then
      for _, line in ipairs(vim.split(raggrep.format_status(response.result), '\n')) do
        health.info('index ' .. line)
      end
    elseif response and response.err and response.err.message then
      -- The server's own line: the cause and what to do (a missing model names where it looked).
      health.error(response.err.message)
    else
      health.warn('raggrep.status did not answer: ' .. vim.inspect(response and response.err or 'timeout'))
    end
  end
end

function M.check()
  check_nvim()
  check_binary()
  check_assets()
  check_clients()
end

return M
