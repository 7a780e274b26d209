//! `svc`: see the library (`svc_cli`) for the commands and README.md for usage.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(svc_cli::run(std::env::args_os()))
}
