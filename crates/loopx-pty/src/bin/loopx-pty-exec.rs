//! The resource-limit helper for this crate's tests; the `loopx` binary wires the same
//! function as the hidden `loopx __exec` subcommand.

fn main() {
    let Err(err) = loopx_pty::exec_with_limits(std::env::args_os().skip(1));
    eprintln!("loopx-pty-exec: {err}");
    // 127 is how a failed exec is reported, so the slice classifies it as a spawn failure.
    std::process::exit(127);
}
