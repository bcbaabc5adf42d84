//! The `agent-lsp` binary: everything lives in the library; see `agent_lsp::cli`.

fn main() -> std::process::ExitCode {
    // The sandbox launcher is this binary: dispatched before anything else starts (no runtime,
    // no threads), as it forks and changes its namespaces.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|a| a == agent_lsp::sandbox::jail::SUBCOMMAND)
    {
        agent_lsp::sandbox::jail::main(&args[2..])
    }
    agent_lsp::sandbox::launch::use_launcher("/proc/self/exe");
    agent_lsp::cli::main()
}
