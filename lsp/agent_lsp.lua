--- The agent-lsp daemon as a Neovim 0.11+ LSP config: `vim.lsp.enable("agent_lsp")` starts it
--- for every file buffer (`agent-lsp --stdio` from PATH, root at the nearest `.git`), with the
--- plugin's handlers (events into the chat, tool approvals, saving) and its capabilities.
--- Change it with `vim.lsp.config("agent_lsp", { cmd = …, cmd_env = …, init_options = … })` or
--- `after/lsp/agent_lsp.lua`; the plugin's own options (chat, approval, …) take setup(), whose
--- config this file then returns too (see `:help agent_lsp-install`).
return require("agent_lsp").runtime_config()
