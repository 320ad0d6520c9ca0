//! `loopx-model-server --script FILE [--port N] [--port-file PATH] [--requests-log PATH]`.

fn main() -> std::process::ExitCode {
    loopx_model_server::cli::main(std::env::args_os().skip(1))
}
