use std::process::ExitCode;

fn main() -> ExitCode {
    tick::run(std::env::args_os())
}
