//! `ferry-load`: see `ferry-load --help`.

fn main() -> std::process::ExitCode {
    ferry_loadtest::cli::main()
}
