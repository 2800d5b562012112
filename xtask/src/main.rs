use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = xtask::Cli::parse();
    match xtask::run(cli, &mut std::io::stdout(), xtask::use_color()) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            xtask::exit_code(&error)
        }
    }
}
