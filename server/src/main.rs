//! `ferry`: the command line; everything it does lives in the library.

ferry_server::global_allocator!();

fn main() -> std::process::ExitCode {
    ferry_server::cli::main()
}
