fn main() -> std::process::ExitCode {
    loopx_cli::main()
}
