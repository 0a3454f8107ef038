#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    roce_sniff::main_with_args(std::env::args_os())
}
