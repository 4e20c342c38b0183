//! `ferry`: the command line; everything it does lives in the library.

fn main() -> std::process::ExitCode {
    ferry_server::cli::main()
}
